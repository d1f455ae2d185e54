"""evaluate-compatible module: `evaluate.load(srnets_lib.metrics.metric_path("weighted_f1"))`."""

from srnets_lib.metrics import evaluate_module

WeightedF1 = evaluate_module("weighted_f1")
