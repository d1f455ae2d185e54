"""Command line: `python -m srnets_lib run PARAMS key=value ...` and `python -m srnets_lib sweep ...`.

run: one configuration. `method` (finetune | mask | imp | imp-rw | omp | random), `loss`,
`sparsity`, `seed`, `task` and `from` (std | poe: the fine-tuned model a pruning run starts
from; pt: the pre-trained model) select it; every other key=value overrides a params field.
"""

from __future__ import annotations

import argparse
import sys

from . import params as params_lib


def _run(args) -> int:
    from .recipes import Recipes
    from .runs import Run
    from .train import execute

    items = params_lib.parse_overrides(args.overrides)
    choice = {k: items.pop(k) for k in ("method", "loss", "sparsity", "seed", "task", "from") if k in items}
    p = params_lib.load(args.params, items)
    task = choice.get("task", p.preset.tasks[0])
    method, loss = choice.get("method", "finetune"), choice.get("loss", "std")
    seed = choice.get("seed", p.preset.seeds[0])
    recipes = Recipes(p)
    if method == "finetune":
        config = recipes.full(task, loss, seed)
    elif choice.get("from", "std") == "pt":
        config = recipes.prune_pt(task, method, loss, choice.get("sparsity", p.preset.sparsities[0]), seed)
    else:
        config = recipes.prune_ft(task, method, loss, choice.get("sparsity", p.preset.sparsities[0]), seed,
                                  full_loss=choice.get("from", "std"))
    final = execute(config)
    run = Run(config)
    print(f"run {run.key}: ID {final['id']:.4f}, OOD " +
          ", ".join(f"{k} {v:.4f}" for k, v in final["ood"].items()) + f", sparsity {final['sparsity']:.4f}")
    print(f"results in {run.dir}")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m srnets_lib")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run one configuration (results land in the run store)")
    run.add_argument("params", help="params file, e.g. params/toy.yaml")
    run.add_argument("overrides", nargs="*", help="key=value, e.g. method=mask loss=poe sparsity=0.7 seed=1")
    sweep = sub.add_parser("sweep", help="compute every run the given notebooks show (Ray or local)")
    from .sweep import add_arguments

    add_arguments(sweep)
    args = parser.parse_args(argv)
    try:
        if args.command == "run":
            return _run(args)
        from .sweep import main as sweep_main

        return sweep_main(args)
    except (params_lib.ParamsError, ValueError, FileNotFoundError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
