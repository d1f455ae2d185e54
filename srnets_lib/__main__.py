"""Command line: `python -m srnets_lib run PARAMS key=value ...`, `python -m srnets_lib sweep ...`,
`python -m srnets_lib plan ...` (what a sweep would compute: runs, steps, disk, GPU-hours),
`python -m srnets_lib evaluate ...` (score finished runs on OOD sets added since, without
training), `python -m srnets_lib robustness` (the core claims judged again at other data seeds and
bias strengths), `python -m srnets_lib export` (a run or a page's points as Hugging Face model folders
with model cards: srnets_lib/export/) and `python -m srnets_lib rekey` (move a store's version-3 runs
to version 4's keys).

run: one configuration. `method` (finetune | mask | imp | imp-rw | omp | random), `loss`,
`sparsity`, `seed`, `task` and `from` (std | poe: the fine-tuned model a pruning run starts
from; pt: the pre-trained model) select it; every other key=value overrides a params field.
"""

from __future__ import annotations

import argparse
import sys

from . import methods, paths
from . import params as params_lib


def _run(args) -> int:
    from .executors import execute
    from .recipes import Recipes

    items = params_lib.parse_overrides(args.overrides)
    choice = {k: items.pop(k) for k in ("method", "loss", "sparsity", "seed", "task", "from") if k in items}
    p = params_lib.load(args.params, items)
    task = choice.get("task", p.preset.tasks[0])
    method, loss = choice.get("method", "finetune"), choice.get("loss", "std")
    seed = choice.get("seed", p.preset.seeds[0])
    sparsity = choice.get("sparsity", p.preset.sparsities[0])
    recipes = Recipes(p)
    if not methods.get(method).prunes:
        config = recipes.full(task, loss, seed)
    elif choice.get("from", "std") == "pt":
        config = recipes.prune_pt(task, method, loss, sparsity, seed)
    else:
        config = recipes.prune_ft(task, method, loss, sparsity, seed, full_loss=choice.get("from", "std"))
    from .data.local import require_files

    require_files([config, *config.dependencies()], p.execution.skip_ood)
    result = execute(config, p.execution.request())
    print(f"run {result.key}: ID {result.id:.4f}, OOD " +
          ", ".join(f"{k} {v:.4f}" for k, v in result.ood.items()) + f", sparsity {result.sparsity:.4f}")
    print(f"results in {paths.run_dir(result.key)}")
    return 0


def _plan(args) -> int:
    from . import plan
    from .sweep import graph

    params = params_lib.load(args.params, args.set)
    runs, shown = graph(args.notebooks, params, args.full)
    planned = plan.plan(shown, runs)
    rate, eval_rate, speedup, source = args.steps_per_second, args.eval_examples_per_second, 1.0, "given"
    measured, full_length = plan.load_throughput(gpu=args.gpu), None
    if args.gpu and measured is None:
        print(f"plan: --gpu {args.gpu}: no GPU of that name has compiled mask-training and evaluation rows in "
              "bench/results.json (run `python -m srnets_lib.bench` on it)", file=sys.stderr)
        return 2
    if rate is None and measured:
        rate, source = measured["steps_per_second"], f"measured by bench on {measured['device']}"
        eval_rate = eval_rate or measured["eval_examples_per_second"]
        speedup = measured.get("sharing_speedup", {}).get(str(args.runs_per_gpu), 1.0)
        full_length = measured["full_length"]
    elif rate is not None:
        source = "assumed (--steps-per-second), not measured"
        if eval_rate is None:
            eval_rate, source = 10 * 32 * rate, source + "; evaluation assumed at 10x the training examples/s"
    print(plan.report(planned, rate, eval_rate, speedup, source, full_length))
    from .data.local import check_files

    missing = check_files([p.config for p in planned], params.execution.skip_ood)
    if missing:  # after TOTAL (its last line stays the total): a sweep would refuse to start
        print("\n".join(["", f"data: {len(missing)} file(s) missing; a sweep refuses to start without them:",
                          *(f"- {line}" for line in missing)]), file=sys.stderr)
    return 0


def _positive(kind):
    """An argparse type: a number of `kind` above zero (a rate, a count)."""
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not value > 0:
            raise argparse.ArgumentTypeError(f"{text} is not above zero")
        return value

    parse.__name__ = f"positive {kind.__name__}"
    return parse


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m srnets_lib")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run one configuration (results land in the run store)")
    run.add_argument("params", help="params file, e.g. params/toy.yaml")
    run.add_argument("overrides", nargs="*", help="key=value, e.g. method=mask loss=poe sparsity=0.7 seed=1")
    sweep = sub.add_parser("sweep", help="compute every run the given notebooks show (Ray or local)")
    from .sweep import RUNS_PER_GPU, add_arguments

    add_arguments(sweep)
    planner = sub.add_parser("plan", help="list the distinct runs a sweep would compute, with steps, disk, GPU-hours")
    planner.add_argument("notebooks", nargs="+", help="book/*.ipynb")
    planner.add_argument("--params", default="params/toy.yaml", help="params file (default params/toy.yaml)")
    planner.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE", help="params overrides")
    planner.add_argument("--full", action="store_true", help="also the opt-in pages (TAMT figures 6, 7, 9)")
    planner.add_argument("--steps-per-second", type=_positive(float), default=None,
                         help="BERT-base training steps/s on one GPU (default: bench/results.json's measurement)")
    planner.add_argument("--eval-examples-per-second", type=_positive(float), default=None)
    planner.add_argument("--gpu", default=None, help="whose rates in bench/results.json, by name (e.g. H200); "
                                                     "default: the GPU with the most kinds measured")
    planner.add_argument("--runs-per-gpu", type=_positive(int), default=RUNS_PER_GPU,
                         help="runs sharing one GPU (sweep --runs-per-gpu)")
    scorer = sub.add_parser("evaluate", help="score finished runs on OOD sets they lack (a file added since), "
                                             "without training")
    scorer.add_argument("notebooks", nargs="+", help="book/*.ipynb whose runs to score")
    scorer.add_argument("--params", default="params/toy.yaml", help="params file (default params/toy.yaml)")
    scorer.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE", help="params overrides")
    scorer.add_argument("--full", action="store_true", help="also the opt-in pages' runs")
    robust = sub.add_parser("robustness", help="judge the core claims again at other data seeds and bias strengths "
                                               "(one field changed at a time), computing their runs")
    from .robustness import add_arguments as robustness_arguments

    robustness_arguments(robust)
    exporter = sub.add_parser("export", help="a run (its key) or a page's points as Hugging Face model folders "
                                             "with a model card, measured beside the dense model")
    from .export.cli import add_arguments as export_arguments

    export_arguments(exporter)
    rekey = sub.add_parser("rekey", help="move a store's algorithm-version-3 runs to their version-4 keys")
    rekey.add_argument("--runs", default=None, help="the run store (default: $SRNETS_RUNS, else runs/)")
    rekey.add_argument("--dry-run", action="store_true", help="print what would move, move nothing")
    args = parser.parse_args(argv)
    try:
        if args.command == "run":
            return _run(args)
        if args.command == "plan":
            return _plan(args)
        if args.command == "evaluate":
            from .rescore import main as rescore_main

            return rescore_main(args)
        if args.command == "robustness":
            from .robustness import main as robustness_main

            return robustness_main(args)
        if args.command == "export":
            from .export.cli import main as export_main

            return export_main(args)
        if args.command == "rekey":
            from .rekey import main as rekey_main

            return rekey_main(args)
        from .sweep import main as sweep_main

        return sweep_main(args)
    except (params_lib.ParamsError, ValueError, OSError) as err:  # bad input, a missing or unwritable file
        print(f"error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
