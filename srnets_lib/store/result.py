"""The typed result of a finished run: the schema of its final.json, with a version.

Besides the scores it records what the run left behind, so a later request is served by it only
if it covers what is asked (`covers`), the fingerprint of the data it read, checked on reuse, and
the size and CRC-32 of each file it left for others to read (`files`), checked on reuse too
(runs.Run.damage), so a file damaged since (an interrupted copy, a full disk) is found.
"""

from __future__ import annotations

from typing import Optional

from pydantic import BaseModel, ConfigDict

from srnets_lib.settings.request import Request

# 1: the untyped final.json of algorithm version 3 (`python -m srnets_lib rekey` converts); 2: no
# `files` (its files are checked by reading them); 3: `files`; 4: `reads` (what it read of its
# dependencies; a result without them is not checked against its dependencies)
SCHEMA_VERSION = 4


def level_key(sparsity: float) -> str:
    """How final.json keys an IMP level: its sparsity as "0.5" (RunResult.levels)."""
    return f"{sparsity:g}"


class StoredFile(BaseModel):
    """A file a run left behind, as it was when the run finished."""

    model_config = ConfigDict(extra="forbid")
    bytes: int
    crc32: str  # zlib's CRC-32, 8 hex digits


class LevelResult(BaseModel):
    """One sparsity level of an IMP run: the model at the end of its interval."""

    model_config = ConfigDict(extra="forbid")
    step: int
    sparsity: float
    id: float  # on the run's ID split (RunResult.id_split)
    ood: dict[str, float]
    dev: Optional[float] = None  # the ID dev score (not recorded before the ID test splits)


class RunResult(BaseModel):
    model_config = ConfigDict(extra="forbid")
    schema_version: int = SCHEMA_VERSION
    key: str
    task: str
    method: str
    loss: str
    seed: int
    backbone: str
    data: str  # what was read, in words
    data_fingerprint: dict[str, str]  # split -> fingerprint of its texts and labels
    metric: str  # of the ID dev set (and checkpoint selection)
    ood_metric: str
    target_sparsity: float
    sparsity: float  # actual, over the Transformer matrices (the paper's denominator)
    sparsity_min: float  # per masked matrix
    sparsity_max: float
    selected_step: int
    t_max: int
    steps_run: int
    id: float  # the selected checkpoint's ID score, on `id_split`
    # "test": the ID test split (synthetic data), which selection never reads; "dev": the dev set
    # checkpoints were selected on (real data, the authors' protocol)
    id_split: str = "dev"
    dev: Optional[float] = None  # the selected checkpoint's ID dev score (what selected it)
    ood: dict[str, float]  # OOD set -> score of the selected checkpoint
    # OOD sets of the task this run was not evaluated on, and why (a file missing, skipped with
    # execution.skip_ood); `python -m srnets_lib evaluate` adds them later where it can
    ood_missing: dict[str, str] = {}
    scores: dict[str, float] = {}  # its other scores (a corpus: the held-out MLM and KD losses)
    levels: dict[str, LevelResult] = {}  # IMP: sparsity level -> its subnetwork's scores
    bias_model: Optional[str] = None
    evaluations: int
    seconds: float
    execution: dict  # device, threads, CPU capability, torch version
    # what the run left behind
    ood_every: bool  # OOD scored at every evaluation (metrics.jsonl)
    kept_steps: list[int] = []  # weights kept after these steps
    weights: bool = False  # selected weights kept
    levels_read: Optional[list[str]] = None  # IMP: the levels scored (`levels`), when not every one was
    # its masks, predictions and kept weights (file name -> size and checksum); empty when written
    # before they were recorded, or converted by rekey: those files are checked by reading them
    files: dict[str, StoredFile] = {}
    # what it read of the runs it depends on, as it read it: dependency key -> {file name: CRC-32}
    # (a mask, kept weights); a dependency whose files changed since makes this result stale
    reads: dict[str, dict[str, str]] = {}

    def level(self, sparsity: float) -> "LevelResult | None":
        """The scores of the subnetwork at IMP level `sparsity`, if it has one."""
        return self.levels.get(level_key(sparsity))

    def covers(self, request: Request) -> str | None:
        """None if this result serves `request`, else why not."""
        if request.ood_every and not self.ood_every:
            return "its OOD sets were scored only where a result reads them, not at every evaluation"
        missing = sorted(set(request.keep_steps) - set(self.kept_steps))
        if missing:
            return f"it kept no weights after steps {missing}"
        if request.weights and not self.weights:
            return "it did not keep its weights"
        if self.levels_read is not None:
            if request.levels is None:
                return f"it scored only its levels {', '.join(self.levels_read)}, not every one"
            unscored = [level_key(s) for s in request.levels if level_key(s) not in self.levels_read]
            if unscored:
                return f"it did not score its levels {', '.join(unscored)}"
        return None

    def covered(self) -> Request:
        """What this result serves (covers), as a request: a recomputation asked for more keeps it."""
        return Request(ood_every=self.ood_every, keep_steps=tuple(self.kept_steps), weights=self.weights,
                       levels=None if self.levels_read is None else tuple(float(k) for k in self.levels_read))

    def differences(self, other: "RunResult") -> list[str]:
        """How `other` (the same run computed again) differs from this result, in words: each score
        that moved, each kept file whose bytes differ; [] where it reproduced it."""
        def scored(result: "RunResult") -> dict[str, float]:
            values = {"ID": result.id, "sparsity": result.sparsity, **{f"OOD {k}": v for k, v in result.ood.items()},
                      **result.scores}
            for name, level in result.levels.items():
                values.update({f"level {name} ID": level.id, **{f"level {name} OOD {k}": v for k, v in level.ood.items()}})
            return values

        old, new = scored(self), scored(other)
        moved = [f"{k} {old[k]:.6g} -> {new[k]:.6g}" for k in old if k in new and old[k] != new[k]]
        if self.selected_step != other.selected_step:
            moved.append(f"selected step {self.selected_step} -> {other.selected_step}")
        files = [f"{name} (CRC-32 {stored.crc32} -> {other.files[name].crc32})" for name, stored in self.files.items()
                 if name in other.files and other.files[name].crc32 != stored.crc32]
        return moved + files
