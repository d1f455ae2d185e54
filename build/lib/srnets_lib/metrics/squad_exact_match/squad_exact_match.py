"""evaluate-compatible module: `evaluate.load(srnets_lib.metrics.metric_path("squad_exact_match"))`."""

from srnets_lib.metrics import evaluate_module

SquadExactMatch = evaluate_module("squad_exact_match")
