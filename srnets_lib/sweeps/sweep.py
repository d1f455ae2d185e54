"""Sweeps: compute everything a set of notebooks shows, locally or on Ray.

Two granularities (`--by`):
  runs       (default) the runs behind the notebooks' points (sections.points), as one
             RunGraph handed to an executor (executors.py): a run starts once the runs it reads
             have finished, so independent runs go in parallel. The book build then only gathers.
  notebooks  one papermill execution per (notebook, seed, sparsity); executed notebooks are
             kept under --out. Jobs sharing a run wait on its lock (runs.Run.claim).

A failing job is reported with its error and does not stop independent jobs; its dependents are
reported as failed too. The command exits 1 if any job failed, and re-running it computes only
what is missing.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from srnets_lib import paths
from srnets_lib.sweeps.executors import RUNS_PER_GPU, LocalExecutor, Outcome, Progress, RayExecutor, ray_resources, start_ray, summary


# --- what the notebooks show ----------------------------------------------------------------

def sections(notebooks: list[str], params, full: bool = False, part: int | None = None) -> dict[str, list]:
    """{section: its points} for the given section notebooks, in the papers' order; the opt-in
    pages and sparsities (their runs are over the default build's budget) only with `full`; with
    `part`, only the pages of that part of the book (1: the SRNets paper, 2: TAMT)."""
    from srnets_lib.settings.params import RUNLESS_PAGES
    from srnets_lib.book.sections import SECTIONS, get, points

    chosen = {}
    order = {s: i for i, s in enumerate(SECTIONS)}
    for notebook in sorted(notebooks, key=lambda n: order.get(Path(n).stem, len(order))):
        section = Path(notebook).stem
        if section in RUNLESS_PAGES:
            continue
        if section not in SECTIONS:
            raise ValueError(f"{notebook}: not a book notebook; accepted: "
                             + ", ".join(f"book/{s}.ipynb" for s in (*SECTIONS, *RUNLESS_PAGES)))
        if (full or not get(section).opt_in) and part in (None, get(section).part):
            chosen[section] = points(section, params, full=full)
    return chosen


def graph(notebooks: list[str], params, full: bool = False, part: int | None = None):
    """(the RunGraph behind the notebooks, {section: the configs it shows}). Each run is asked for
    what every page of the book asks of it, not only the given pages (a run shared by two pages is
    computed once, whichever is swept first, and leaves what both read). The default build also
    scores the opt-in points whose run it computes anyway (an IMP run's other levels: a few
    evaluations, where `make book-full` would train the run again to score them)."""
    shown = sections(notebooks, params, full, part)
    needed = book_graph(params, full).closure([p.config for points in shown.values() for p in points])
    return needed, {s: [p.config for p in points] for s, points in shown.items()}


def book_graph(params, full: bool = False, extra: list = ()):
    """The RunGraph of every page of the book (the opt-in ones with `full`) and of the points
    `extra`, each run asked for what every point that reads it asks (sections.gather.graph); the
    default build's graph also has the opt-in points whose runs it computes anyway."""
    from srnets_lib.book.sections import SECTIONS
    from srnets_lib.book.sections.gather import graph as points_graph

    every = [f"{s}.ipynb" for s in SECTIONS]
    book = [p for points in sections(every, params, full).values() for p in points] + list(extra)
    runs = points_graph(book, params)
    if full:
        return runs
    riders = [p for points in sections(every, params, True).values() for p in points if p.config.key() in runs.nodes]
    return points_graph(book + riders, params)


# --- notebook jobs --------------------------------------------------------------------------

@dataclass(frozen=True)
class Job:
    """One papermill execution of a notebook for one seed (and one sparsity)."""

    notebook: str
    seed: int
    sparsity: float | None
    params_file: str

    @property
    def name(self) -> str:
        tail = f"_s{self.sparsity}" if self.sparsity is not None else ""
        return f"{Path(self.notebook).stem}_seed{self.seed}{tail}"

    def parameters(self) -> dict:
        values = {"params_file": self.params_file, "seeds": [self.seed]}
        if self.sparsity is not None:
            values["sparsity"] = self.sparsity
        return values


def jobs(notebooks: list[str], params_file: str, overrides: list[str] | None = None) -> list[Job]:
    """One job per (notebook, seed, sparsity); notebooks without a `sparsity` parameter get one per seed."""
    import papermill

    from srnets_lib.settings import params as params_lib

    p = params_lib.load(params_file, overrides)
    planned = []
    for notebook in (n for n in notebooks if Path(n).stem not in params_lib.RUNLESS_PAGES):
        accepted = papermill.inspect_notebook(notebook)
        sparsities = p.sparsities_for(Path(notebook).stem) if "sparsity" in accepted else [None]
        planned += [Job(notebook, seed, s, params_file) for seed in p.seeds_for(Path(notebook).stem) for s in sparsities]
    return planned


def run_job(job: Job, out_dir: str) -> Outcome:
    """Execute one notebook (never raises)."""
    import papermill

    started = time.time()
    try:
        papermill.execute_notebook(job.notebook, str(Path(out_dir) / f"{job.name}.ipynb"), parameters=job.parameters(),
                                   cwd=str(paths.PROJECT_ROOT), progress_bar=False, log_output=False)
        return Outcome(job.name, True, None, time.time() - started)
    except Exception as err:  # reported, never fatal to the sweep
        return Outcome(job.name, False, summary(err), time.time() - started)


def execute_jobs(planned: list[Job], out_dir: str, executor: str = "ray", address: str | None = None) -> list[Outcome]:
    """Run notebook jobs (independent of each other)."""
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    progress = Progress(len(planned), "notebook")
    if executor == "local":
        for job in planned:
            progress.set_running(1)
            progress.report(run_job(job, out_dir))
        return progress.close()
    ray = start_ray(address)
    remote = ray.remote(**ray_resources())(run_job)
    pending = {remote.remote(job, out_dir): job for job in planned}
    while pending:
        ready, _ = ray.wait(list(pending), num_returns=1)
        for ref in ready:
            job = pending.pop(ref)
            try:
                progress.report(ray.get(ref))
            except Exception as err:  # the worker itself died
                progress.report(Outcome(job.name, False, summary(err)))
    return progress.close()


# --- command line ---------------------------------------------------------------------------

def add_arguments(parser) -> None:
    parser.add_argument("notebooks", nargs="+", help="book/*.ipynb to sweep")
    parser.add_argument("--params", default="params/toy.yaml", help="params file (default params/toy.yaml)")
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE", help="params overrides")
    parser.add_argument("--by", choices=["runs", "notebooks"], default="runs",
                        help="one job per run (default) or per (notebook, seed, sparsity) via papermill")
    parser.add_argument("--out", default="book/_executed", help="--by notebooks: where executed notebooks go")
    parser.add_argument("--executor", choices=EXECUTORS, type=_executor,
                        default=_FromEnvironment(os.environ.get("SRNETS_EXECUTOR", "ray")),
                        help="ray (default: a local instance, or --address; $SRNETS_EXECUTOR sets another) or local "
                             "(in this process)")
    parser.add_argument("--address", default=None, help="Ray cluster address, e.g. ray://head:10001 or auto")
    parser.add_argument("--full", action="store_true",
                        help="also the opt-in pages (TAMT figures 6, 7, 9: make book-full)")
    parser.add_argument("--part", type=int, choices=[1, 2], default=None,
                        help="only the notebooks of Part I (SRNets) or Part II (TAMT) (make book PART=1)")
    parser.add_argument("--runs-per-gpu", type=int, default=RUNS_PER_GPU,
                        help=f"runs sharing one GPU (Ray fractional GPUs; default {RUNS_PER_GPU}, measured on an H100)")


EXECUTORS = ("ray", "local")


class _FromEnvironment(str):
    """--executor's default, read from $SRNETS_EXECUTOR."""


def _executor(text: str) -> str:
    """--executor's type: argparse checks a default against `choices` only through its type."""
    if isinstance(text, _FromEnvironment) and text not in EXECUTORS:
        import argparse

        raise argparse.ArgumentTypeError(f"$SRNETS_EXECUTOR={str(text)!r}: invalid choice (choose from "
                                         f"{', '.join(EXECUTORS)})")
    return str(text)


class Terminated(BaseException):
    """The sweep was sent SIGTERM (a BaseException, like KeyboardInterrupt: no run reports it as
    its own failure)."""


def _terminate(signum, frame):
    raise Terminated()


def main(args) -> int:
    """Run the sweep; SIGTERM or Ctrl-C stops it with one line (exit 143 / 130), its finished runs
    kept and its running ones resumable (their checkpoints)."""
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        return _sweep(args)
    except (Terminated, KeyboardInterrupt) as err:
        what = "SIGTERM" if isinstance(err, Terminated) else "an interrupt"
        print(f"\nsweep: stopped by {what}; finished runs are kept and interrupted ones resume from their last "
              "checkpoint when the same command runs again", file=sys.stderr)
        return 143 if isinstance(err, Terminated) else 130
    finally:
        signal.signal(signal.SIGTERM, previous)


def _sweep(args) -> int:
    from srnets_lib.settings import params as params_lib
    from srnets_lib.training.fit import checkpoint_seconds

    checkpoint_seconds()  # a bad $SRNETS_CHECKPOINT_SECONDS stops the sweep before any run starts

    if args.by == "notebooks":
        params_file = args.params
        if args.set:  # the notebooks read the overrides from a resolved params file
            params_file = params_lib.write_resolved(params_lib.load(args.params, args.set), Path(args.out) / "params.yaml")
        planned = jobs(args.notebooks, params_file)
        print(f"sweep: {len(planned)} notebook jobs, executor {args.executor}, run store {paths.runs_root()}")
        outcomes = execute_jobs(planned, args.out, args.executor, args.address)
    else:
        from srnets_lib.data.inputs import require

        p = params_lib.load(args.params, args.set)
        runs, _ = graph(args.notebooks, p, args.full, args.part)
        require([node.config for node in runs], p.execution.skip_ood)
        print(f"sweep: {len(runs)} runs behind {len(args.notebooks)} notebooks, executor "
              f"{args.executor}, run store {paths.runs_root()}")
        executor = (LocalExecutor() if args.executor == "local"
                    else RayExecutor(args.address, args.runs_per_gpu))
        outcomes = executor.run(runs, paths.runs_root())
    failed = [o for o in outcomes if not o.ok]
    print(f"sweep: {len(outcomes) - len(failed)} computed, {len(failed)} failed")
    return 1 if failed else 0
