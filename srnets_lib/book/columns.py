"""The columns of a page's results frame (sections/gather.py: one row per finished point): its
fixed ones, one "ood:<set>" column per OOD evaluation set and one "score:<name>" column per other
score (a corpus run's held-out MLM and KD losses), named and parsed here only."""

from __future__ import annotations

COLUMNS = ["series", "task", "seed", "x", "reference", "group", "level", "id", "id_split", "sparsity", "key", "metric",
           "ood_metric"]
OOD, SCORE = "ood:", "score:"


def ood(name: str) -> str:
    """The column of OOD set `name`."""
    return OOD + name


def score(name: str) -> str:
    """The column of the other score `name`."""
    return SCORE + name


def ood_columns(df) -> list[str]:
    """The frame's OOD-set columns, in its order."""
    return [c for c in df.columns if c.startswith(OOD)]


def name(column: str) -> str:
    """The set or score a column holds: "hans" of "ood:hans"."""
    return column.split(":", 1)[1]
