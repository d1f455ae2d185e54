"""The run store: one directory per run, keyed by its scientific settings (config.run_key). All
file I/O of a run goes through `Run`:

  runs/<key>/config.yaml    the fully resolved config (written first)
  runs/<key>/metrics.jsonl  every evaluation
  runs/<key>/mask.npz       bit-packed masks (pruning runs); mask_s<level>.npz per level (imp-rw)
  runs/<key>/weights.safetensors  trained tensors, where a request asks for them
  runs/<key>/weights_step<n>.safetensors  ... after n steps (section 5.1)
  runs/<key>/checkpoint.pt  resume point of an unfinished run
  runs/<key>/final.json     the RunResult, written last, atomically (temp + rename): no final.json = not done

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

import torch
import yaml

from . import paths, pruning
from .models import copy_into
from .config import RunConfig, describe
from .result import RunResult


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
            raise ValueError(f"{path}: not a valid result ({str(err).splitlines()[0]}); "
                             "delete the file to recompute the run") from None

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
        tensors = load_file(str(path))
        own = dict(model.named_parameters())
        for key, value in tensors.items():
            if key not in own:
                raise KeyError(f"{path}: tensor {key} does not exist in the model")
            if own[key].shape != value.shape:
                raise ValueError(f"{path}: {key} has shape {tuple(value.shape)}, model has {tuple(own[key].shape)}")
        copy_into(model, tensors)

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
        """Write config.yaml; keep the evaluations up to `resume_at` (None: a fresh start)."""
        self.dir.mkdir(parents=True, exist_ok=True)
        self.file(paths.FINAL).unlink(missing_ok=True)  # a result that did not serve its request
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

    def save_weights(self, tensors: dict[str, torch.Tensor], step: int | None = None) -> None:
        from safetensors.torch import save_file

        path = self.file(paths.step_weights(step) if step is not None else paths.WEIGHTS)
        tmp = paths.temp_beside(path)
        save_file({k: v.detach().contiguous().cpu() for k, v in tensors.items()}, str(tmp))
        tmp.replace(path)

    def save_checkpoint(self, state: dict) -> None:
        path = self.file(paths.CHECKPOINT)
        tmp = paths.temp_beside(path)
        torch.save({**state, "key": self.key}, tmp)
        tmp.replace(path)

    def finish(self, result: RunResult) -> None:
        atomic_write(self.file(paths.FINAL), result.model_dump_json(indent=2))
        self.file(paths.CHECKPOINT).unlink(missing_ok=True)

    # --- claiming -----------------------------------------------------------------------------
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
