"""Executors compute the runs of a RunGraph that the store lacks, dependencies first: one after
another in this process (`LocalExecutor`) or as Ray tasks that wait for the runs they read
(`RayExecutor`: a local instance started in-process, or a cluster). Both take a graph and only
that, write the same store, report each run's outcome, and let independent runs go on when one
fails (its dependents are reported as failed too)."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

from tqdm.auto import tqdm

from srnets_lib import paths
from srnets_lib.data import inputs
from srnets_lib.data.local import DataFileError
from srnets_lib.model.backbones import check_backbones
from srnets_lib.settings.config import RunConfig
from srnets_lib.settings.request import Request
from srnets_lib.store.result import RunResult
from srnets_lib.store.runs import Run
from srnets_lib.sweeps.graph import Node, RunGraph
from srnets_lib.training.fit import execute as execute_run


@dataclass
class RunOutcome:
    job: str  # the run's key (or a notebook job's name)
    ok: bool
    error: str | None = None
    seconds: float = 0.0


def pending(graph: RunGraph, root: Path) -> list[Node]:
    """The nodes whose stored result does not serve their request, and the runs built on them
    (each computed again only if what it read changed: fit.execute), dependencies first; a
    finished one is named with why it is computed again (a damaged file, a request it does not
    cover, a dependency computed again since)."""
    todo, waiting = [], set()
    for node in graph:
        run = Run(node.config, root)
        run.release_stale_lock()
        why = run.why_not(node.request)
        if why is not None or any(d in waiting for d in graph.dependencies(node)):
            todo.append(node)
            waiting.add(node.key)
            if run.done and why is not None:
                print(f"run {node.key} is computed again: {why}", file=sys.stderr)
    return todo


def compute_run(config_json: str, request_json: dict, root: str, *dependencies) -> float:
    """One run (a Ray task or a local call); returns its seconds. `dependencies` only make Ray
    wait for them."""
    started = time.time()
    config = RunConfig.model_validate_json(config_json)
    execute_run(config, Run(config, Path(root)), Request.from_json(request_json))
    return time.time() - started


def summary(err: BaseException) -> str:
    err = getattr(err, "cause", None) or err  # a Ray task's error: the run's own exception, without Ray's traceback
    lines = f"{type(err).__name__}: {err}".strip().splitlines()
    return "\n".join(lines[-8:]) or traceback.format_exc()


class Progress:
    """A tqdm bar with done / running / waiting / failed counts; failures are printed as they happen."""

    def __init__(self, total: int, unit: str, enabled: bool = True):
        self.total, self.outcomes, self.running = total, [], 0
        self.bar = tqdm(total=total, desc="sweep", unit=unit, disable=not enabled)
        self._postfix()

    def _postfix(self):
        failed = sum(not o.ok for o in self.outcomes)
        self.bar.set_postfix(done=len(self.outcomes) - failed, running=self.running, failed=failed,
                             waiting=self.total - len(self.outcomes) - self.running)

    def set_running(self, count: int) -> None:
        self.running = count
        self._postfix()

    def report(self, outcome: RunOutcome) -> None:
        self.outcomes.append(outcome)
        self.running = min(self.running, self.total - len(self.outcomes))
        self._postfix()
        self.bar.update(1)
        if not outcome.ok:
            tqdm.write(f"FAILED {outcome.job}: {outcome.error}")

    def close(self) -> list[RunOutcome]:
        self.bar.close()
        return self.outcomes


class LocalExecutor:
    """In this process, one run after another. `raise_errors`: stop at the first failure and
    raise it (a single run's caller wants the error itself)."""

    def __init__(self, progress: bool = True, raise_errors: bool = False):
        self.progress, self.raise_errors = progress, raise_errors

    def run(self, graph: RunGraph, root: Path) -> list[RunOutcome]:
        todo = pending(graph, root)
        progress, failed = Progress(len(todo), "run", self.progress and bool(todo)), set()
        for node in todo:
            started, blocker = time.time(), next((d for d in graph.dependencies(node) if d in failed), None)
            if blocker:
                failed.add(node.key)
                progress.report(RunOutcome(node.key, False, f"dependency {blocker} failed"))
                continue
            try:
                progress.set_running(1)
                seconds = compute_run(node.config.model_dump_json(), node.request.to_json(), str(root))
                progress.report(RunOutcome(node.key, True, None, seconds))
            except Exception as err:  # reported; independent runs go on
                if self.raise_errors:
                    progress.close()
                    raise
                failed.add(node.key)
                progress.report(RunOutcome(node.key, False, summary(err), time.time() - started))
        return progress.close()


# Runs placed on one GPU at once (Ray fractional GPUs). Measured on an H100 (bench --sharing 1 2 4,
# docs/MEASUREMENTS.md): four compiled BERT-base mask-training runs trained at 1.01x the
# throughput of one, each using 2.2 GB: CUDA-graph steps of separate processes take turns. Four
# cost nothing, and a run's CPU phases (data, evaluation bookkeeping, checkpoints) and an eager
# run's gaps between kernels leave the GPU to the others.
RUNS_PER_GPU = 4
TRANSIENT_RETRIES = 2  # Ray tasks whose worker process died are run again this many times


# what the driver's environment says that the workers (on other nodes too) must see alike: this
# project's settings ($SRNETS_*: the run store, the hub mirror, checkpoint interval, compiling) and the
# hub's (offline flags, cache, endpoint)
WORKER_ENVIRONMENT = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE", "HF_HOME", "HF_ENDPOINT")


def start_ray(address: str | None):
    """Ray, started here or joined at `address`; its tasks get this process's SRNETS_* and hub
    settings (WORKER_ENVIRONMENT: a cluster's nodes were started elsewhere, with other environments)
    and its run store."""
    import ray

    shared = {k: v for k, v in os.environ.items() if k.startswith("SRNETS_") or k in WORKER_ENVIRONMENT}
    ray.init(address=address, ignore_reinit_error=True, log_to_driver=False, include_dashboard=False,
             runtime_env={"env_vars": {**shared, "SRNETS_RUNS": str(paths.runs_root())}})
    return ray


def ray_slots(ray, runs_per_gpu: int = RUNS_PER_GPU) -> int:
    """How many jobs the Ray cluster runs at once (GPUs x runs per GPU when there are GPUs, else CPUs)."""
    resources = ray.cluster_resources()
    gpus = resources.get("GPU", 0)
    return max(1, int(gpus * runs_per_gpu) if gpus else int(resources.get("CPU", 1)))


def ray_resources(runs_per_gpu: int = RUNS_PER_GPU) -> dict:
    import torch

    return {"num_gpus": 1 / runs_per_gpu, "num_cpus": 0} if torch.cuda.is_available() else {"num_cpus": 1}


class RayExecutor:
    """Ray tasks, one per run, each waiting for the runs it reads; independent runs in parallel."""

    def __init__(self, address: str | None = None, runs_per_gpu: int = RUNS_PER_GPU, progress: bool = True):
        self.address, self.runs_per_gpu, self.progress = address, runs_per_gpu, progress

    def run(self, graph: RunGraph, root: Path) -> list[RunOutcome]:
        todo = pending(graph, root)
        progress = Progress(len(todo), "run", self.progress)
        if not todo:  # nothing to compute: no Ray instance to start
            return progress.close()
        caller = signal.getsignal(signal.SIGTERM)
        ray = start_ray(self.address)
        # ray.init installs a C++ SIGTERM handler (a stack dump, then abort), and a Python handler
        # raising inside ray.wait's native code surfaces as a SystemError: where the caller handles
        # SIGTERM in Python (the sweep: stop with one line), a flag is set here and the caller's
        # handler is called between waits
        stopping = threading.Event()
        ours = callable(caller) and threading.current_thread() is threading.main_thread()
        if ours:
            signal.signal(signal.SIGTERM, lambda signum, frame: stopping.set())
        # a worker that died (killed, out of memory, a lost node) is retried and the run resumes from
        # its checkpoint; an exception of the run itself (bad input, a diverged loss) is not retried
        remote = ray.remote(max_retries=TRANSIENT_RETRIES, retry_exceptions=False,
                            **ray_resources(self.runs_per_gpu))(compute_run)
        refs, pending_refs = {}, {}
        for node in todo:  # dependencies first, so their refs exist
            waits = [refs[d] for d in graph.dependencies(node) if d in refs]
            refs[node.key] = remote.remote(node.config.model_dump_json(), node.request.to_json(), str(root), *waits)
            pending_refs[refs[node.key]] = node

        def check():
            if stopping.is_set():
                caller(signal.SIGTERM, None)

        try:
            self._collect(ray, graph, refs, pending_refs, progress, check)
        except BaseException:  # SIGTERM, Ctrl-C: leave Ray, which ends this driver's tasks with it
            # (no ray.cancel(force=True) first: a cancel racing a task's reply aborts the driver in
            # Ray's C++ core, "Check failed: it != submissible_tasks_.end()", ray-project/ray#54738)
            ray.shutdown()
            raise
        finally:
            if ours:
                signal.signal(signal.SIGTERM, caller)
        return progress.close()

    def _collect(self, ray, graph: RunGraph, refs: dict, pending_refs: dict, progress: Progress, check) -> None:
        """Report each task as it ends, dependents of a failed run as failed; `check()` between
        waits (it raises to stop)."""
        finished, failed = set(), set()
        while pending_refs:
            startable = [n for n in pending_refs.values()
                         if all(d in finished or d not in refs for d in graph.dependencies(n))]
            progress.set_running(min(len(startable), ray_slots(ray, self.runs_per_gpu)))
            ready, _ = ray.wait(list(pending_refs), num_returns=1, timeout=1.0)
            check()
            for ref in ready:
                node = pending_refs.pop(ref)
                finished.add(node.key)
                try:
                    progress.report(RunOutcome(node.key, True, None, ray.get(ref)))
                except Exception as err:
                    failed.add(node.key)
                    blocker = next((d for d in graph.dependencies(node) if d in failed), None)
                    progress.report(RunOutcome(node.key, False, f"dependency {blocker} failed" if blocker
                                            else summary(err)))


def check_inputs(configs, skip_ood=()) -> None:
    """Before any run starts: every input the runs of `configs` (and their dependencies) read is
    there and is the published file (data/inputs.py: files with their rows counted, hub datasets,
    the authors' bias predictions) and every backbone loads (backbones.check_backbones); else one
    error naming each missing or wrong input."""
    lines = inputs.missing(configs, skip_ood, reach=True)
    if lines:
        raise DataFileError("the runs asked for read inputs that are missing or not the published files:\n- "
                            + "\n- ".join(lines))
    check_backbones(configs)


def execute(config: RunConfig, request: Request | None = None, root: Path | None = None) -> RunResult:
    """Compute one run and what it depends on, in this process; raise the first failure."""
    root = Path(root) if root is not None else paths.runs_root()
    request = request or Request()
    graph = RunGraph(Request(eval_batch_size=request.eval_batch_size))  # what dependencies keep: needs()
    graph.add(config, request)
    check_backbones([config])
    LocalExecutor(progress=False, raise_errors=True).run(graph, root)
    return Run(config, root).result()
