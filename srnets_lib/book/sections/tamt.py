"""What Part II's pages share (TAMT, Liu et al. NAACL 2022): the subnetworks searched on the
corpus (the legend of figure 3: TAMT-MLM, TAMT-KD, TAMT-MLM+KD, IMP, OMP, Rand) and the masks
behind each; the mean downstream score over tasks."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from srnets_lib.book import columns
from srnets_lib.book.verdicts import noise
from srnets_lib.book.sections.base import Section
from srnets_lib.settings.config import RunConfig

SERIES = {"mlm": "TAMT-MLM", "kd": "TAMT-KD", "mlm+kd": "TAMT-MLM+KD"}
MAGNITUDE = ("IMP", "OMP")
FULL = "full model"
PROBE_TASK = "corpus"  # the probes' task (Recipes.probe): their rows hold held-out pre-training losses, no score


class TamtSection(Section):
    """A Part II page: its tasks are tamt.tasks (the figures' own five, tamt.figure_tasks, where
    `figure_tasks`), its seeds the mask seeds, its sparsities tamt.sparsities."""

    part = 2
    gathered_tasks = (PROBE_TASK,)
    figure_tasks = False

    def tasks(self, params) -> list[str]:
        chosen = params.tamt.figure_tasks if self.figure_tasks else None
        return list(params.sections.page(self.name).tasks or chosen or params.tamt.tasks)

    def seeds(self, params) -> list[int]:
        """This page's seeds (sections.<page>.seeds), else tamt.mask_seeds (each mask fine-tuned with
        tamt.finetune_seeds)."""
        return list(params.sections.page(self.name).seeds or params.tamt.mask_seeds)

    def sparsities(self, params, full: bool = False) -> list[float]:
        return list(params.tamt.sparsities)


@dataclass(frozen=True)
class Subnetwork:
    """A mask searched without a task: its legend, sparsity, the run that keeps it (and the
    level of an IMP run), and the mask seed."""

    series: str
    sparsity: float
    run: RunConfig
    level: float | None
    seed: int


def subnetworks(recipes, seeds: list[int], sparsities: list[float], asked: bool | None = None) -> list[Subnetwork]:
    """Every objective's TAMT masks and IMP's levels at `sparsities` per mask seed; OMP (one mask:
    it is deterministic) and random masks at tamt.oneshot_sparsities, or at `sparsities` where the
    page was asked for others (`asked`; by default: they differ from tamt.sparsities), e.g.
    papermill -p sparsity 0.7."""
    tamt, found = recipes.p.tamt, []
    asked = list(sparsities) != list(tamt.sparsities) if asked is None else asked
    oneshot = sparsities if asked else tamt.oneshot_sparsities
    for seed in seeds:
        found += [Subnetwork(SERIES[o], s, recipes.tamt(o, s, seed), None, seed) for o in tamt.objectives for s in sparsities]
        imp = recipes.tamt_imp(seed)
        found += [Subnetwork("IMP", s, imp, s, seed) for s in sparsities]
        found += [Subnetwork("Rand", s, recipes.oneshot("random", s, seed), None, seed) for s in oneshot]
    return found + [Subnetwork("OMP", s, recipes.oneshot("omp", s, seeds[0]), None, seeds[0]) for s in oneshot]


def mean_over_tasks(df: pd.DataFrame, tasks=None) -> pd.DataFrame:
    """Per series and sparsity: the downstream score (ID; the toy's test split) averaged over seeds, then over
    `tasks` (None: every task of the frame; the paper's "overall" score); tasks missing a value leave the
    mean undefined."""
    rows = df[df.task != PROBE_TASK]
    rows = rows if tasks is None else rows[rows.task.isin(tasks)]
    per_task = rows.groupby(["series", "x", "task"]).id.mean().unstack("task")
    if tasks is not None:
        per_task = per_task.reindex(columns=list(tasks))
    return per_task.mean(axis=1, skipna=False).rename("score").reset_index()


def runs_behind(df: pd.DataFrame) -> pd.Series:
    """Per series and sparsity: the fewest finished runs (mask seeds x fine-tuning seeds) behind
    one task's mean in mean_over_tasks, which a verdict reports as its seeds."""
    rows = df[df.task != PROBE_TASK]
    return rows.groupby(["series", "x", "task"]).id.count().groupby(["series", "x"]).min()


def fewest(runs: pd.Series, keys) -> int:
    """The fewest runs behind the values at `keys` ((series, x) pairs): a verdict's seeds."""
    return int(min((runs.get(k, 0) for k in keys), default=0))


def overall(df: pd.DataFrame) -> pd.Series:
    """(series, x) -> the mean score over tasks (mean_over_tasks), empty for an empty frame."""
    return mean_over_tasks(df).set_index(["series", "x"]).score if not df.empty else pd.Series(dtype=float)


def overall_scores(df: pd.DataFrame) -> dict[tuple, noise.Score]:
    """(series, x) -> the mean score over the frame's tasks (as `overall`, every task needed) as a
    noise.Score: each task's mean over its runs with the per-example terms of their stored
    predictions, so a margin between series has a standard error (noise.py)."""
    rows = df[df.task != PROBE_TASK] if not df.empty else df
    tasks = sorted(set(rows.task)) if not rows.empty else []
    found = {}
    for (series, x), group in (rows.groupby(["series", "x"]) if not rows.empty else []):
        per_task = [noise.mean(noise.scores(group[group.task == t], "id")) for t in tasks
                    if (group.task == t).any()]
        if len(per_task) == len(tasks) and tasks:
            found[(series, x)] = noise.mean(per_task)
    return found


def seed_margins(df: pd.DataFrame, margin_of) -> tuple:
    """A Part II rule judged on each seed's runs alone (two or more seeds): `margin_of` takes a
    frame and gives the rule's margin on it (None: not measurable). A transfer's seed is its
    fine-tuning seed (its mask seeds averaged), a probe's its mask seed."""
    seeds = sorted(set(df.seed)) if "seed" in df else []
    return tuple(margin_of(df[df.seed == s]) for s in seeds) if len(seeds) > 1 else ()


def scores_only(df: pd.DataFrame) -> pd.DataFrame:
    """The downstream scores of a frame (Part II reads the tasks' ID scores, not OOD sets)."""
    return df.drop(columns=columns.ood_columns(df))


def judged_rows(results) -> pd.DataFrame:
    """The page's frame without its opt-in points (those `make book-full` adds): what its verdicts
    read, as the scorecard, which gathers the default points only, reads them."""
    shown = {(p.series, p.task, p.seed, p.x, p.group) for p in results.points}
    if results.frame.empty:
        return results.frame
    keep = [key in shown for key in zip(results.frame.series, results.frame.task, results.frame.seed, results.frame.x, results.frame.group)]
    return results.frame[keep]


OBJECTIVES = ("mlm", "kd")  # figures 6 and 7 show TAMT-MLM and TAMT-KD


RANDOM = " (Rand_init)"
