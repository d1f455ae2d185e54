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
(Run.serves): a file cut or changed since (an interrupted copy, a full disk) is named, the run is
computed again by the next sweep, and the pages show it as damaged meanwhile. A run records the
CRC-32 of what it read of its dependencies (final.json `reads`: a mask, kept weights); a dependency
whose files changed since makes it stale, shown and computed again as such.

A finished run is never computed again in its own folder: the recomputation (a request it does not
cover, a damaged file, a changed dependency) goes to runs/_recompute/<key>/ while the stored result
serves the pages, and is moved in once finished (store/recompute.py: final.json removed first and
written last, so an interruption leaves the stored result or the finished recomputation, whose move
the next claim completes); what changed is said, never silently replaced. It computes with the
thread count the stored run recorded (CPU float results depend on it: docs/MEASUREMENTS.md).

Several processes may share a store: a run is claimed by creating runs/<key>/.lock
exclusively and touching it while computing (a heartbeat); another process that needs the run
waits for it, a lock whose process is gone (same host) is taken over, and another host's lock
whose heartbeat stopped is reported with the command that clears it (Run.claim).
"""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path

import numpy as np
import torch
import yaml

from srnets_lib import paths
from srnets_lib.data.load import current_fingerprints
from srnets_lib.model import pruning
from srnets_lib.model.backbones import copy_into
from srnets_lib.settings.config import RunConfig, describe
from srnets_lib.settings.request import Request
from srnets_lib.store import files, locks
from srnets_lib.store.lineage import changed_dependency
from srnets_lib.store.locks import RunBusy  # noqa: F401 (raised by Run.claim)
from srnets_lib.store.result import RunResult
from srnets_lib.engine import runtime


class Run:
    def __init__(self, config: RunConfig, root: Path | None = None, at: Path | None = None):
        """`at`: its files elsewhere (a recomputation), its dependencies read from the store `root`."""
        self.config = config
        self.key = config.key()
        self.root = Path(root) if root is not None else paths.runs_root()
        self.dir = Path(at) if at is not None else paths.run_dir(self.key, self.root)

    def file(self, name: str) -> Path:
        return self.dir / name

    def of(self, config: RunConfig) -> "Run":
        """Another run of the same store (a dependency)."""
        return Run(config, self.root)

    def recomputation(self) -> "Run":
        """This run computed again beside its stored result (paths.recompute_dir)."""
        return Run(self.config, self.root, paths.recompute_dir(self.key, self.root))

    # --- reading ------------------------------------------------------------------------------
    @property
    def done(self) -> bool:
        """Whether it finished once (final.json written); whether that result can be used: serves."""
        return self.file(paths.FINAL).is_file()

    def serves(self, request: Request | None = None) -> bool:  # the one reuse rule (None: a page reading it)
        return self.why_not(request) is None

    def why_not(self, request: Request | None = None) -> str | None:
        """Why it does not serve `request` (None: it does): finished, final.json read, the files read whole
        (files.py) and, for a request (not a page's read), what it left covering it, its data unchanged."""
        if not self.done:
            return "not computed"
        try:
            result = self.result()
        except ValueError as err:  # a corrupted final.json: computed again, the new one replaces it
            return str(err)
        why = ((result.covers(request) if request is not None else None) or files.damage(self.dir, result, request)
               or changed_dependency(self.root, result.reads))
        if why is not None or request is None:
            return why
        try:
            now = current_fingerprints(self.config.task, self.config.data)
        except Exception as err:  # computing it again says what is wrong, in that run alone
            return f"its data cannot be read now ({type(err).__name__}: {str(err).splitlines()[0]})"
        return None if same_data(result.data_fingerprint, now) else "the data it read changed since"

    def served(self, request: Request | None = None) -> RunResult | None:
        """Its result where it serves `request` (serves), else None."""
        return self.result() if self.serves(request) else None

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
        """One row per evaluation (metrics.jsonl), up to a line a crash cut short."""
        return files.read_rows(self.file(paths.METRICS))

    def masks(self, level: float | None = None) -> dict[str, torch.Tensor]:
        """The run's mask (or one level's): name -> boolean tensor."""
        return pruning.load_masks(self.file(paths.level_mask(level) if level is not None else paths.MASK))

    def load_weights(self, model, step: int | None = None) -> None:
        """Load the kept trained tensors into `model`; every name and shape must match."""
        path = self.file(paths.step_weights(step) if step is not None else paths.WEIGHTS)
        if not path.is_file():
            raise FileNotFoundError(f"{path}: run {self.key} kept no weights here")
        copy_into(model, files.read_weights(path, dict(model.named_parameters()), self.key))

    # --- whether what it left behind is whole ------------------------------------------------------
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
        assert not self.done, f"{self.dir}: a finished run is computed again beside it (recomputation)"
        if resume_at is None:
            for path in files.artifacts_of(self.dir):
                path.unlink(missing_ok=True)
        with self.file(paths.ATTEMPTS).open("a") as handle:
            handle.write(json.dumps({"at": time.strftime("%Y-%m-%d %H:%M:%S"), **runtime.where(),
                                     "threads": torch.get_num_threads(), "resumed_at": resume_at}) + "\n")
        files.atomic_write(self.file(paths.CONFIG), yaml.safe_dump(describe(self.config), sort_keys=True))
        kept = [] if resume_at is None else [r for r in self.metrics() if r["step"] <= resume_at]
        files.atomic_write(self.file(paths.METRICS), "".join(json.dumps(r) + "\n" for r in kept))

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
        files.write_arrays(path, {name: p.astype(np.int16 if p.dtype.kind in "iu" else np.float32)
                                                     for name, p in predictions.items()})

    def predictions(self, level: float | None = None) -> dict[str, np.ndarray] | None:
        """The stored predictions (save_predictions); None for a run finished without them."""
        path = self.file(paths.level_predictions(level) if level is not None else paths.PREDICTIONS)
        try:
            return files.read_arrays(path)
        except Exception as err:  # BadZipFile, a cut member: never a bare zip error naming no file
            raise ValueError(f"{path}: not a readable predictions file ({files.first_line(err)})") from None

    def save_weights(self, tensors: dict[str, torch.Tensor], step: int | None = None) -> None:
        files.write_weights(self.file(paths.step_weights(step) if step is not None else paths.WEIGHTS), tensors)

    def save_checkpoint(self, state: dict) -> None:
        files.write_checkpoint(self.file(paths.CHECKPOINT), {**state, "key": self.key})

    def finish(self, result: RunResult) -> RunResult:
        """Write `result` as final.json with the sizes and checksums of the files the run holds;
        return it as written."""
        result = result.model_copy(update={"files": files.inventory(self.dir)})
        files.atomic_write(self.file(paths.FINAL), result.model_dump_json(indent=2))
        self.file(paths.CHECKPOINT).unlink(missing_ok=True)
        self.file(paths.FAILED).unlink(missing_ok=True)
        return result

    def release_stale_lock(self) -> None:
        locks.release_if_dead(self.file(paths.LOCK))

    def claim(self, wait: bool = False):
        """Exclusive right to compute this run (locks.claim)."""
        return locks.claim(self.file(paths.LOCK), self.key, self.root, wait)


def same_data(read: dict[str, str], now: dict[str, str]) -> bool:
    """Whether every split a run read reads the same now. A split that appeared since (an OOD set
    whose file was missing) changes nothing the run computed: `evaluate` scores the run on it."""
    return all(now.get(split) == fingerprint for split, fingerprint in read.items())


def record_failure(run: Run, err: BaseException) -> None:
    """Keep why `run` failed (failed.json) for the pages and the next sweep; never raises."""
    lines = f"{type(err).__name__}: {err}".strip().splitlines()
    record = {"error": "\n".join(lines[-8:]), "at": time.strftime("%Y-%m-%d %H:%M:%S"),
              "host": socket.gethostname(), "pid": os.getpid()}
    try:
        run.dir.mkdir(parents=True, exist_ok=True)
        files.atomic_write(run.file(paths.FAILED), json.dumps(record, indent=1))
    except OSError:  # an unwritable store: the error itself is reported by the caller
        pass


def failure(run: Run) -> dict | None:
    """The record of `run`'s last failed attempt, if it has not finished since."""
    try:
        return None if run.done else json.loads(run.file(paths.FAILED).read_text())
    except (OSError, ValueError):
        return None


