"""evaluate-compatible module: `evaluate.load(srnets_lib.metrics.metric_path("squad_f1"))`."""

from srnets_lib.metrics import evaluate_module

SquadF1 = evaluate_module("squad_f1")
