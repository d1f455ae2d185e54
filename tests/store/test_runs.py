"""The run store's per-run lock: one live holder at a time, touched while held (a heartbeat); a
process that needs the run waits for a live holder; a dead holder's lock is taken over; another
host's lock whose heartbeat stopped is reported with the command that clears it. A finished run's
files are checked against the sizes and checksums final.json records before it serves a request;
a damaged one is named, shown as damaged on the pages, and computed again."""

import os
import socket
import subprocess
import sys
import threading
import time

import pytest
import torch

from srnets_lib import paths
from srnets_lib.store import files, locks
from srnets_lib.settings.config import DataConfig, RunConfig
from srnets_lib.store.runs import Run, RunBusy


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
    monkeypatch.setattr(locks, "WAIT_POLL_SECONDS", 0.02)
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
    old = time.time() - locks.STALE_SECONDS - 1
    os.utime(lock, (old, old))
    with pytest.raises(RunBusy, match=rf"no heartbeat for 30\d s; if that process is gone, clear it: rm {lock}"):
        with run.claim(wait=True):
            pass
    assert lock.exists()  # never taken over: the other host cannot be asked


def test_a_held_lock_is_touched_while_the_run_computes(tmp_path, monkeypatch):
    monkeypatch.setattr(locks, "HEARTBEAT_SECONDS", 0.02)
    run = Run(RunConfig(task="nli", seed=1), tmp_path)
    with run.claim():
        lock = run.file(paths.LOCK)
        os.utime(lock, (1.0, 1.0))
        time.sleep(0.2)
        assert time.time() - lock.stat().st_mtime < 1.0


def test_two_processes_asking_for_one_run_compute_it_once(store):
    """A second sweep on the same store waits for the run the first is computing, then reads it."""
    from srnets_lib.sweeps.executors import execute

    config = RunConfig(task="nli", backbone="tiny", epochs=3, max_length=32, batch_size=8, eval_interval=4,
                       data=DataConfig(train_size=96, dev_size=32, ood_size=32))
    other = subprocess.Popen([sys.executable, "-c", "import sys; from srnets_lib.settings.config import RunConfig; "
                              "from srnets_lib.sweeps.executors import execute; "
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
    from srnets_lib.sweeps.executors import execute
    from srnets_lib.book.sections import Point, gather

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
    same = {"seconds", "files", "execution"}  # its time, its files' zip timestamps, its pid
    assert again.model_dump(exclude=same) == first.model_dump(exclude=same)


def test_a_full_disk_leaves_no_temporary_file_and_names_the_file(tmp_path, monkeypatch):
    import errno

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    target = tmp_path / "final.json"
    with pytest.raises(OSError, match=rf"could not write {target} \(No space left on device\)"):
        files.atomic_write(target, "{}")
    assert list(tmp_path.iterdir()) == []


def test_an_unwritable_store_is_one_line_naming_it(tmp_path, monkeypatch, capsys):
    """Root ignores a read-only folder, so the refusal is faked where the lock is created."""
    from srnets_lib.__main__ import main

    def refused(lock):
        raise PermissionError(13, "Permission denied", str(lock))

    monkeypatch.setattr(locks, "_create", refused)
    monkeypatch.setenv("SRNETS_RUNS", str(tmp_path / "runs"))
    assert main(["run", "params/toy.yaml", "task=nli", "backbone=tiny", "data.train_size=16"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: [Errno 13] the run store {tmp_path / 'runs'} is not writable (Permission denied")
    assert "set SRNETS_RUNS to a folder you can write" in err and len(err.strip().splitlines()) == 1


# --- a store that heals itself: files damaged after a run finished ---------------------------------

def tiny(**fields) -> RunConfig:
    settings = dict(task="nli", backbone="tiny", epochs=1, max_length=32, batch_size=8, eval_interval=4,
                    data=DataConfig(train_size=32, dev_size=16, ood_size=16))
    return RunConfig(**{**settings, **fields})


def cut(path) -> None:
    """An interrupted copy: the file's first half."""
    data = path.read_bytes()
    path.write_bytes(data[:len(data) // 2])


@pytest.mark.parametrize("name", [paths.PREDICTIONS, paths.MASK])
def test_a_damaged_file_of_a_finished_run_is_named_shown_as_damaged_and_computed_again(store, name):
    """final.json records each file's size and CRC-32: a cut file is found when the run is reused,
    the page lists the run as damaged instead of dying on the file, and the next sweep computes it."""
    from srnets_lib.sweeps.executors import execute
    from srnets_lib.settings.request import Request
    from srnets_lib.book.sections import Point, gather

    config = tiny(method="mask", sparsity=0.5)
    first = execute(config)
    path = Run(config).file(name)
    assert {name, paths.FINAL} <= {p.name for p in Run(config).dir.iterdir()}
    cut(path)
    assert str(path) in Run(config).why_not(Request())
    point = Point("mask", "nli", 1, 0.5, config)
    assert gather.missing([point]) == [point] and gather.frame([point]).empty
    assert gather.subsets([point]).empty and gather.masks([point], 0.5) == {}  # no BadZipFile
    why = gather.why_missing(config)
    assert why.startswith("damaged:") and str(path) in why and len(why.splitlines()) == 1
    again = execute(config)  # what the next sweep does: computed again, to the same result
    assert Run(config).serves(Request()) and not gather.missing([point])
    assert again.model_dump(exclude={"seconds", "files", "execution"}) == \
        first.model_dump(exclude={"seconds", "files", "execution"})


def test_a_file_changed_in_place_is_found_by_its_checksum(store):
    from srnets_lib.sweeps.executors import execute
    from srnets_lib.settings.request import Request

    config = tiny(method="mask", sparsity=0.5)
    execute(config)
    path = Run(config).file(paths.PREDICTIONS)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF  # one flipped byte, the size unchanged
    path.write_bytes(bytes(data))
    assert f"{path}: damaged (its CRC-32" in Run(config).why_not(Request())


def test_a_result_written_before_files_were_recorded_is_served_after_reading_them(store):
    """A store of schema version 2 has no sizes or checksums in final.json: its files are checked
    by reading them, so it is still served while whole, and computed again once damaged."""
    import json

    from srnets_lib.sweeps.executors import execute
    from srnets_lib.settings.request import Request

    config = tiny(method="mask", sparsity=0.5)
    execute(config)
    final = Run(config).file(paths.FINAL)
    old = json.loads(final.read_text())
    old.pop("files")
    old["schema_version"] = 2
    old["execution"] = {k: v for k, v in old["execution"].items() if k not in ("host", "pid", "node")}
    final.write_text(json.dumps(old))
    stamp = final.stat().st_mtime_ns
    assert Run(config).serves(Request())
    execute(config)
    assert final.stat().st_mtime_ns == stamp  # served, not recomputed
    cut(Run(config).file(paths.PREDICTIONS))
    assert str(Run(config).file(paths.PREDICTIONS)) in Run(config).why_not(Request())


def test_a_cut_weights_file_is_named_and_its_run_computed_again_so_runs_starting_from_it_run(store):
    from srnets_lib.sweeps.executors import execute

    full = tiny()
    execute(tiny(method="mask", sparsity=0.5, init_from=full))  # full keeps its weights for it
    weights = Run(full).file(paths.WEIGHTS)
    cut(weights)
    with pytest.raises(ValueError) as err:
        Run(full).load_weights(torch.nn.Linear(2, 2))
    assert str(err.value).startswith(f"{weights}: not a readable weights file") and "\n" not in str(err.value)
    other = tiny(method="mask", sparsity=0.5, seed=2, init_from=full)  # starts from the cut weights
    assert execute(other).key == other.key()  # the full run was computed again first
    from safetensors.torch import load_file

    assert load_file(str(weights))  # whole again


def test_a_full_disk_while_saving_a_resume_point_is_one_line_naming_the_file(tmp_path):
    run = Run(RunConfig(task="nli", seed=1), tmp_path)
    run.dir.mkdir(parents=True)
    partial = paths.temp_beside(run.file(paths.CHECKPOINT))
    partial.symlink_to("/dev/full")  # every write: ENOSPC, as on a full disk
    with pytest.raises(OSError) as err:
        run.save_checkpoint({"step": 1, "model": {"w": torch.zeros(10_000)}})
    assert str(err.value) == f"[Errno 28] could not write {run.file(paths.CHECKPOINT)} (No space left on device)"
    assert not run.file(paths.CHECKPOINT).exists() and not partial.is_symlink()


def test_waiting_for_another_hosts_lock_says_where_it_is_how_old_and_how_to_clear_it(tmp_path, monkeypatch,
                                                                                        capsys):
    monkeypatch.setattr(locks, "WAIT_POLL_SECONDS", 0.02)
    run = Run(RunConfig(task="nli", seed=1), tmp_path)
    write_lock(run, 4242, host="otherhost")
    lock = run.file(paths.LOCK)
    os.utime(lock, (time.time() - 42, time.time() - 42))
    threading.Timer(0.3, lock.unlink).start()  # that host finishes
    with run.claim(wait=True):
        pass
    said = capsys.readouterr().err
    assert f"run {run.key} is being computed by otherhost:4242" in said and len(said.strip().splitlines()) == 1
    assert f"its lock {lock}" in said and "last heartbeat 42 s ago" in said
    assert f"if that host is gone, clear it: rm {lock}" in said
