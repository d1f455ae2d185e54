"""srnets_lib: sparse and robust BERT subnetworks (Liu et al., NeurIPS 2022, "A Win-win Deal").

Layers, each a package importing only those listed before it: settings (params files, run
configs, requests), data, model, methods, training (task kinds, the loop), store (the run
store), sweeps (run graphs, executors, plans, costs), book (sections, pages, scorecard); tools
(bench, browser check) and metrics beside them. docs/ARCHITECTURE.md draws the tree and traces
a number through it.
"""

__version__ = "0.1.0"
# Bumped whenever an algorithm changes its results; part of every run key (config.run_key).
# 2: masked layers as in the authors' code (pooler; classifier per method)
# 3: synthetic tasks redesigned (graded ambiguity, data/synthetic.py)
# 4: the run key holds only scientific settings (eval_batch_size, eval_ood and keep_steps left
#    it: request.Request); `python -m srnets_lib rekey` moves version-3 runs to their new keys
ALGORITHM_VERSION = 4
