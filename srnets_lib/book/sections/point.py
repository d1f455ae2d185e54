"""A point of a page: one value it shows and the run that yields it."""

from __future__ import annotations

from dataclasses import dataclass

from srnets_lib.settings.config import RunConfig
from srnets_lib.settings.request import Request


@dataclass(frozen=True)
class Point:
    """One value a page shows: a named series (the paper's legend), a task, a seed, an x value
    (sparsity, steps or epochs) and the run that yields it."""

    series: str
    task: str
    seed: int
    x: float
    config: RunConfig
    reference: bool = False  # a full-model reference line rather than a curve
    level: float | None = None  # the IMP level of `config` this point shows
    group: str = ""  # a facet of the section (C.5: the backbone)
    request: Request | None = None  # what the point reads beyond the params' execution defaults
