"""What a page shows, read from the run store once: a frozen `Results` value (its section, tasks,
seeds, sparsities, points, the finished points' rows and the points the store lacks), which
book/page.py builds. The section modules draw, tabulate and judge a `Results`, never the page."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from srnets_lib.book.sections import gather
from srnets_lib.book.sections.point import Point
from srnets_lib.settings.params import Params


@dataclass(frozen=True, eq=False)
class Results:
    """One page's results. `frame`: the finished points of its tasks (and of the section's
    gathered_tasks); `references`: every finished full model (section 4.2 holds those of the tasks
    it does not prune); `missing`: the unfinished points; `opt_in`: the points at the preset's other
    sparsities (`make book-full`) drawn where the store has them, `opt_in_missing` those it lacks.
    `asked`: the page was asked for its sparsities (papermill -p sparsity), so it judges only those."""

    params: Params
    tasks: list
    seeds: list
    sparsities: list
    asked: bool
    points: list[Point]
    opt_in: list[Point]
    frame: pd.DataFrame
    references: pd.DataFrame
    missing: list[Point]
    opt_in_missing: list[Point]
    synthetic: bool

    def curves(self) -> pd.DataFrame:
        """Every evaluation of the page's points' runs (metrics.jsonl): training curves."""
        return gather.curves([p for p in self.points if p.task in self.tasks])

