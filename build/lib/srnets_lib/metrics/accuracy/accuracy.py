"""evaluate-compatible module: `evaluate.load(srnets_lib.metrics.metric_path("accuracy"))`."""

from srnets_lib.metrics import evaluate_module

Accuracy = evaluate_module("accuracy")
