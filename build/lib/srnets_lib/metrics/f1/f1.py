"""evaluate-compatible module: `evaluate.load(srnets_lib.metrics.metric_path("f1"))`."""

from srnets_lib.metrics import evaluate_module

F1 = evaluate_module("f1")
