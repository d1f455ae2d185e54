"""What Part II's pages share (TAMT, Liu et al. NAACL 2022): the subnetworks searched on the
corpus (the legend of figure 3: TAMT-MLM, TAMT-KD, TAMT-MLM+KD, IMP, OMP, Rand) and the masks
behind each; the mean downstream score over tasks."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from srnets_lib.book import columns, plots
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


def mean_over_tasks(df: pd.DataFrame) -> pd.DataFrame:
    """Per series and sparsity: the downstream score (ID; the toy's test split) averaged over seeds, then over tasks
    (the paper's "overall" score); tasks missing a value leave the mean undefined."""
    rows = df[df.task != PROBE_TASK]
    per_task = rows.groupby(["series", "x", "task"]).id.mean().unstack("task")
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


def seed_margins(df: pd.DataFrame, margin_of) -> tuple:
    """A Part II rule judged on each seed's runs alone (two or more seeds): `margin_of` takes a
    frame and gives the rule's margin on it (None: not measurable). A transfer's seed is its
    fine-tuning seed (its mask seeds averaged), a probe's its mask seed."""
    seeds = sorted(set(df.seed)) if "seed" in df else []
    return tuple(margin_of(df[df.seed == s]) for s in seeds) if len(seeds) > 1 else ()


def scores_only(df: pd.DataFrame) -> pd.DataFrame:
    """The downstream scores of a frame (Part II reads the tasks' ID scores, not OOD sets)."""
    return df.drop(columns=columns.ood_columns(df))


def score_figure(page, title: str, xlabel: str, frame: pd.DataFrame | None = None):
    """One panel per task and one for the mean over tasks: ID score against x, the full model
    dashed; of the page's frame, or of `frame` (one group's rows)."""
    plt = plots.pyplot()
    frame = page.frame if frame is None else frame
    df = scores_only(frame[frame.task != PROBE_TASK])
    overall = mean_over_tasks(df).rename(columns={"score": "id"}).assign(
        task="mean over tasks", seed=0, reference=lambda d: d.series == FULL, metric=df.metric.iloc[0],
        ood_metric=df.metric.iloc[0], id_split=df.id_split.iloc[0])
    fig = plots.sparsity_figure(pd.concat([df, overall], ignore_index=True), title, xlabel=xlabel,
                                synthetic=page.synthetic)
    plt.close(fig)
    return fig
