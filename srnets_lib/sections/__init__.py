"""The paper's sections as the book shows them: each section's points (the runs behind its
figure and tables), its series and its claims."""

from __future__ import annotations

from ..params import SECTIONS, Params
from ..recipes import Point, Recipes


def points(name: str, params: Params, tasks=None, seeds=None, sparsities=None) -> list[Point]:
    """Every point the notebook `name` shows (None: the params file's tasks, seeds, sparsities)."""
    return Recipes(params).section(name, tasks, seeds, sparsities)


__all__ = ["SECTIONS", "Point", "points"]
