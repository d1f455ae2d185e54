"""The run store: one directory per run, keyed by the hash of its resolved config.

  runs/<key>/config.yaml    the fully resolved config (written first)
  runs/<key>/metrics.jsonl  every evaluation
  runs/<key>/mask.npz       bit-packed masks (pruning runs)
  runs/<key>/weights.safetensors  trained tensors (fine-tuning runs)
  runs/<key>/checkpoint.pt  resume point of an unfinished run
  runs/<key>/final.json     written last, atomically (temp + rename): no final.json = not done

Several processes may share a store: a run is claimed by creating runs/<key>/.lock
exclusively; a lock whose process is gone (same host) is taken over.
"""

from __future__ import annotations

import json
import os
import socket
import time
from contextlib import contextmanager
from pathlib import Path

import yaml

from . import paths
from .config import RunConfig, describe


class RunBusy(RuntimeError):
    """Another live process is computing this run."""


class Run:
    def __init__(self, config: RunConfig, root: Path | None = None):
        self.config = config
        self.key = config.key()
        self.dir = paths.run_dir(self.key, root)

    def file(self, name: str) -> Path:
        return self.dir / name

    @property
    def done(self) -> bool:
        return self.file(paths.FINAL).is_file()

    def final(self) -> dict:
        if not self.done:
            raise FileNotFoundError(f"run {self.key} is not finished ({self.dir} has no {paths.FINAL})")
        return json.loads(self.file(paths.FINAL).read_text())

    def lacks_weights(self) -> bool:
        """A fine-tuning run that did not keep its trained weights (nothing read them then)."""
        return self.config.method == "finetune" and not self.file(paths.WEIGHTS).is_file()

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

    # --- writing -----------------------------------------------------------------------------
    def begin(self, resume: bool) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        atomic_write(self.file(paths.CONFIG), yaml.safe_dump(describe(self.config), sort_keys=True))
        if not resume:
            self.file(paths.METRICS).unlink(missing_ok=True)

    def log(self, row: dict) -> None:
        with self.file(paths.METRICS).open("a") as handle:
            handle.write(json.dumps(row) + "\n")
            handle.flush()
            os.fsync(handle.fileno())

    def truncate_metrics(self, last_step: int) -> None:
        """On resume, drop evaluations logged after the checkpoint being resumed."""
        kept = [r for r in self.metrics() if r["step"] <= last_step]
        atomic_write(self.file(paths.METRICS), "".join(json.dumps(r) + "\n" for r in kept))

    def finish(self, final: dict) -> None:
        atomic_write(self.file(paths.FINAL), json.dumps(final, indent=2, sort_keys=True))
        self.file(paths.CHECKPOINT).unlink(missing_ok=True)

    def release_stale_lock(self) -> None:
        """Remove a lock left by a dead process (e.g. killed between final.json and unlocking)."""
        lock = self.file(paths.LOCK)
        if lock.exists() and not _lock_alive(lock):
            lock.unlink(missing_ok=True)

    @contextmanager
    def claim(self):
        """Exclusive right to compute this run (per-run lock file, stale locks taken over)."""
        self.dir.mkdir(parents=True, exist_ok=True)
        lock = self.file(paths.LOCK)
        me = f"{socket.gethostname()}:{os.getpid()}"
        for _ in range(2):
            try:
                fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
                os.write(fd, me.encode())
                os.close(fd)
                break
            except FileExistsError:
                self.release_stale_lock()
                if lock.exists():
                    raise RunBusy(f"run {self.key} is being computed by {lock.read_text()}") from None
        else:
            raise RunBusy(f"could not claim run {self.key}")
        try:
            yield
        finally:
            lock.unlink(missing_ok=True)


def _lock_alive(lock: Path) -> bool:
    try:
        host, pid = lock.read_text().rsplit(":", 1)
    except (FileNotFoundError, ValueError):
        return False
    if host != socket.gethostname():
        return time.time() - lock.stat().st_mtime < 24 * 3600  # other host: trust it for a day
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def atomic_write(path: Path, text: str) -> None:
    tmp = paths.temp_beside(path)
    with tmp.open("w") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def results(configs: list[RunConfig], root: Path | None = None) -> list[dict]:
    """final.json of every finished run among `configs` (unfinished ones are skipped)."""
    rows = []
    for config in configs:
        run = Run(config, root)
        if run.done:
            rows.append({"key": run.key, **run.final()})
    return rows
