"""srnets_lib: sparse and robust BERT subnetworks (Liu et al., NeurIPS 2022, "A Win-win Deal").

Modules (one concern each): params and config (runs and their keys), request and result (what
a run is asked for and leaves behind), data, models, bias, losses, pruning, methods, schedule,
build, fit, step, evaluation, runs (the store), graph, executors, sweep, plan, recipes,
sections, book, plots, bench. docs/ARCHITECTURE.md draws the data flow.
"""

__version__ = "0.1.0"
# Bumped whenever an algorithm changes its results; part of every run key (config.run_key).
# 2: masked layers as in the authors' code (pooler; classifier per method)
# 3: synthetic tasks redesigned (graded ambiguity, data/synthetic.py)
# 4: the run key holds only scientific settings (eval_batch_size, eval_ood and keep_steps left
#    it: request.Request); `python -m srnets_lib rekey` moves version-3 runs to their new keys
ALGORITHM_VERSION = 4
