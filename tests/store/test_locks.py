"""The lock rules of store/locks.py, one test each: a lock records host, pid, Ray node and task; a
lock of an earlier attempt of the Ray task that reads it is taken over at once; a lock whose Ray
node Ray reports dead is taken over at once; a lock of this host whose process is gone is
taken over; a lock whose heartbeat is older than the stale limit is stale whatever its pid (this
host: taken over, saying so; another host without a Ray node Ray reports dead: refused naming its
path and the `rm`). The lost node of another host, for real: tests/sweeps/test_cluster.py."""

import os
import socket
import subprocess
import sys
import threading
import time

import pytest

from srnets_lib import paths
from srnets_lib.settings.config import RunConfig
from srnets_lib.store import locks
from srnets_lib.store.runs import Run, RunBusy

HERE = socket.gethostname()
NODE = "a" * 56  # a Ray node id's form


@pytest.fixture
def run(tmp_path) -> Run:
    run = Run(RunConfig(task="nli", seed=1), tmp_path)
    run.dir.mkdir(parents=True)
    return run


def held(run: Run, text: str, age: float = 0.0):
    lock = run.file(paths.LOCK)
    lock.write_text(text)
    os.utime(lock, (time.time() - age, time.time() - age))
    return lock


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_lock_records_host_pid_and_ray_node_and_earlier_locks_still_read():
    assert locks.Holder.parse(f"gpu-3:4242 ray-node={NODE} ray-task=t1") == locks.Holder("gpu-3", 4242, NODE, "t1")
    assert locks.Holder("gpu-3", 4242, NODE, "t1").text() == f"gpu-3:4242 ray-node={NODE} ray-task=t1"
    assert locks.Holder.parse("gpu-3:4242") == locks.Holder("gpu-3", 4242, None)  # an earlier version's
    assert locks.Holder.parse("") is None and locks.Holder.parse("garbage") is None
    assert locks.Holder.here() == locks.Holder(HERE, os.getpid(), None)  # no Ray in this process
    assert locks.ray_node_alive(NODE) is None  # nothing to ask: the rules below decide


def test_a_lock_whose_ray_node_is_dead_is_taken_over_at_once_on_any_host(run, monkeypatch, capsys):
    """Another host's lock with a fresh heartbeat, its node reported dead by Ray (the seam
    ray_node_alive; for real in test_cluster.py): taken over without waiting, nothing to remove."""
    monkeypatch.setattr(locks, "ray_node_alive", lambda node: {NODE: False}.get(node))
    lock = held(run, f"other-host:123 ray-node={NODE}")
    started = time.time()
    with run.claim(wait=True):
        assert lock.read_text() == f"{HERE}:{os.getpid()}"
    assert time.time() - started < 1 and not lock.exists()
    assert f"its lock {lock} (held by other-host:123 ray-node={NODE}) is taken over: Ray reports its node " \
           f"{NODE} dead" in capsys.readouterr().err
    held(run, f"other-host:123 ray-node={'b' * 56}")  # a node Ray reports alive: the holder is alive
    with pytest.raises(RunBusy, match="is being computed by other-host:123"):
        with run.claim():
            pass


def test_a_lock_of_an_earlier_attempt_of_the_same_ray_task_is_taken_over_at_once(tmp_path):
    """Ray runs a task again, with its task id, once the worker of its earlier attempt died (a worker
    killed or out of memory, its node alive, on any host): the retry takes its lock over at once,
    by this rule before any other. Here the first attempt claims the run and dies holding it."""
    ray = pytest.importorskip("ray")
    lock = tmp_path / paths.LOCK

    def attempt(lock):
        import os

        from srnets_lib.store import locks

        if not lock.exists():  # the first attempt: claim, then die holding the lock
            with locks.claim(lock, "the-run", lock.parent):
                os._exit(1)
        state = locks.lock_state(lock)
        with locks.claim(lock, "the-run", lock.parent):
            mine = lock.read_text()
        return state.name, state.why, state.holder, mine

    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
    try:
        name, why, first, second = ray.get(ray.remote(max_retries=1, retry_exceptions=False)(attempt).remote(lock))
    finally:
        ray.shutdown()
    assert name == "taken" and why.startswith("an earlier attempt of this Ray task wrote it")
    first, second = locks.Holder.parse(first), locks.Holder.parse(second)
    assert first.task == second.task is not None and first.node == second.node is not None
    assert first.pid != second.pid and not lock.exists()


def test_a_lock_of_this_host_whose_process_is_gone_is_taken_over(run, capsys):
    lock = held(run, f"{HERE}:{dead_pid()} ray-node={NODE}")  # Ray cannot be asked here: the pid decides
    with run.claim():
        assert lock.read_text() == f"{HERE}:{os.getpid()}"
    assert "no longer runs" in capsys.readouterr().err


def test_a_lock_untouched_for_an_hour_is_taken_over_on_this_host_whatever_its_pid(run, monkeypatch, capsys):
    """Its pid runs (reused since by another process, here pid 1), but no holder has beaten for an
    hour: taken over at once, with a line saying whose lock and why (it was waited on forever)."""
    monkeypatch.setattr(locks, "WAIT_POLL_SECONDS", 0.02)
    assert locks.pid_running(1)
    lock = held(run, f"{HERE}:1", age=3600)
    with run.claim(wait=True):
        assert lock.read_text() == f"{HERE}:{os.getpid()}"
    err = capsys.readouterr().err
    assert f"its lock {lock} (held by {HERE}:1) is taken over: it has had no heartbeat for 3600 s (pid 1 runs" in err
    held(run, f"{HERE}:1", age=locks.STALE_SECONDS - 30)  # within the limit: a live holder
    with pytest.raises(RunBusy, match="being computed"):
        with run.claim():
            pass


@pytest.mark.parametrize("holder", ["other-host:123", f"other-host:123 ray-node={NODE}"])
def test_another_hosts_stale_lock_is_refused_naming_its_path_and_the_rm(run, holder):
    """Another host's pid cannot be asked, and Ray (not reachable here, or not reporting the node
    dead) does not say it is gone: refused, never taken over."""
    lock = held(run, holder, age=locks.STALE_SECONDS + 5)
    with pytest.raises(RunBusy, match=rf"run {run.key}: its lock {lock} \(held by {holder}\) is stale: it has had "
                                      rf"no heartbeat for 30\d s; if that process is gone, clear it: rm {lock}"):
        with run.claim(wait=True):
            pass
    assert lock.read_text() == holder


def test_waiting_on_another_host_says_how_the_lock_clears(run, monkeypatch, capsys):
    """Without a Ray node: the rm if that host is gone; with one: taken over once Ray reports it dead."""
    monkeypatch.setattr(locks, "WAIT_POLL_SECONDS", 0.02)
    lock = run.file(paths.LOCK)
    for holder, says in [("other-host:123", f"if that host is gone, clear it: rm {lock})"),
                         (f"other-host:123 ray-node={NODE}", "taken over once Ray reports its node dead)")]:
        held(run, holder)
        threading.Timer(0.2, lock.unlink).start()  # the holder finishes
        with run.claim(wait=True):
            pass
        [line] = [line for line in capsys.readouterr().err.splitlines() if "waiting for it" in line]
        assert line.startswith(f"run {run.key} is being computed by {holder}: waiting for it (its lock {lock}")
        assert line.endswith(says)


def test_a_lock_without_a_holder_is_taken_over_after_ten_seconds(run):
    lock = held(run, "")
    assert locks.lock_state(lock).name == "alive"  # just created, not yet written
    os.utime(lock, (time.time() - locks.UNWRITTEN_SECONDS - 1,) * 2)
    assert locks.lock_state(lock).name == "taken"


def test_a_holder_whose_lock_was_taken_over_leaves_the_new_holders_lock_alone(run, monkeypatch, capsys):
    """A holder that stopped beating (suspended) and wakes after its lock was taken over neither
    touches it (which would keep it looking alive) nor removes it when it ends."""
    monkeypatch.setattr(locks, "HEARTBEAT_SECONDS", 0.02)
    lock = run.file(paths.LOCK)
    with run.claim():
        lock.write_text("other-host:77")  # taken over meanwhile
        os.utime(lock, (1.0, 1.0))
        time.sleep(0.2)
    assert lock.read_text() == "other-host:77" and lock.stat().st_mtime == 1.0
    assert f"the lock {lock} was taken over by other-host:77" in capsys.readouterr().err
