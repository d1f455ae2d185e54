"""The run store: one directory per run, keyed by its scientific settings (config.run_key). All
file I/O of a run goes through `Run`:

  runs/<key>/config.yaml    the fully resolved config (written first)
  runs/<key>/metrics.jsonl  every evaluation
  runs/<key>/mask.npz       bit-packed masks (pruning runs); mask_s<level>.npz per IMP level
  runs/<key>/weights.safetensors  trained tensors, where a request asks for them
  runs/<key>/weights_step<n>.safetensors  ... after n steps (section 5.1)
  runs/<key>/checkpoint.pt  resume point of an unfinished run
  runs/<key>/final.json     the RunResult, written last, atomically (temp + rename): no final.json = not done;
                            it records the size and CRC-32 of the masks, predictions and weights above
  runs/<key>/failed.json    why its last attempt failed (the error, when, where); removed when it finishes
  runs/<key>/attempts.jsonl each start or resumption of its computation: when, host, pid, Ray node

A finished run serves a request only if the files the request reads are as they were written
(Run.damage): a file cut or changed since (an interrupted copy, a full disk) is named, the run is
computed again by the next sweep, and the pages show it as damaged meanwhile.

Several processes may share a store: a run is claimed by creating runs/<key>/.lock
exclusively and touching it while computing (a heartbeat); another process that needs the run
waits for it, a lock whose process is gone (same host) is taken over, and another host's lock
whose heartbeat stopped is reported with the command that clears it (Run.claim).
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time
import zlib
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import torch
import yaml

from srnets_lib import paths
from srnets_lib.model import pruning
from srnets_lib.training import runtime
from srnets_lib.model.backbones import copy_into
from srnets_lib.settings.config import RunConfig, describe
from srnets_lib.settings.request import Request
from srnets_lib.store.result import RunResult, StoredFile


class RunBusy(RuntimeError):
    """Another live process is computing this run."""


class Run:
    def __init__(self, config: RunConfig, root: Path | None = None):
        self.config = config
        self.key = config.key()
        self.root = Path(root) if root is not None else paths.runs_root()
        self.dir = paths.run_dir(self.key, self.root)

    def file(self, name: str) -> Path:
        return self.dir / name

    def of(self, config: RunConfig) -> "Run":
        """Another run of the same store (a dependency)."""
        return Run(config, self.root)

    # --- reading ------------------------------------------------------------------------------
    @property
    def done(self) -> bool:
        return self.file(paths.FINAL).is_file()

    def result(self) -> RunResult:
        path = self.file(paths.FINAL)
        if not path.is_file():
            raise FileNotFoundError(f"run {self.key} is not finished ({self.dir} has no {paths.FINAL})")
        try:
            return RunResult.model_validate_json(path.read_text())
        except ValueError as err:
            raise ValueError(f"{path}: not a valid result ({str(err).splitlines()[0]}); a sweep "
                             "computes the run again") from None

    def metrics(self) -> list[dict]:
        path = self.file(paths.METRICS)
        if not path.exists():
            return []
        rows = []
        for line in path.read_text().splitlines():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                break  # a line cut short by a crash: what follows is not trusted
        return rows

    def masks(self, level: float | None = None) -> dict[str, torch.Tensor]:
        """The run's mask (or one level's): name -> boolean tensor."""
        return pruning.load_masks(self.file(paths.level_mask(level) if level is not None else paths.MASK))

    def load_weights(self, model, step: int | None = None) -> None:
        """Load the kept trained tensors into `model`; every name and shape must match."""
        from safetensors.torch import load_file

        path = self.file(paths.step_weights(step) if step is not None else paths.WEIGHTS)
        if not path.is_file():
            raise FileNotFoundError(f"{path}: run {self.key} kept no weights here")
        try:
            tensors = load_file(str(path))
        except Exception as err:  # SafetensorError: cut short, or not safetensors at all
            raise ValueError(f"{path}: not a readable weights file ({_first_line(err)}); the next sweep "
                             f"computes run {self.key} again") from None
        own = dict(model.named_parameters())
        for key, value in tensors.items():
            if key not in own:
                raise KeyError(f"{path}: tensor {key} does not exist in the model")
            if own[key].shape != value.shape:
                raise ValueError(f"{path}: {key} has shape {tuple(value.shape)}, model has {tuple(own[key].shape)}")
        copy_into(model, tensors)

    # --- whether what it left behind is whole ------------------------------------------------------
    def inventory(self) -> dict[str, StoredFile]:
        """The size and CRC-32 of every mask, predictions and weights file the run holds (final.json
        records them). CRC-32, as zip files check their members: a cut, a hole or a flipped byte is
        found at about 4 GB/s (a BERT-base weights file in a tenth of a second), and nothing here
        guards against a deliberate edit, which could rewrite final.json as well."""
        return {path.name: StoredFile(bytes=path.stat().st_size, crc32=_crc32(path)) for path in self._artifacts()}

    def damage(self, result: RunResult, request: Request | None = None) -> str | None:
        """None if every file `request` reads from this finished run is whole, else which one is not
        and why. Masks and predictions are read by every request (the runs fine-tuning a mask, the
        pages: `request` None), kept weights by those asking for them. A result that records no
        files (written before they were recorded) has its files read instead."""
        wanted = _weights_read(request)
        for path in [self.file(name) for name in sorted(result.files)] if result.files else self._artifacts():
            if path.name.endswith(".safetensors") and path.name not in wanted:
                continue
            why = _checked(path, result.files[path.name]) if result.files else _unreadable(path)
            if why:
                return why
        return None

    def _artifacts(self) -> list[Path]:
        return sorted(p for pattern in ARTIFACTS for p in self.dir.glob(pattern))

    def checkpoint(self) -> dict | None:
        """The resume point, or None (none, cut short by a crash, or another run's)."""
        path = self.file(paths.CHECKPOINT)
        if not path.is_file():
            return None
        try:
            state = torch.load(path, weights_only=True, map_location="cpu")
        except Exception:  # a checkpoint cut short by a crash: start over
            return None
        return state if state.get("key") == self.key else None

    # --- writing ------------------------------------------------------------------------------
    def begin(self, resume_at: int | None) -> None:
        """Write config.yaml; keep the evaluations up to `resume_at` (None: a fresh start, which
        also removes the masks, predictions and weights an earlier computation left: a damaged
        one is never recorded as this computation's). Log the attempt (attempts.jsonl)."""
        self.dir.mkdir(parents=True, exist_ok=True)
        self.file(paths.FINAL).unlink(missing_ok=True)  # a result that did not serve its request
        if resume_at is None:
            for path in self._artifacts():
                path.unlink(missing_ok=True)
        with self.file(paths.ATTEMPTS).open("a") as handle:
            handle.write(json.dumps({"at": time.strftime("%Y-%m-%d %H:%M:%S"), **runtime.where(),
                                     "resumed_at": resume_at}) + "\n")
        atomic_write(self.file(paths.CONFIG), yaml.safe_dump(describe(self.config), sort_keys=True))
        kept = [] if resume_at is None else [r for r in self.metrics() if r["step"] <= resume_at]
        atomic_write(self.file(paths.METRICS), "".join(json.dumps(r) + "\n" for r in kept))

    def log(self, row: dict) -> None:
        with self.file(paths.METRICS).open("a") as handle:
            handle.write(json.dumps(row) + "\n")
            handle.flush()
            os.fsync(handle.fileno())

    def save_masks(self, masked: dict, level: float | None = None) -> None:
        pruning.save_masks(masked, self.file(paths.level_mask(level) if level is not None else paths.MASK))

    def save_predictions(self, predictions: dict[str, np.ndarray], level: float | None = None) -> None:
        """Per split, each example's predicted class (int16) or score (float32) at the selected
        checkpoint (or at the end of one IMP level)."""
        path = self.file(paths.level_predictions(level) if level is not None else paths.PREDICTIONS)
        _write_arrays(path, {name: p.astype(np.int16 if p.dtype.kind in "iu" else np.float32)
                                                     for name, p in predictions.items()})

    def predictions(self, level: float | None = None) -> dict[str, np.ndarray] | None:
        """The stored predictions (save_predictions); None for a run finished without them."""
        path = self.file(paths.level_predictions(level) if level is not None else paths.PREDICTIONS)
        try:
            return _read_arrays(path)
        except Exception as err:  # BadZipFile, a cut member: never a bare zip error naming no file
            raise ValueError(f"{path}: not a readable predictions file ({_first_line(err)})") from None

    def save_weights(self, tensors: dict[str, torch.Tensor], step: int | None = None) -> None:
        from safetensors.torch import save

        path = self.file(paths.step_weights(step) if step is not None else paths.WEIGHTS)
        # written from Python, so a full disk is an OSError naming the file (paths.replacing)
        with paths.replacing(path) as tmp, open(tmp, "wb") as handle:
            handle.write(save({k: v.detach().contiguous().cpu() for k, v in tensors.items()}))

    def save_checkpoint(self, state: dict) -> None:
        path = self.file(paths.CHECKPOINT)
        # through a Python file: torch.save to a path reports a full disk as "enforce fail at
        # inline_container.cc", naming no file
        with paths.replacing(path) as tmp, open(tmp, "wb") as handle:
            torch.save({**state, "key": self.key}, handle)

    def finish(self, result: RunResult) -> RunResult:
        """Write `result` as final.json with the sizes and checksums of the files the run holds;
        return it as written."""
        result = result.model_copy(update={"files": self.inventory()})
        atomic_write(self.file(paths.FINAL), result.model_dump_json(indent=2))
        self.file(paths.CHECKPOINT).unlink(missing_ok=True)
        self.file(paths.FAILED).unlink(missing_ok=True)
        return result

    # --- claiming -----------------------------------------------------------------------------
    def release_stale_lock(self) -> None:
        """Remove a lock left by a dead process of this host (e.g. killed between final.json and
        unlocking)."""
        lock = self.file(paths.LOCK)
        if lock_state(lock) == "dead":
            lock.unlink(missing_ok=True)

    @contextmanager
    def claim(self, wait: bool = False):
        """Exclusive right to compute this run: runs/<key>/.lock holds host:pid and is touched every
        HEARTBEAT_SECONDS while held. A dead process's lock (this host) is taken over; a live
        holder's is waited for (`wait`: another sweep computes the run) or refused; a lock of
        another host untouched for STALE_SECONDS is refused with the command that clears it."""
        lock = _acquire(self, wait)
        beat = _Heartbeat(lock)
        try:
            yield
        finally:
            beat.stop()
            lock.unlink(missing_ok=True)


def _acquire(run: Run, wait: bool) -> Path:
    """Create the run's lock (Run.claim), taking over a dead holder's of this host and waiting for
    a live one's where `wait`; its path."""
    lock = run.file(paths.LOCK)
    try:
        run.dir.mkdir(parents=True, exist_ok=True)
        created = _create(lock)
    except PermissionError as err:
        raise PermissionError(err.errno, f"the run store {run.root} is not writable ({err.strerror}: "
                              f"{err.filename}); set SRNETS_RUNS to a folder you can write") from None
    said = False
    while not created and not _create(lock):
        run.release_stale_lock()
        state = lock_state(lock)
        if state == "stale":
            raise RunBusy(f"run {run.key}: its lock {lock} (held by {_holder(lock)}) has had no heartbeat for "
                          f"{time.time() - lock.stat().st_mtime:.0f} s; if that process is gone, clear it: rm {lock}")
        if state == "alive" and not wait:
            raise RunBusy(f"run {run.key} is being computed by {_holder(lock)}")
        if state == "alive":
            if not said:
                print(_waiting(run, lock), file=sys.stderr)
                said = True
            time.sleep(WAIT_POLL_SECONDS)
    return lock


def _waiting(run: Run, lock: Path) -> str:
    """One line: who holds the run, its lock file and last heartbeat, and for another host's lock
    the command that clears it if that host is gone (it is never taken over from here)."""
    holder = _holder(lock)
    try:
        age = f"{time.time() - lock.stat().st_mtime:.0f} s ago"
    except FileNotFoundError:
        age = "just now"
    other = holder.rpartition(":")[0] not in ("", socket.gethostname())
    return (f"run {run.key} is being computed by {holder}: waiting for it (its lock {lock}, last heartbeat {age}"
            + (f"; if that host is gone, clear it: rm {lock})" if other else ")"))


# what a run leaves for others to read: final.json records each one's size and checksum
ARTIFACTS = ("mask*.npz", "predictions*.npz", "weights*.safetensors")
# files found whole (or not) in this process, by path, size, mtime and inode: a page or a sweep
# asking again reads none of them twice
_CHECKED: dict[tuple, str | None] = {}


def _weights_read(request: Request | None) -> set[str]:
    """The weights files `request` reads (a page: none)."""
    if request is None:
        return set()
    return {paths.step_weights(s) for s in request.keep_steps} | ({paths.WEIGHTS} if request.weights else set())


def _identity(path: Path) -> tuple:
    stat = path.stat()
    return stat.st_size, stat.st_mtime_ns, stat.st_ino


def _crc32(path: Path) -> str:
    crc = 0
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 24):
            crc = zlib.crc32(chunk, crc)
    return f"{crc:08x}"


def _checked(path: Path, record: StoredFile) -> str | None:
    """None if `path` has the size and CRC-32 recorded when its run finished, else what differs."""
    try:
        identity = _identity(path)
    except FileNotFoundError:
        return f"{path}: missing (final.json records {record.bytes} bytes)"
    if identity[0] != record.bytes:
        return f"{path}: damaged ({identity[0]} bytes, {record.bytes} recorded when its run finished)"
    key = (str(path), *identity, record.crc32)
    if key not in _CHECKED:
        crc = _crc32(path)
        _CHECKED[key] = None if crc == record.crc32 else (
            f"{path}: damaged (its CRC-32 {crc} is not the {record.crc32} recorded when its run finished)")
    return _CHECKED[key]


def _unreadable(path: Path) -> str | None:
    """None if `path` (npz or safetensors) reads whole, else why not (a file no checksum was
    recorded for: written before they were)."""
    try:
        key = (str(path), *_identity(path), "read")
    except FileNotFoundError:
        return f"{path}: missing"
    if key not in _CHECKED:
        try:
            if path.suffix == ".npz":
                _read_arrays(path)
            else:
                from safetensors.torch import load_file

                load_file(str(path))
            _CHECKED[key] = None
        except Exception as err:  # a cut zip, a cut member (zlib, CRC), a cut safetensors header
            _CHECKED[key] = f"{path}: not readable ({_first_line(err)})"
    return _CHECKED[key]


def _first_line(err: BaseException) -> str:
    return f"{type(err).__name__}: " + (str(err).strip().splitlines() or [""])[0][:200]


def _write_arrays(path: Path, arrays: dict[str, np.ndarray]) -> None:
    with paths.replacing(path) as tmp, open(tmp, "wb") as handle:
        np.savez_compressed(handle, **arrays)


def _read_arrays(path: Path) -> dict[str, np.ndarray] | None:
    if not path.is_file():
        return None
    with np.load(path) as stored:
        return {name: stored[name] for name in stored.files}


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


def record_failure(run: Run, err: BaseException) -> None:
    """Keep why `run` failed (failed.json) for the pages and the next sweep; never raises."""
    lines = f"{type(err).__name__}: {err}".strip().splitlines()
    record = {"error": "\n".join(lines[-8:]), "at": time.strftime("%Y-%m-%d %H:%M:%S"),
              "host": socket.gethostname(), "pid": os.getpid()}
    try:
        run.dir.mkdir(parents=True, exist_ok=True)
        atomic_write(run.file(paths.FAILED), json.dumps(record, indent=1))
    except OSError:  # an unwritable store: the error itself is reported by the caller
        pass


def failure(run: Run) -> dict | None:
    """The record of `run`'s last failed attempt, if it has not finished since."""
    try:
        return None if run.done else json.loads(run.file(paths.FAILED).read_text())
    except (OSError, ValueError):
        return None


def atomic_write(path: Path, text: str) -> None:
    """Write `path` whole or not at all, flushed to disk (paths.replacing)."""
    with paths.replacing(path) as tmp, tmp.open("w") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
