"""What a caller asks of a run beyond its scientific settings: which evaluations score the OOD
sets, which of IMP's levels it scores, which weights it keeps, and the evaluation batch size.
None of it is part of the run's key; a stored run serves a request only if what it left behind
covers it (result.RunResult.covers), otherwise it is computed again. Requests for one run merge
(the union of what each asks)."""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Request:
    # score the OOD sets at every evaluation (training curves: section 5.1), or only where a
    # result reads them (the selected checkpoint, IMP's levels): the same results either way
    ood_every: bool = False
    keep_steps: tuple[int, ...] = ()  # keep the trained weights after these steps (section 5.1 starts there)
    weights: bool = False  # keep the selected weights (a later run starts from them)
    eval_batch_size: int = 256  # speed only (predictions equal to float noise)
    # IMP: the levels whose scores a result reads (besides the last, the run's own result); None:
    # every level. A level not read is not evaluated; its mask is kept all the same
    levels: tuple[float, ...] | None = None

    def merge(self, other: "Request") -> "Request":
        levels = None if self.levels is None or other.levels is None else tuple(sorted({*self.levels, *other.levels}))
        return Request(self.ood_every or other.ood_every, tuple(sorted(set(self.keep_steps) | set(other.keep_steps))),
                       self.weights or other.weights, max(self.eval_batch_size, other.eval_batch_size), levels)

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, values: dict) -> "Request":
        levels = values.get("levels")
        return cls(**{**values, "keep_steps": tuple(values.get("keep_steps", ())),
                      "levels": None if levels is None else tuple(levels)})
