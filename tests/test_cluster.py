"""A sweep on a Ray cluster of two nodes on this machine (ray.cluster_utils.Cluster: a head and a
worker node of one CPU each, joined with --address as the README's `ray start` cluster is), the
run store shared as nodes share a filesystem: both nodes compute runs, none is computed twice,
and the pages gather them. A worker node killed while it computes a run: the run is retried on
the other node, resumes from its checkpoint, and nothing half-written counts as finished. Each
run records where it was computed (final.json's execution record) and every start or resumption
(attempts.jsonl)."""

import json
import os
import subprocess
import sys
import time
from contextlib import contextmanager

import pytest

from srnets_lib.settings import params
from srnets_lib import paths
from srnets_lib.store.runs import Run
from srnets_lib.book import runs as book_runs

NOTEBOOK = "book/sec4_4.ipynb"  # five runs, one of which starts from another's weights


@contextmanager
def two_nodes():
    pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    try:
        worker = cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        yield cluster, cluster.head_node.node_id, worker
    finally:
        cluster.shutdown()


def start_sweep(cluster, store, tiny_params, *extra) -> subprocess.Popen:
    # SRNETS_CHECKPOINT_SECONDS reaches the nodes' workers only through the sweep (executors.start_ray)
    env = {**os.environ, "SRNETS_RUNS": str(store), "OMP_NUM_THREADS": "1",
           "SRNETS_CHECKPOINT_SECONDS": "0"}
    return subprocess.Popen([sys.executable, "-m", "srnets_lib", "sweep", NOTEBOOK, "--params", str(tiny_params),
                             "--executor", "ray", "--address", cluster.address, *extra], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def attempts(folder) -> list[dict]:
    """Each start or resumption of the run's computation: host, pid, Ray node, resumed_at."""
    return [json.loads(line) for line in (folder / paths.ATTEMPTS).read_text().splitlines()]


def computed_by(folder) -> str:
    return json.loads((folder / paths.FINAL).read_text())["execution"]["node"]


def served(store, tiny_params, *overrides) -> list:
    """The runs of the sweep's graph, each checked as the next sweep would (None: it serves)."""
    graph, _ = book_runs.of_notebooks([NOTEBOOK], params.load(tiny_params, list(overrides)))
    return [Run(node.config, store).serves(node.request) for node in graph]


def test_a_sweep_on_two_nodes_computes_each_run_once_on_either_and_the_page_gathers_them(store, tiny_params):
    from srnets_lib.book import page as book_page

    started = time.time()
    with two_nodes() as (cluster, head, worker):
        proc = start_sweep(cluster, store, tiny_params)
        out, _ = proc.communicate(timeout=300)
    assert proc.returncode == 0, out[-3000:]
    runs = sorted(store.glob("*-*-*-*"))
    assert len(runs) == 5 and "5 computed, 0 failed" in out
    assert {computed_by(run) for run in runs} == {head, worker.node_id}  # both nodes computed runs
    for run in runs:  # each computed once, from the start, by the node that finished it
        (attempt,) = attempts(run)
        assert attempt["resumed_at"] is None and attempt["node"] == computed_by(run)
    assert served(store, tiny_params) == [None] * 5 and not list(store.glob("*/.lock"))
    page = book_page.load("sec4_4", params_file=str(tiny_params), compute=False)
    assert page.missing == [] and len(page.frame) == len(page.points)
    print(f"two-node sweep: {time.time() - started:.0f} s")


def test_a_worker_node_killed_mid_run_has_its_run_resumed_on_the_other(store, tiny_params):
    longer = "epochs=40"  # runs of a few seconds: one is caught on the worker node after a checkpoint
    started = time.time()
    with two_nodes() as (cluster, head, worker):
        proc = start_sweep(cluster, store, tiny_params, "--set", longer)
        killed = None
        while killed is None and proc.poll() is None and time.time() - started < 240:
            for lock in store.glob("*/.lock"):
                try:
                    where = attempts(lock.parent)[-1]["node"]
                except (OSError, IndexError, ValueError):  # not yet written
                    continue
                if where == worker.node_id and (lock.parent / paths.CHECKPOINT).is_file():
                    cluster.remove_node(worker, allow_graceful=False)  # the node, its raylet and workers
                    killed = lock.parent
                    break
            time.sleep(0.05)
        out, _ = proc.communicate(timeout=300)
    assert killed is not None, "no run was caught on the worker node: the sweep ended first\n" + out[-2000:]
    assert proc.returncode == 0 and "5 computed, 0 failed" in out, out[-3000:]
    first, resumed = attempts(killed)
    assert first["node"] == worker.node_id and resumed["node"] == head == computed_by(killed)
    assert resumed["resumed_at"] is not None and resumed["resumed_at"] > 0  # from its checkpoint
    others = [run for run in store.glob("*-*-*-*") if run != killed]
    assert len(others) == 4 and all(len(attempts(run)) == 1 for run in others)
    assert served(store, tiny_params, longer) == [None] * 5  # every result whole, its files as recorded
    assert not list(store.glob("*/.lock")) and not list(store.glob(f"*/{paths.CHECKPOINT}"))
    print(f"two-node sweep with a node killed: {time.time() - started:.0f} s")
