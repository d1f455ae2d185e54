"""Training one run: its parts, the loop, one optimisation step, evaluation."""
