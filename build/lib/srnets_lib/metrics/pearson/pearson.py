"""evaluate-compatible module: `evaluate.load(srnets_lib.metrics.metric_path("pearson"))`."""

from srnets_lib.metrics import evaluate_module

Pearson = evaluate_module("pearson")
