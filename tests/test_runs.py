"""The run store's per-run lock: one live holder at a time; a dead holder's lock is taken over."""

import os
import socket
import subprocess
import sys

import pytest

from srnets_lib import paths
from srnets_lib.config import RunConfig
from srnets_lib.runs import Run, RunBusy


def write_lock(run: Run, pid: int) -> None:
    run.dir.mkdir(parents=True, exist_ok=True)
    run.file(paths.LOCK).write_text(f"{socket.gethostname()}:{pid}")


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
