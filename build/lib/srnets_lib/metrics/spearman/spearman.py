"""evaluate-compatible module: `evaluate.load(srnets_lib.metrics.metric_path("spearman"))`."""

from srnets_lib.metrics import evaluate_module

Spearman = evaluate_module("spearman")
