"""The run store's per-run lock: one live holder at a time, touched while held (a heartbeat); a
process that needs the run waits for a live holder; a dead holder's lock is taken over; another
host's lock whose heartbeat stopped is reported with the command that clears it."""

import os
import socket
import subprocess
import sys
import threading
import time

import pytest

from srnets_lib import paths, runs
from srnets_lib.config import DataConfig, RunConfig
from srnets_lib.runs import Run, RunBusy


def write_lock(run: Run, pid: int, host: str | None = None) -> None:
    run.dir.mkdir(parents=True, exist_ok=True)
    run.file(paths.LOCK).write_text(f"{host or socket.gethostname()}:{pid}")


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_live_holder_keeps_the_run(tmp_path):
    run = Run(RunConfig(task="nli", seed=1), tmp_path)
    write_lock(run, os.getpid())
    with pytest.raises(RunBusy, match="being computed"):
        with run.claim():
            pass
    assert run.file(paths.LOCK).exists()


def test_a_dead_holders_lock_is_taken_over_and_released(tmp_path):
    run = Run(RunConfig(task="nli", seed=1), tmp_path)
    write_lock(run, dead_pid())
    with run.claim():
        assert run.file(paths.LOCK).read_text() == f"{socket.gethostname()}:{os.getpid()}"
    assert not run.file(paths.LOCK).exists()


def test_a_process_that_needs_a_live_holders_run_waits_for_it(tmp_path, monkeypatch):
    monkeypatch.setattr(runs, "WAIT_POLL_SECONDS", 0.02)
    run = Run(RunConfig(task="nli", seed=1), tmp_path)
    write_lock(run, os.getpid())
    threading.Timer(0.3, run.file(paths.LOCK).unlink).start()  # the holder finishes
    started = time.time()
    with run.claim(wait=True):
        assert run.file(paths.LOCK).read_text() == f"{socket.gethostname()}:{os.getpid()}"
    assert time.time() - started >= 0.3 and not run.file(paths.LOCK).exists()


def test_another_hosts_lock_is_alive_while_it_beats_and_stale_after(tmp_path):
    run = Run(RunConfig(task="nli", seed=1), tmp_path)
    write_lock(run, 123, host="other-host")
    with pytest.raises(RunBusy, match="being computed by other-host:123"):
        with run.claim():
            pass
    lock = run.file(paths.LOCK)
    old = time.time() - runs.STALE_SECONDS - 1
    os.utime(lock, (old, old))
    with pytest.raises(RunBusy, match=rf"no heartbeat for 30\d s; if that process is gone, clear it: rm {lock}"):
        with run.claim(wait=True):
            pass
    assert lock.exists()  # never taken over: the other host cannot be asked


def test_a_held_lock_is_touched_while_the_run_computes(tmp_path, monkeypatch):
    monkeypatch.setattr(runs, "HEARTBEAT_SECONDS", 0.02)
    run = Run(RunConfig(task="nli", seed=1), tmp_path)
    with run.claim():
        lock = run.file(paths.LOCK)
        os.utime(lock, (1.0, 1.0))
        time.sleep(0.2)
        assert time.time() - lock.stat().st_mtime < 1.0


def test_two_processes_asking_for_one_run_compute_it_once(store):
    """A second sweep on the same store waits for the run the first is computing, then reads it."""
    from srnets_lib.executors import execute

    config = RunConfig(task="nli", backbone="tiny", epochs=3, max_length=32, batch_size=8, eval_interval=4,
                       data=DataConfig(train_size=96, dev_size=32, ood_size=32))
    other = subprocess.Popen([sys.executable, "-c", "import sys; from srnets_lib.config import RunConfig; "
                              "from srnets_lib.executors import execute; "
                              "execute(RunConfig.model_validate_json(sys.argv[1]))", config.model_dump_json()],
                             env={**os.environ, "SRNETS_RUNS": str(store)})
    lock = Run(config).file(paths.LOCK)
    while not lock.exists():
        assert other.poll() is None, "the other process ended before claiming the run"
        time.sleep(0.01)
    result = execute(config)  # waits for the other process
    assert other.wait() == 0
    written = Run(config).file(paths.FINAL).stat().st_mtime_ns
    assert result == Run(config).result() and Run(config).file(paths.FINAL).stat().st_mtime_ns == written
    assert len(Run(config).file(paths.METRICS).read_text().splitlines()) == 3 * 96 // 8 // 4  # one training


def test_a_corrupted_result_is_computed_again_and_shown_as_missing_meanwhile(store):
    from srnets_lib.executors import execute
    from srnets_lib.sections import Point, gather

    config = RunConfig(task="nli", backbone="tiny", epochs=1, max_length=32, batch_size=8, eval_interval=4,
                       data=DataConfig(train_size=32, dev_size=16, ood_size=16))
    first = execute(config)
    final = Run(config).file(paths.FINAL)
    final.write_text(final.read_text()[:40])  # cut short
    point = Point("full", "nli", 1, 0.0, config)
    assert gather.missing([point]) == [point] and gather.frame([point]).empty
    with pytest.raises(ValueError, match=rf"{final}: not a valid result"):
        Run(config).result()
    again = execute(config)  # computed again, to the same result
    assert again.model_dump(exclude={"seconds"}) == first.model_dump(exclude={"seconds"})


def test_a_full_disk_leaves_no_temporary_file_and_names_the_file(tmp_path, monkeypatch):
    import errno

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    target = tmp_path / "final.json"
    with pytest.raises(OSError, match=rf"could not write {target} \(No space left on device\)"):
        runs.atomic_write(target, "{}")
    assert list(tmp_path.iterdir()) == []


def test_an_unwritable_store_is_one_line_naming_it(tmp_path, monkeypatch, capsys):
    """Root ignores a read-only folder, so the refusal is faked where the lock is created."""
    from srnets_lib.__main__ import main

    def refused(lock):
        raise PermissionError(13, "Permission denied", str(lock))

    monkeypatch.setattr(runs, "_create", refused)
    monkeypatch.setenv("SRNETS_RUNS", str(tmp_path / "runs"))
    assert main(["run", "params/toy.yaml", "task=nli", "backbone=tiny", "data.train_size=16"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: [Errno 13] the run store {tmp_path / 'runs'} is not writable (Permission denied")
    assert "set SRNETS_RUNS to a folder you can write" in err and len(err.strip().splitlines()) == 1
