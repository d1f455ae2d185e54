"""Sweeps: each (notebook, seed, sparsity) executed by papermill as one job.

Executors: `local` (in this process, one job after another) or `ray` (each job a Ray task;
a local Ray instance by default, `--address` joins a cluster; a job asks for one GPU when
CUDA is present). Results land in the run store, which every job shares, so the book build
afterwards only gathers. Executed notebooks are kept under --out. A failing job is reported
with its error and does not stop the others; the command exits non-zero if any failed.
"""

from __future__ import annotations

import os
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

from tqdm.auto import tqdm

from . import paths


@dataclass(frozen=True)
class Job:
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


def plan(notebooks: list[str], params_file: str, overrides: list[str] | None = None) -> list[Job]:
    """One job per (notebook, seed, sparsity); notebooks without a `sparsity` parameter get one per seed."""
    import papermill

    from . import params as params_lib

    p = params_lib.load(params_file, overrides)
    jobs = []
    for notebook in notebooks:
        accepted = papermill.inspect_notebook(notebook)
        sparsities = p.preset.sparsities if "sparsity" in accepted else [None]
        jobs += [Job(notebook, seed, s, params_file) for seed in p.preset.seeds for s in sparsities]
    return jobs


def run_job(job: Job, out_dir: str) -> dict:
    """Execute one notebook; returns {"job", "ok", "error", "seconds"} (never raises)."""
    import papermill

    started = time.time()
    target = Path(out_dir) / f"{job.name}.ipynb"
    try:
        papermill.execute_notebook(job.notebook, str(target), parameters=job.parameters(),
                                   cwd=str(paths.PROJECT_ROOT), progress_bar=False, log_output=False)
        return {"job": job.name, "ok": True, "error": None, "seconds": time.time() - started}
    except Exception as err:  # reported, never fatal to the sweep
        message = f"{type(err).__name__}: {err}".strip().splitlines()
        return {"job": job.name, "ok": False, "error": "\n".join(message[-8:]) or traceback.format_exc(),
                "seconds": time.time() - started}


def execute(jobs: list[Job], out_dir: str, executor: str = "local", address: str | None = None) -> list[dict]:
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    bar = tqdm(total=len(jobs), desc="sweep", unit="job")
    results = []

    def report(result):
        results.append(result)
        failed = sum(not r["ok"] for r in results)
        bar.set_postfix(done=len(results) - failed, failed=failed, running=len(jobs) - len(results))
        bar.update(1)
        if not result["ok"]:
            tqdm.write(f"FAILED {result['job']}: {result['error']}")

    if executor == "local":
        for job in jobs:
            report(run_job(job, out_dir))
    elif executor == "ray":
        import ray
        import torch

        ray.init(address=address, ignore_reinit_error=True, log_to_driver=False,
                 runtime_env={"env_vars": {"SRNETS_RUNS": str(paths.runs_root())}})
        remote = ray.remote(num_gpus=1 if torch.cuda.is_available() else 0)(run_job)
        pending = {remote.remote(job, out_dir): job for job in jobs}
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                job = pending.pop(ref)
                try:
                    report(ray.get(ref))
                except Exception as err:  # the worker itself died
                    report({"job": job.name, "ok": False, "error": repr(err), "seconds": 0.0})
    else:
        raise ValueError(f"unknown executor {executor!r}; accepted: local, ray")
    bar.close()
    return results


def add_arguments(parser) -> None:
    parser.add_argument("notebooks", nargs="+", help="book/*.ipynb to sweep")
    parser.add_argument("--params", default="params/toy.yaml", help="params file (default params/toy.yaml)")
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE", help="params overrides")
    parser.add_argument("--out", default="book/_executed", help="where executed notebooks are kept")
    parser.add_argument("--executor", choices=["local", "ray"], default=os.environ.get("SRNETS_EXECUTOR", "local"))
    parser.add_argument("--address", default=None, help="Ray cluster address (default: a local instance)")


def main(args) -> int:
    jobs = plan(args.notebooks, args.params, args.set)
    print(f"sweep: {len(jobs)} jobs over {len(args.notebooks)} notebooks, executor {args.executor}, "
          f"run store {paths.runs_root()}")
    results = execute(jobs, args.out, args.executor, args.address)
    failed = [r for r in results if not r["ok"]]
    print(f"sweep: {len(results) - len(failed)} done, {len(failed)} failed")
    return 1 if failed else 0
