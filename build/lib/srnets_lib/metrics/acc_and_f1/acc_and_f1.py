"""evaluate-compatible module: `evaluate.load(srnets_lib.metrics.metric_path("acc_and_f1"))`."""

from srnets_lib.metrics import evaluate_module

AccAndF1 = evaluate_module("acc_and_f1")
