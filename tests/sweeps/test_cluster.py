"""A sweep on a Ray cluster of two nodes on this machine (ray.cluster_utils.Cluster: a head and a
worker node of one CPU each, joined with --address as the README's `ray start` cluster is), the
run store shared as nodes share a filesystem: both nodes compute runs, none is computed twice,
and the pages gather them. A worker node on another host (its own UTS namespace: its own
hostname) killed while it computes a run: Ray reports the node dead, the run is retried on the
head, takes over the dead node's lock at once, resumes from its checkpoint, and nothing
half-written counts as finished. Each run records where it was computed (final.json's execution
record) and every start or resumption (attempts.jsonl)."""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from srnets_lib.settings import params
from srnets_lib import paths
from srnets_lib.store import locks
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
    return [Run(node.config, store).why_not(node.request) for node in graph]


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
    assert page.results.missing == [] and len(page.results.frame) == len(page.results.points)
    print(f"two-node sweep: {time.time() - started:.0f} s")


OTHER_HOST = "srnets-other-host"  # the hostname of the worker node's own UTS namespace


class NodeOnAnotherHost:
    """A Ray worker node joined to the head at `address` as another machine's would be (`ray start
    --address ... --block`), in its own UTS namespace: its processes see the hostname OTHER_HOST, so
    this host cannot tell whether a pid of theirs runs (the lock rules for another host apply). `kill`
    SIGKILLs every process of the namespace at once, as a machine that loses power."""

    def __init__(self, cluster):
        unshare = next((cmd for cmd in (["unshare", "--uts"], ["unshare", "--user", "--map-root-user", "--uts"])
                        if shutil.which("unshare") and subprocess.run([*cmd, "true"], capture_output=True).returncode == 0),
                       None)
        if unshare is None:
            pytest.skip("unshare --uts is refused here (no root, no user namespaces): no second host")
        ray_cli = str(Path(sys.executable).with_name("ray"))
        self.proc = subprocess.Popen([*unshare, "sh", "-c", f'hostname {OTHER_HOST} && exec "$0" "$@"', ray_cli,
                                      "start", "--address", cluster.address, "--num-cpus", "1", "--block",
                                      "--disable-usage-stats"],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.node_id, started = None, time.time()
        while self.node_id is None:
            assert self.proc.poll() is None, "ray start on the other host failed:\n" + self.proc.stdout.read()[-2000:]
            assert time.time() - started < 60, "the other host's node did not join the head in 60 s"
            self.node_id = next((n["NodeID"] for n in cluster.global_state.node_table()
                                 if n["NodeManagerHostname"] == OTHER_HOST and n["Alive"]), None)
            time.sleep(0.2)
        self.namespace = os.readlink(f"/proc/{self.proc.pid}/ns/uts")

    def processes(self) -> list[int]:
        found = []
        for entry in Path("/proc").iterdir():
            try:
                if entry.name.isdigit() and os.readlink(entry / "ns" / "uts") == self.namespace:
                    found.append(int(entry.name))
            except OSError:  # ended meanwhile, or not ours to read
                pass
        return found

    def kill(self) -> None:
        while members := self.processes():
            for pid in members:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.05)
        self.proc.wait()


@contextmanager
def head_and_another_host():
    pytest.importorskip("ray")
    from ray.cluster_utils import Cluster

    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    other = None
    try:
        other = NodeOnAnotherHost(cluster)
        yield cluster, other
    finally:
        if other is not None:
            other.kill()
        cluster.shutdown()


def judged_in_the_cluster(cluster, lock, node: str) -> tuple[str, str]:
    """locks.lock_state of `lock` from a driver connected to the cluster (what a later sweep sees),
    once Ray reports `node` dead: its health checks take some seconds to miss a killed node, and a
    sweep resumed from a checkpoint can end before that (until then the lock is alive, by rule 4)."""
    import ray

    ray.init(address=cluster.address, log_to_driver=False)
    try:
        deadline = time.time() + 120
        while locks.ray_node_alive(node) is not False and time.time() < deadline:
            time.sleep(0.5)
        state = locks.lock_state(lock)
    finally:
        ray.shutdown()
    return state.name, state.why


def test_a_node_of_another_host_killed_mid_run_has_its_run_resumed_on_the_head(store, tiny_params):
    """The worker node runs on "another host": its lock names that host, its pid, its Ray node and
    task, and the head cannot see its processes. Killed while it computes a run, the run's retry on
    the head (the same Ray task) takes the lock over at once (not after the stale limit, and with
    nothing to remove by hand) and resumes from the checkpoint the other host left; any other
    process (a later sweep) would take it over as Ray reports the node dead."""
    longer = "epochs=40"  # runs of a few seconds: one is caught on the other host after a checkpoint
    started, killed = time.time(), None
    with head_and_another_host() as (cluster, other):
        head = cluster.head_node.node_id
        proc = start_sweep(cluster, store, tiny_params, "--set", longer)
        while killed is None and proc.poll() is None and time.time() - started < 240:
            for lock in store.glob("*/.lock"):
                try:
                    where, held = attempts(lock.parent)[-1], lock.read_text()
                except (OSError, IndexError, ValueError):  # not yet written, or just finished
                    continue
                if where["host"] == OTHER_HOST and (lock.parent / paths.CHECKPOINT).is_file():
                    other.kill()  # the node, its raylet and its workers
                    killed, killed_at = lock.parent, time.time()
                    break
            time.sleep(0.05)
        out, _ = proc.communicate(timeout=300)
        logs = "".join(p.read_text(errors="replace") for p in
                       (Path(cluster.head_node.get_session_dir_path()) / "logs").glob("worker-*.err"))
        if killed is not None:  # the lock as the dead node left it, judged by a process that is not its retry
            left = killed / "left.lock"
            left.write_text(held)
            judged = judged_in_the_cluster(cluster, left, other.node_id)
            left.unlink()
    assert killed is not None, "no run was caught on the other host: the sweep ended first\n" + out[-2000:]
    assert proc.returncode == 0 and "5 computed, 0 failed" in out, out[-3000:]
    first, resumed = attempts(killed)
    assert (first["host"], first["node"]) == (OTHER_HOST, other.node_id)
    assert held.startswith(f"{OTHER_HOST}:{first['pid']} ray-node={other.node_id} ray-task=")  # what it recorded
    assert (resumed["host"], resumed["node"]) == (socket.gethostname(), head) and computed_by(killed) == head
    assert resumed["resumed_at"] is not None and resumed["resumed_at"] > 0  # from its checkpoint
    taken_after = time.mktime(time.strptime(resumed["at"], "%Y-%m-%d %H:%M:%S")) - killed_at
    assert taken_after < locks.STALE_SECONDS / 3, f"resumed {taken_after:.0f} s after the kill"
    # the retry (the same Ray task) took the lock over at once; any other process: as its node is dead
    assert f"(held by {held}) is taken over: an earlier attempt of this Ray task wrote it" in logs
    assert judged == ("taken", f"Ray reports its node {other.node_id} dead")
    others = [run for run in store.glob("*-*-*-*") if run != killed]
    assert len(others) == 4 and all(len(attempts(run)) == 1 for run in others)
    assert served(store, tiny_params, longer) == [None] * 5  # every result whole, its files as recorded
    assert not list(store.glob("*/.lock")) and not list(store.glob(f"*/{paths.CHECKPOINT}"))
    print(f"sweep with a node of another host killed: {time.time() - started:.0f} s "
          f"(resumed on the head {taken_after:.0f} s after the kill)")
