"""evaluate-compatible module: `evaluate.load(srnets_lib.metrics.metric_path("matthews_corrcoef"))`."""

from srnets_lib.metrics import evaluate_module

MatthewsCorrcoef = evaluate_module("matthews_corrcoef")
