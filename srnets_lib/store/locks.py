"""Runs claimed by one process at a time: runs/<key>/.lock holds host:pid, created exclusively and
touched while held (a heartbeat). Another process that needs the run waits for it; a lock whose
process is gone (this host) is taken over; another host's lock whose heartbeat stopped is reported
with its path, its age and the command that clears it (it is never taken over from here)."""

from __future__ import annotations

import os
import socket
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

class RunBusy(RuntimeError):
    """Another live process is computing this run."""


@contextmanager
def claim(lock: Path, key: str, root: Path, wait: bool = False):
    """Exclusive right to compute run `key` (its lock file `lock`, in the store `root`): a dead
    process's lock (this host) is taken over; a live holder's is waited for (`wait`: another sweep
    computes the run) or refused; a lock of another host untouched for STALE_SECONDS is refused."""
    acquire(lock, key, root, wait)
    beat = _Heartbeat(lock)
    try:
        yield
    finally:
        beat.stop()
        lock.unlink(missing_ok=True)


def release_if_dead(lock: Path) -> None:
    """Remove a lock left by a dead process of this host (e.g. killed between final.json and
    unlocking)."""
    if lock_state(lock) == "dead":
        lock.unlink(missing_ok=True)


def acquire(lock: Path, key: str, root: Path, wait: bool) -> None:
    """Create run `key`'s lock, taking over a dead holder's of this host and waiting for a live
    one's where `wait`."""
    try:
        lock.parent.mkdir(parents=True, exist_ok=True)
        created = _create(lock)
    except PermissionError as err:
        raise PermissionError(err.errno, f"the run store {root} is not writable ({err.strerror}: "
                              f"{err.filename}); set SRNETS_RUNS to a folder you can write") from None
    said = False
    while not created and not _create(lock):
        release_if_dead(lock)
        state = lock_state(lock)
        if state == "stale":
            raise RunBusy(f"run {key}: its lock {lock} (held by {_holder(lock)}) has had no heartbeat for "
                          f"{time.time() - lock.stat().st_mtime:.0f} s; if that process is gone, clear it: rm {lock}")
        if state == "alive" and not wait:
            raise RunBusy(f"run {key} is being computed by {_holder(lock)}")
        if state == "alive":
            if not said:
                print(_waiting(key, lock), file=sys.stderr)
                said = True
            time.sleep(WAIT_POLL_SECONDS)


def _waiting(key: str, lock: Path) -> str:
    """One line: who holds the run, its lock file and last heartbeat, and for another host's lock
    the command that clears it if that host is gone (it is never taken over from here)."""
    holder = _holder(lock)
    try:
        age = f"{time.time() - lock.stat().st_mtime:.0f} s ago"
    except FileNotFoundError:
        age = "just now"
    other = holder.rpartition(":")[0] not in ("", socket.gethostname())
    return (f"run {key} is being computed by {holder}: waiting for it (its lock {lock}, last heartbeat {age}"
            + (f"; if that host is gone, clear it: rm {lock})" if other else ")"))


HEARTBEAT_SECONDS = 30.0  # a lock holder touches its lock this often
STALE_SECONDS = 300.0  # another host's lock untouched this long is stale (its process cannot be asked)
WAIT_POLL_SECONDS = 5.0


def _create(lock: Path) -> bool:
    """Create `lock` holding this host:pid; False if it exists."""
    try:
        fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return False
    os.write(fd, f"{socket.gethostname()}:{os.getpid()}".encode())
    os.close(fd)
    return True


def _holder(lock: Path) -> str:
    try:
        return lock.read_text() or "an unknown process"
    except FileNotFoundError:
        return "a process that has just finished"


def lock_state(lock: Path) -> str:
    """'gone'; 'dead' (a process of this host that no longer runs, or a lock unreadable for 10 s);
    'alive' (a running process of this host, or another host's lock with a recent heartbeat);
    'stale' (another host's lock with no heartbeat for STALE_SECONDS)."""
    try:
        text, touched = lock.read_text(), lock.stat().st_mtime
    except FileNotFoundError:
        return "gone"
    host, _, pid = text.rpartition(":")
    if not host or not pid.isdigit():  # being written (just created), or garbage
        return "alive" if time.time() - touched < 10 else "dead"
    if host != socket.gethostname():
        return "alive" if time.time() - touched < STALE_SECONDS else "stale"
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return "dead"
    except PermissionError:
        pass
    return "alive"


class _Heartbeat:
    """Touches a lock every HEARTBEAT_SECONDS from a daemon thread until stopped."""

    def __init__(self, lock: Path):
        self.lock, self.stopped = lock, threading.Event()
        self.thread = threading.Thread(target=self._beat, daemon=True, name=f"heartbeat {lock.parent.name}")
        self.thread.start()

    def _beat(self) -> None:
        while not self.stopped.wait(HEARTBEAT_SECONDS):
            try:
                os.utime(self.lock)
            except OSError:
                return

    def stop(self) -> None:
        self.stopped.set()
        self.thread.join()
