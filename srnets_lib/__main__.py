"""Command line: `python -m srnets_lib run PARAMS key=value ...` (one configuration), `sweep` (every
run the given notebooks show, on Ray or locally), `plan` (what a sweep would compute: runs, steps,
inputs, disk, GPU-hours), `evaluate` (score finished runs on OOD sets added since, without training),
`robustness` (the core claims judged again at other data seeds and bias strengths), `export` (a run
or a page's points as Hugging Face model folders with model cards: srnets_lib/export/) and `rekey`
(move a store's version-3 runs to version 4's keys).

run: one configuration. `method` (finetune | mask | imp | imp-rw | omp | random), `loss`,
`sparsity`, `seed`, `task` and `from` (std | poe: the fine-tuned model a pruning run starts
from; pt: the pre-trained model) select it; every other key=value overrides a params field.
"""

from __future__ import annotations

import argparse
import math
import os
import sys

from srnets_lib import methods, paths
from srnets_lib.book import robustness
from srnets_lib.book import runs as book_runs
from srnets_lib.data.inputs import hub_datasets, missing as missing_inputs
from srnets_lib.export import cli as export_cli
from srnets_lib.model.backbones import hub_backbones
from srnets_lib.settings import params as params_lib
from srnets_lib.settings.recipes import Recipes
from srnets_lib.store import rekey
from srnets_lib.sweeps import cost, evaluate, plan, sweep
from srnets_lib.sweeps.executors import RUNS_PER_GPU, check_inputs, execute
from srnets_lib.training.fit import checkpoint_seconds
from srnets_lib.engine.step import NonFiniteLoss


def _run(args) -> int:
    items = params_lib.parse_overrides(args.overrides)
    choice = {k: items.pop(k) for k in ("method", "loss", "sparsity", "seed", "task", "from") if k in items}
    p = params_lib.load(args.params, items)
    task = choice.get("task", p.preset.tasks[0])
    method, loss = choice.get("method", "finetune"), choice.get("loss", "std")
    seed = choice.get("seed", p.preset.seeds[0])
    sparsity = choice.get("sparsity", p.preset.sparsities[0])
    recipes = Recipes(p)
    if not methods.get(method).prunes:
        if "sparsity" in choice:  # it would fine-tune the dense model
            pruning = ", ".join(m for m in methods.METHODS if methods.get(m).prunes)
            raise params_lib.ParamsError(f"sparsity={choice['sparsity']}: method {method} prunes nothing; give a "
                                         f"pruning method ({pruning}) or leave sparsity out")
        config = recipes.full(task, loss, seed)
    elif choice.get("from", "std") == "pt":
        config = recipes.prune_pt(task, method, loss, sparsity, seed)
    else:
        config = recipes.prune_ft(task, method, loss, sparsity, seed, full_loss=choice.get("from", "std"))
    check_inputs([config], p.execution.skip_ood)
    result = execute(config, p.execution.request())
    print(f"run {result.key}: ID {result.id:.4f}, OOD " +
          ", ".join(f"{k} {v:.4f}" for k, v in result.ood.items()) + f", sparsity {result.sparsity:.4f}")
    print(f"results in {paths.run_dir(result.key)}")
    return 0


def _sweep(args) -> int:
    checkpoint_seconds()  # a bad $SRNETS_CHECKPOINT_SECONDS stops the sweep before any run starts
    if args.by == "notebooks":
        params_file = args.params
        if args.set:  # the notebooks read the overrides from a resolved params file
            params_file = params_lib.write_resolved(params_lib.load(args.params, args.set),
                                                    os.path.join(args.out, "params.yaml"))
        planned = book_runs.notebook_jobs(args.notebooks, params_file)
        print(f"sweep: {len(planned)} notebook jobs, executor {args.executor}, run store {paths.runs_root()}")
        return sweep.interruptible(lambda: sweep.status(sweep.execute_jobs(planned, args.out, args.executor,
                                                                          args.address)))
    p = params_lib.load(args.params, args.set)
    runs, _ = book_runs.of_notebooks(args.notebooks, p, args.full, args.part)
    check_inputs([node.config for node in runs], p.execution.skip_ood)
    return sweep.interruptible(lambda: sweep.status(sweep.compute(runs, args.executor, args.address,
                                                                  args.runs_per_gpu)))


def _plan(args) -> int:
    params = params_lib.load(args.params, args.set)
    runs, shown = book_runs.of_notebooks(args.notebooks, params, args.full, args.part)
    planned = plan.plan(shown, runs)
    if args.steps_per_second is not None:
        rates = cost.Assumed(args.steps_per_second, args.eval_examples_per_second or 10 * 32 * args.steps_per_second)
    else:
        rates = cost.Rates.load(gpu=args.gpu)
        if args.gpu and rates is None:
            print(f"plan: --gpu {args.gpu}: no GPU of that name has bert-base rows in bench/results.json (run "
                  "`python -m srnets_lib.tools.bench` on it)", file=sys.stderr)
            return 2
    print(plan.report(planned, rates, args.runs_per_gpu))
    configs = [p.config for p in planned]
    missing = missing_inputs(configs, params.execution.skip_ood)
    hub = hub_datasets(configs) + [f"{backbone} (backbone)" for backbone in hub_backbones(configs)]
    if hub:  # after TOTAL (its last line stays the total)
        print("\nfrom the hub (checked when a sweep starts; offline, from their copies in $SRNETS_HUB_MIRROR: "
              "README): " + ", ".join(hub), file=sys.stderr)
    if missing:
        print("\n".join(["", f"inputs: {len(missing)} missing or not the published files; a sweep refuses to start "
                          "without them:",
                          *(f"- {line}" for line in missing)]), file=sys.stderr)
    return 0


def _evaluate(args) -> int:
    p = params_lib.load(args.params, args.set)
    runs, _ = book_runs.of_notebooks(args.notebooks, p, args.full, args.part)
    configs = [node.config for node in runs]
    check_inputs(configs, p.execution.skip_ood)
    return evaluate.score_all(configs)


def _robustness(args) -> int:
    return robustness.judge(args.params, args.set, args.pages, args.data_seeds, args.strengths, args.executor,
                            args.runs_per_gpu, args.compute)


def _rekey(args) -> int:
    return rekey.main(args)


def _positive(kind):
    """An argparse type: a finite number of `kind` above zero (a rate, a count)."""
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not value > 0:
            raise argparse.ArgumentTypeError(f"{text} is not above zero")
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"{text} is not a finite number")
        return value

    parse.__name__ = f"positive {kind.__name__}"
    return parse


class _FromEnvironment(str):
    """--executor's default, read from $SRNETS_EXECUTOR."""


def _executor(text: str) -> str:
    """--executor's type: argparse checks a default against `choices` only through its type."""
    if isinstance(text, _FromEnvironment) and text not in sweep.EXECUTORS:
        raise argparse.ArgumentTypeError(f"$SRNETS_EXECUTOR={str(text)!r}: invalid choice (choose from "
                                         f"{', '.join(sweep.EXECUTORS)})")
    return str(text)


def _notebooks_and_params(parser, what: str) -> None:
    parser.add_argument("notebooks", nargs="+", help=f"book/*.ipynb {what}")
    parser.add_argument("--params", default="params/toy.yaml", help="params file (default params/toy.yaml)")
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE", help="params overrides")
    parser.add_argument("--full", action="store_true", help="also the opt-in pages (TAMT figures 6, 7, 9: "
                                                            "make book-full)")


def _executors(parser) -> None:
    parser.add_argument("--executor", choices=sweep.EXECUTORS, type=_executor,
                        default=_FromEnvironment(os.environ.get("SRNETS_EXECUTOR", "ray")),
                        help="ray (default: a local instance, or --address; $SRNETS_EXECUTOR sets another) or local "
                             "(in this process)")
    parser.add_argument("--runs-per-gpu", type=_positive(int), default=RUNS_PER_GPU,
                        help=f"runs sharing one GPU (Ray fractional GPUs; default {RUNS_PER_GPU}, measured on an H100)")


def _sweep_parser(sub) -> None:
    parser = sub.add_parser("sweep", help="compute every run the given notebooks show (Ray or local)")
    _notebooks_and_params(parser, "to sweep")
    parser.add_argument("--by", choices=["runs", "notebooks"], default="runs",
                        help="one job per run (default) or per (notebook, seed, sparsity) via papermill")
    parser.add_argument("--out", default="book/_executed", help="--by notebooks: where executed notebooks go")
    parser.add_argument("--address", default=None, help="Ray cluster address, e.g. ray://head:10001 or auto")
    parser.add_argument("--part", type=int, choices=[1, 2], default=None,
                        help="only the notebooks of Part I (SRNets) or Part II (TAMT) (make book PART=1)")
    _executors(parser)


def _plan_parser(sub) -> None:
    parser = sub.add_parser("plan", help="list the distinct runs a sweep would compute, with steps, inputs, disk, "
                                         "GPU-hours")
    _notebooks_and_params(parser, "to plan")
    parser.add_argument("--part", type=int, choices=[1, 2], default=None,
                        help="only the notebooks of Part I (SRNets) or Part II (TAMT)")
    parser.add_argument("--steps-per-second", type=_positive(float), default=None,
                        help="assume this BERT-base training rate for every run (default: bench/results.json's "
                             "rates measured for each run's setting)")
    parser.add_argument("--eval-examples-per-second", type=_positive(float), default=None)
    parser.add_argument("--gpu", default=None, help="whose rates in bench/results.json, by name (e.g. H200); "
                                                    "default: the GPU with the most rows")
    parser.add_argument("--runs-per-gpu", type=_positive(int), default=RUNS_PER_GPU,
                        help="runs sharing one GPU (sweep --runs-per-gpu)")


def _robustness_parser(sub) -> None:
    parser = sub.add_parser("robustness", help="judge the core claims again at other data seeds and bias strengths "
                                               "(one field changed at a time), computing their runs")
    parser.add_argument("--params", default="params/toy.yaml", help="params file (default params/toy.yaml)")
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE", help="params overrides (every setting)")
    parser.add_argument("--pages", nargs="+", default=list(robustness.PAGES),
                        help=f"default: {' '.join(robustness.PAGES)}")
    parser.add_argument("--data-seeds", nargs="*", type=int, default=list(robustness.DATA_SEEDS))
    parser.add_argument("--strengths", nargs="*", type=float, default=list(robustness.STRENGTHS))
    parser.add_argument("--no-compute", dest="compute", action="store_false",
                        help="judge what the store holds, computing nothing")
    _executors(parser)


def parser() -> argparse.ArgumentParser:
    """Every command's arguments."""
    top = argparse.ArgumentParser(prog="python -m srnets_lib")
    sub = top.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run one configuration (results land in the run store)")
    run.add_argument("params", help="params file, e.g. params/toy.yaml")
    run.add_argument("overrides", nargs="*", help="key=value, e.g. method=mask loss=poe sparsity=0.7 seed=1")
    _sweep_parser(sub)
    _plan_parser(sub)
    scorer = sub.add_parser("evaluate", help="score finished runs on OOD sets they lack (a file added since), "
                                             "without training")
    _notebooks_and_params(scorer, "whose runs to score")
    scorer.add_argument("--part", type=int, choices=[1, 2], default=None,
                        help="only the notebooks of Part I (SRNets) or Part II (TAMT): after make book PART=1, "
                             "its inputs alone are checked")
    _robustness_parser(sub)
    export_cli.add_arguments(sub.add_parser("export", help="a run (its key) or a page's points as Hugging Face model "
                                                          "folders with a model card, measured beside the dense model"))
    moved = sub.add_parser("rekey", help="move a store's algorithm-version-3 runs to their version-4 keys")
    moved.add_argument("--runs", default=None, help="the run store (default: $SRNETS_RUNS, else runs/)")
    moved.add_argument("--dry-run", action="store_true", help="print what would move, move nothing")
    return top


COMMANDS = {"run": _run, "sweep": _sweep, "plan": _plan, "evaluate": _evaluate, "robustness": _robustness,
            "export": lambda args: export_cli.main(args), "rekey": _rekey}


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except (params_lib.ParamsError, ValueError, OSError) as err:  # bad input, a missing or unwritable file
        print(f"error: {err}", file=sys.stderr)
        return 2
    except NonFiniteLoss as err:  # a run that diverged: its message says what to change
        print(f"error: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
