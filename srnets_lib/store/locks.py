"""Runs claimed by one process at a time. runs/<key>/.lock is created exclusively and names its
holder, `<host>:<pid>` and, where the holder is a Ray task, ` ray-node=<node id> ray-task=<task id>`;
the holder touches it every HEARTBEAT_SECONDS (a heartbeat). Another process that needs the run
waits for a live holder, and the rules of who is gone are these, in this order:

0. a lock written by an earlier attempt of the Ray task that reads it is taken over at once (Ray
   runs a task again, with the same task id, only once the worker of its earlier attempt died:
   killed, out of memory, on any host);
1. a lock whose Ray node Ray reports dead (a lost node, on any host) is taken over at once;
2. a lock of this host whose process no longer runs is taken over;
3. a lock whose heartbeat is older than STALE_SECONDS is stale whatever its pid (pids are reused,
   and a process that stopped beating computes nothing): on this host it is taken over, saying so;
   another host's (without a Ray node Ray reports dead) is refused with its path and the `rm`
   that clears it, as that host's processes cannot be asked from here;
4. otherwise the holder is alive (another host's: while its heartbeat is recent).

A lock just created and not yet written (or garbage) is alive for 10 s, then taken over. A holder
whose lock was taken over (it stopped beating, then woke up) neither touches nor removes the new
holder's lock."""

from __future__ import annotations

import os
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from srnets_lib.engine import runtime

HEARTBEAT_SECONDS = 30.0  # a lock holder touches its lock this often
STALE_SECONDS = 300.0  # a lock untouched this long is stale (rule 3)
WAIT_POLL_SECONDS = 5.0
UNWRITTEN_SECONDS = 10.0  # a lock without a readable holder this long is taken over


class RunBusy(RuntimeError):
    """Another live process is computing this run, or another host's lock is stale."""


@dataclass(frozen=True)
class Holder:
    """Who holds a lock, as its file records it."""

    host: str
    pid: int
    node: str | None = None  # the Ray node it runs on, if any
    task: str | None = None  # the Ray task it runs, if any (the same id in every attempt of it)

    def text(self) -> str:
        return (f"{self.host}:{self.pid}" + (f" ray-node={self.node}" if self.node else "")
                + (f" ray-task={self.task}" if self.task else ""))

    @classmethod
    def parse(cls, text: str) -> "Holder | None":
        """The holder a lock's text names (this version's, or the earlier `host:pid`); None if unreadable."""
        first, *rest = text.split() or [""]
        host, _, pid = first.rpartition(":")
        fields = dict(item.partition("=")[::2] for item in rest)
        if not host or not pid.isdigit():
            return None
        return cls(host, int(pid), fields.get("ray-node") or None, fields.get("ray-task") or None)

    @classmethod
    def here(cls) -> "Holder":
        where = runtime.where()
        return cls(where["host"], where["pid"], where["node"], ray_task())


@dataclass(frozen=True)
class State:
    """A lock's state: 'gone', 'alive', 'taken' (its holder is gone: taken over) or 'stale' (another
    host's, untouched for STALE_SECONDS: refused); `why` says what decided it."""

    name: str
    why: str = ""
    holder: str = "an unknown process"
    age: float = 0.0
    text: str | None = None  # the lock's text as read


def lock_state(lock: Path) -> State:
    """The state of `lock` by the rules of this module's docstring."""
    try:
        text, age = lock.read_text(), max(0.0, time.time() - lock.stat().st_mtime)
    except FileNotFoundError:
        return State("gone")
    holder = Holder.parse(text)
    if holder is None:  # being written (just created), or garbage
        if age < UNWRITTEN_SECONDS:
            return State("alive", "just created", text or "a process that is writing it", age, text)
        return State("taken", f"it names no holder ({text[:40]!r}) and is {age:.0f} s old", text or "nobody", age,
                     text)
    me = Holder.here()
    said, here = holder.text(), holder.host == me.host
    if holder.task and holder.task == me.task and (holder.host, holder.pid) != (me.host, me.pid):
        return State("taken", f"an earlier attempt of this Ray task wrote it (Ray runs a task again only once "
                              "the worker of its earlier attempt died)", said, age, text)
    if holder.node and ray_node_alive(holder.node) is False:
        return State("taken", f"Ray reports its node {holder.node} dead", said, age, text)
    if here and not pid_running(holder.pid):
        return State("taken", f"its process {holder.pid} no longer runs", said, age, text)
    if age >= STALE_SECONDS:
        if here:
            return State("taken", f"it has had no heartbeat for {age:.0f} s (pid {holder.pid} runs, but is not "
                                  "beating: a reused pid, or a hung process)", said, age, text)
        return State("stale", f"it has had no heartbeat for {age:.0f} s", said, age, text)
    return State("alive", "its heartbeat is recent", said, age, text)


def pid_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        pass
    return True


def ray_task() -> str | None:
    """The Ray task this process runs, where it is a Ray worker running one."""
    ray = sys.modules.get("ray")  # never imported here: only a process that runs Ray has a task
    if ray is None or not ray.is_initialized():
        return None
    context = ray.get_runtime_context()
    return context.get_task_id() if context.worker.mode == ray.WORKER_MODE else None  # a driver has none


def ray_node_alive(node: str) -> bool | None:
    """Whether Ray reports `node` alive, where this process is connected to the Ray cluster that
    knows it; None where it cannot say (no Ray here, another cluster's node)."""
    ray = sys.modules.get("ray")  # never imported here: only a process that runs Ray can ask it
    if ray is None or not ray.is_initialized():
        return None
    try:
        known = {n["NodeID"]: n["Alive"] for n in ray.nodes()}
    except Exception:  # the cluster is going away: say nothing
        return None
    return known.get(node)


@contextmanager
def claim(lock: Path, key: str, root: Path, wait: bool = False):
    """Exclusive right to compute run `key` (its lock file `lock`, in the store `root`): a gone
    holder's lock is taken over; a live holder's is waited for (`wait`: another sweep computes the
    run) or refused; a stale lock of another host is refused naming the `rm` that clears it."""
    mine = acquire(lock, key, root, wait)
    beat = _Heartbeat(lock, mine)
    try:
        yield
    finally:
        beat.stop()
        if _reads(lock) == mine:  # not a holder that took it over meanwhile
            lock.unlink(missing_ok=True)


def release_if_gone(lock: Path, key: str = "") -> bool:
    """Remove `lock` where its holder is gone (the rules above; e.g. a process killed between
    final.json and unlocking), saying so; whether it did."""
    state = lock_state(lock)
    if state.name != "taken" or _reads(lock) != state.text:  # not gone, or just replaced by a new holder
        return False
    lock.unlink(missing_ok=True)
    print(f"run {key or lock.parent.name}: its lock {lock} (held by {state.holder}) is taken over: {state.why}",
          file=sys.stderr)
    return True


release_if_dead = release_if_gone  # the name store/runs.py calls


def acquire(lock: Path, key: str, root: Path, wait: bool) -> str:
    """Create run `key`'s lock (its text returned), taking over a gone holder's and waiting for a
    live one's where `wait`."""
    mine = Holder.here().text()
    try:
        lock.parent.mkdir(parents=True, exist_ok=True)
        created = _create(lock)
    except PermissionError as err:
        raise PermissionError(err.errno, f"the run store {root} is not writable ({err.strerror}: "
                              f"{err.filename}); set SRNETS_RUNS to a folder you can write") from None
    said = False
    while not created and not _create(lock):
        if release_if_gone(lock, key):
            continue
        state = lock_state(lock)
        if state.name == "stale":
            raise RunBusy(f"run {key}: its lock {lock} (held by {state.holder}) is stale: {state.why}; if that process "
                          f"is gone, clear it: rm {lock}")
        if state.name == "alive" and not wait:
            raise RunBusy(f"run {key} is being computed by {state.holder}")
        if state.name == "alive":
            if not said:
                print(_waiting(key, lock, state), file=sys.stderr)
                said = True
            time.sleep(WAIT_POLL_SECONDS)
    return mine


def _waiting(key: str, lock: Path, state: State) -> str:
    """One line: who holds the run, its lock file and last heartbeat, and for another host's lock
    without a Ray node the command that clears it if that host is gone."""
    holder = Holder.parse(state.holder)
    other = holder is not None and holder.host != runtime.where()["host"]
    after = (f"; if that host is gone, clear it: rm {lock}" if other and not holder.node else
             "; taken over once Ray reports its node dead" if other else "")
    return (f"run {key} is being computed by {state.holder}: waiting for it (its lock {lock}, last heartbeat "
            f"{state.age:.0f} s ago{after})")


def _create(lock: Path) -> bool:
    """Create `lock` holding this process (Holder.here); False if it exists."""
    text = Holder.here().text()
    try:
        fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return False
    os.write(fd, text.encode())
    os.close(fd)
    return True


def _reads(lock: Path) -> str | None:
    try:
        return lock.read_text()
    except OSError:
        return None


class _Heartbeat:
    """Touches a lock every HEARTBEAT_SECONDS from a daemon thread until stopped, while it holds
    `mine` (a lock taken over by another holder is left alone)."""

    def __init__(self, lock: Path, mine: str):
        self.lock, self.mine, self.stopped = lock, mine, threading.Event()
        self.thread = threading.Thread(target=self._beat, daemon=True, name=f"heartbeat {lock.parent.name}")
        self.thread.start()

    def _beat(self) -> None:
        while not self.stopped.wait(HEARTBEAT_SECONDS):
            if _reads(self.lock) != self.mine:
                print(f"the lock {self.lock} was taken over by {_reads(self.lock) or 'nobody'}; this process "
                      "no longer holds it", file=sys.stderr)
                return
            try:
                os.utime(self.lock)
            except OSError:
                return

    def stop(self) -> None:
        self.stopped.set()
        self.thread.join()
