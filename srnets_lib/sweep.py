"""Sweeps: compute everything a set of notebooks shows, locally or on Ray.

Two granularities (`--by`):
  runs       (default) the distinct runs behind the notebooks' points (recipes.Recipes.section),
             each one job; a job starts once the runs it depends on (the fine-tuned model a
             mask is trained on, the mask a subnetwork is fine-tuned from, the confreg
             teacher) have finished, so independent runs go in parallel. The book build then
             only gathers.
  notebooks  one papermill execution per (notebook, seed, sparsity); executed notebooks are
             kept under --out. Jobs sharing a run wait on its lock (runs.Run.claim).

Executors (`--executor`): `ray` (default; a local Ray instance started in-process, or
`--address` to join a cluster; a job asks for 1 GPU when CUDA is present, else 1 CPU) or
`local` (this process, one job after another: the smallest installs). Both write the same
run store. A failing job is reported with its error and does not stop independent jobs; its
dependents are reported as failed too. The command exits 1 if any job failed, and
re-running it computes only what is missing.
"""

from __future__ import annotations

import os
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

from tqdm.auto import tqdm

from . import paths


# --- jobs ---------------------------------------------------------------------------------

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


def plan(notebooks: list[str], params_file: str, overrides: list[str] | None = None) -> list[Job]:
    """One job per (notebook, seed, sparsity); notebooks without a `sparsity` parameter get one per seed."""
    import papermill

    from . import params as params_lib

    p = params_lib.load(params_file, overrides)
    jobs = []
    for notebook in notebooks:
        accepted = papermill.inspect_notebook(notebook)
        sparsities = p.preset.sparsities if "sparsity" in accepted else [None]
        seeds = p.seeds_for(Path(notebook).stem)
        jobs += [Job(notebook, seed, s, params_file) for seed in seeds for s in sparsities]
    return jobs


def section_runs(notebooks: list[str], params_file: str, overrides: list[str] | None = None) -> dict:
    """{section: its runs, dependencies first} for the given notebooks (with the params file's
    seeds, sparsities and tasks)."""
    from . import params as params_lib
    from .recipes import SECTIONS, Recipes, runs_in_order

    p = params_lib.load(params_file, overrides)
    recipes, sections = Recipes(p), {}
    order = {s: i for i, s in enumerate(SECTIONS)}
    for notebook in sorted(notebooks, key=lambda n: order.get(Path(n).stem, len(order))):
        section = Path(notebook).stem
        if section not in SECTIONS:
            raise ValueError(f"{notebook}: not a section notebook; accepted: "
                             + ", ".join(f"book/{s}.ipynb" for s in SECTIONS))
        sections[section] = runs_in_order(recipes.section(section))
    return sections


def plan_runs(notebooks: list[str], params_file: str, overrides: list[str] | None = None) -> list:
    """Every run the notebooks show, dependencies first, each once."""
    ordered = {}
    for configs in section_runs(notebooks, params_file, overrides).values():
        for config in configs:
            ordered.setdefault(config.key(), config)
    return list(ordered.values())


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
        return {"job": job.name, "ok": False, "error": _summary(err), "seconds": time.time() - started}


def compute_run(config_json: str, root: str, keep_weights: bool, *dependencies) -> float:
    """One run (a Ray task or a local call); returns its seconds. `dependencies` only make Ray
    wait for them."""
    from .config import RunConfig
    from .train import execute

    started = time.time()
    execute(RunConfig.model_validate_json(config_json), Path(root), progress=False, keep_weights=keep_weights)
    return time.time() - started


def _summary(err: BaseException) -> str:
    lines = f"{type(err).__name__}: {err}".strip().splitlines()
    return "\n".join(lines[-8:]) or traceback.format_exc()


# --- progress -----------------------------------------------------------------------------

class Progress:
    """A tqdm bar with done / running / failed counts; failures are printed as they happen."""

    def __init__(self, total: int, unit: str):
        self.total, self.results, self.running = total, [], 0
        self.bar = tqdm(total=total, desc="sweep", unit=unit)
        self._postfix()

    def _postfix(self):
        failed = sum(not r["ok"] for r in self.results)
        self.bar.set_postfix(done=len(self.results) - failed, running=self.running, failed=failed,
                             waiting=self.total - len(self.results) - self.running)

    def set_running(self, count: int) -> None:
        self.running = count
        self._postfix()

    def report(self, result: dict) -> None:
        self.results.append(result)
        self.running = min(self.running, self.total - len(self.results))
        self._postfix()
        self.bar.update(1)
        if not result["ok"]:
            tqdm.write(f"FAILED {result['job']}: {result['error']}")

    def close(self) -> list[dict]:
        self.bar.close()
        return self.results


# --- executors ----------------------------------------------------------------------------

def _start_ray(address: str | None):
    import ray

    ray.init(address=address, ignore_reinit_error=True, log_to_driver=False, include_dashboard=False,
             runtime_env={"env_vars": {"SRNETS_RUNS": str(paths.runs_root()),
                                       "SRNETS_PROGRESS": "0"}})
    return ray


# Runs placed on one GPU at once (Ray fractional GPUs). Measured on an H100 (issue 11): four eager
# BERT-base mask-training runs sharing it trained at 3.4x the throughput of one, and four
# CUDA-graph runs added only about 12% per step over one. Memory is estimated, not measured
# here: fp32 weights, scores and Adam state of BERT-base are ~2 GB, activations at batch 32 a
# few GB more, so four fit an 80 GB GPU. `python -m srnets_lib.bench --sharing 1 2 4` measures it.
RUNS_PER_GPU = 4


def _slots(ray, runs_per_gpu: int = RUNS_PER_GPU) -> int:
    """How many jobs the Ray cluster runs at once (GPUs x runs per GPU when there are GPUs, else CPUs)."""
    resources = ray.cluster_resources()
    gpus = resources.get("GPU", 0)
    return max(1, int(gpus * runs_per_gpu) if gpus else int(resources.get("CPU", 1)))


def _resources(runs_per_gpu: int = RUNS_PER_GPU) -> dict:
    import torch

    return ({"num_gpus": 1 / runs_per_gpu, "num_cpus": 0} if torch.cuda.is_available() else {"num_cpus": 1})


def execute(jobs: list[Job], out_dir: str, executor: str = "ray", address: str | None = None) -> list[dict]:
    """Run notebook jobs (independent of each other)."""
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    progress = Progress(len(jobs), "notebook")
    if executor == "local":
        for job in jobs:
            progress.set_running(1)
            progress.report(run_job(job, out_dir))
    elif executor == "ray":
        ray = _start_ray(address)
        remote = ray.remote(**_resources())(run_job)
        pending = {remote.remote(job, out_dir): job for job in jobs}
        while pending:
            progress.set_running(min(len(pending), _slots(ray)))
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                job = pending.pop(ref)
                try:
                    progress.report(ray.get(ref))
                except Exception as err:  # the worker itself died
                    progress.report({"job": job.name, "ok": False, "error": _summary(err), "seconds": 0.0})
    else:
        raise ValueError(f"unknown executor {executor!r}; accepted: local, ray")
    return progress.close()


def execute_runs(configs: list, executor: str = "ray", address: str | None = None, root=None,
                 runs_per_gpu: int = RUNS_PER_GPU) -> list[dict]:
    """Compute the runs the store lacks; `configs` are in dependency order (plan_runs)."""
    from .runs import Run

    from .plan import weights_needed

    root = Path(root or paths.runs_root())
    needed = weights_needed(configs)
    runs = [Run(c, root) for c in configs]
    for run in runs:
        run.release_stale_lock()
    todo = [run.config for run in runs if not run.done or (run.key in needed and run.lacks_weights())]
    progress = Progress(len(todo), "run")
    failed: set[str] = set()

    def blocked_by(config) -> str | None:
        return next((d.key() for d in config.dependencies() if d.key() in failed), None)

    if not todo:
        pass  # nothing to compute: no Ray instance to start
    elif executor == "local":
        for config in todo:
            started, key, dependency = time.time(), config.key(), blocked_by(config)
            if dependency:
                failed.add(key)
                progress.report({"job": key, "ok": False, "error": f"dependency {dependency} failed",
                                 "seconds": 0.0})
                continue
            try:
                progress.set_running(1)
                seconds = compute_run(config.model_dump_json(), str(root), key in needed)
                progress.report({"job": key, "ok": True, "error": None, "seconds": seconds})
            except Exception as err:  # reported; independent runs go on
                failed.add(key)
                progress.report({"job": key, "ok": False, "error": _summary(err),
                                 "seconds": time.time() - started})
    elif executor == "ray":
        ray = _start_ray(address)
        remote = ray.remote(max_retries=0, **_resources(runs_per_gpu))(compute_run)
        refs, pending = {}, {}
        for config in todo:  # dependencies first, so their refs exist
            waits = [refs[d.key()] for d in config.dependencies() if d.key() in refs]
            refs[config.key()] = remote.remote(config.model_dump_json(), str(root), config.key() in needed, *waits)
            pending[refs[config.key()]] = config
        finished = set()
        while pending:
            startable = [c for c in pending.values()
                         if all(d.key() in finished or d.key() not in refs for d in c.dependencies())]
            progress.set_running(min(len(startable), _slots(ray, runs_per_gpu)))
            ready, _ = ray.wait(list(pending), num_returns=1)
            for ref in ready:
                config = pending.pop(ref)
                key = config.key()
                finished.add(key)
                try:
                    progress.report({"job": key, "ok": True, "error": None, "seconds": ray.get(ref)})
                except Exception as err:
                    failed.add(key)
                    dependency = blocked_by(config)
                    error = f"dependency {dependency} failed" if dependency else _summary(err)
                    progress.report({"job": key, "ok": False, "error": error, "seconds": 0.0})
    else:
        raise ValueError(f"unknown executor {executor!r}; accepted: local, ray")
    return progress.close()


# --- command line -------------------------------------------------------------------------

def add_arguments(parser) -> None:
    parser.add_argument("notebooks", nargs="+", help="book/*.ipynb to sweep")
    parser.add_argument("--params", default="params/toy.yaml", help="params file (default params/toy.yaml)")
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE", help="params overrides")
    parser.add_argument("--by", choices=["runs", "notebooks"], default="runs",
                        help="one job per run (default) or per (notebook, seed, sparsity) via papermill")
    parser.add_argument("--out", default="book/_executed", help="--by notebooks: where executed notebooks go")
    parser.add_argument("--executor", choices=["ray", "local"], default=os.environ.get("SRNETS_EXECUTOR", "ray"),
                        help="ray (default: a local instance, or --address) or local (in this process)")
    parser.add_argument("--address", default=None, help="Ray cluster address, e.g. ray://head:10001 or auto")
    parser.add_argument("--runs-per-gpu", type=int, default=RUNS_PER_GPU,
                        help=f"runs sharing one GPU (Ray fractional GPUs; default {RUNS_PER_GPU}, measured on an H100)")


def main(args) -> int:
    if args.by == "notebooks":
        jobs = plan(args.notebooks, args.params, args.set)
        print(f"sweep: {len(jobs)} notebook jobs, executor {args.executor}, run store {paths.runs_root()}")
        results = execute(jobs, args.out, args.executor, args.address)
    else:
        from .models import check_backbones

        configs = plan_runs(args.notebooks, args.params, args.set)
        check_backbones(configs)
        print(f"sweep: {len(configs)} runs behind {len(args.notebooks)} notebooks, executor "
              f"{args.executor}, run store {paths.runs_root()}")
        results = execute_runs(configs, args.executor, args.address, runs_per_gpu=args.runs_per_gpu)
    failed = [r for r in results if not r["ok"]]
    print(f"sweep: {len(results) - len(failed)} computed, {len(failed)} failed")
    return 1 if failed else 0
