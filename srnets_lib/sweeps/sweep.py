"""Sweeps: compute everything a set of notebooks shows, locally or on Ray.

Two granularities (`--by`):
  runs       (default) the runs behind the notebooks' points (book/runs.py), as one RunGraph
             handed to an executor (executors.py): a run starts once the runs it reads have
             finished, so independent runs go in parallel. The book build then only gathers.
  notebooks  one papermill execution per (notebook, seed, sparsity); executed notebooks are
             kept under --out. Jobs sharing a run wait on its lock (runs.Run.claim).

A failing job is reported with its error and does not stop independent jobs; its dependents are
reported as failed too. The command exits 1 if any job failed, and re-running it computes only
what is missing.
"""

from __future__ import annotations

import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from srnets_lib import paths
from srnets_lib.sweeps.executors import (RUNS_PER_GPU, LocalExecutor, RunOutcome, Progress, RayExecutor, ray_resources,
                                         start_ray, summary)
from srnets_lib.sweeps.graph import RunGraph


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


def run_job(job: Job, out_dir: str) -> RunOutcome:
    """Execute one notebook (never raises)."""
    import papermill

    started = time.time()
    try:
        papermill.execute_notebook(job.notebook, str(Path(out_dir) / f"{job.name}.ipynb"), parameters=job.parameters(),
                                   cwd=str(paths.PROJECT_ROOT), progress_bar=False, log_output=False)
        return RunOutcome(job.name, True, None, time.time() - started)
    except Exception as err:  # reported, never fatal to the sweep
        return RunOutcome(job.name, False, summary(err), time.time() - started)


def execute_jobs(planned: list[Job], out_dir: str, executor: str = "ray", address: str | None = None) -> list[RunOutcome]:
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
                progress.report(RunOutcome(job.name, False, summary(err)))
    return progress.close()


# --- computing ---------------------------------------------------------------------------------

EXECUTORS = ("ray", "local")


def compute(runs: RunGraph, executor: str = "ray", address: str | None = None,
            runs_per_gpu: int = RUNS_PER_GPU) -> list[RunOutcome]:
    """Compute the runs of `runs` the store lacks, on Ray (a local instance, or the cluster at
    `address`) or in this process (`executor` local); one RunOutcome per run computed."""
    print(f"sweep: {len(runs)} runs, executor {executor}, run store {paths.runs_root()}")
    chosen = LocalExecutor() if executor == "local" else RayExecutor(address, runs_per_gpu)
    return chosen.run(runs, paths.runs_root())


def status(outcomes: list[RunOutcome]) -> int:
    """Print the sweep's count; its exit status: 1 if a job failed."""
    failed = [o for o in outcomes if not o.ok]
    print(f"sweep: {len(outcomes) - len(failed)} computed, {len(failed)} failed")
    return 1 if failed else 0


class Terminated(BaseException):
    """The sweep was sent SIGTERM (a BaseException, like KeyboardInterrupt: no run reports it as
    its own failure)."""


def _terminate(signum, frame):
    raise Terminated()


def interruptible(sweep) -> int:
    """`sweep()`'s exit status; SIGTERM or Ctrl-C stops it with one line (exit 143 / 130), its
    finished runs kept and its running ones resumable (their checkpoints)."""
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        return sweep()
    except (Terminated, KeyboardInterrupt) as err:
        what = "SIGTERM" if isinstance(err, Terminated) else "an interrupt"
        print(f"\nsweep: stopped by {what}; finished runs are kept and interrupted ones resume from their last "
              "checkpoint when the same command runs again", file=sys.stderr)
        return 143 if isinstance(err, Terminated) else 130
    finally:
        signal.signal(signal.SIGTERM, previous)
