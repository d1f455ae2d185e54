"""evaluate-compatible module: `evaluate.load(srnets_lib.metrics.metric_path("max_acc_acc_and_f1"))`."""

from srnets_lib.metrics import evaluate_module

MaxAccAccAndF1 = evaluate_module("max_acc_acc_and_f1")
