"""What Part II's pages share (TAMT, Liu et al. NAACL 2022): the subnetworks searched on the
corpus (the legend of figure 3: TAMT-MLM, TAMT-KD, TAMT-MLM+KD, IMP, OMP, Rand) and the masks
behind each; the mean downstream score over tasks."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from srnets_lib.book import columns, plots
from srnets_lib.book.sections import noise
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


def judged_rows(page) -> pd.DataFrame:
    """The page's frame without its opt-in points (those `make book-full` adds): what its verdicts
    read, as the scorecard, which gathers the default points only, reads them."""
    shown = {(p.series, p.task, p.seed, p.x, p.group) for p in page.points}
    if page.frame.empty:
        return page.frame
    keep = [key in shown for key in zip(page.frame.series, page.frame.task, page.frame.seed, page.frame.x, page.frame.group)]
    return page.frame[keep]


METRIC_NAMES = {"accuracy": "accuracy", "matthews_corrcoef": "Matthews corr.", "pearson": "Pearson r",
                "squad_f1": "F1", "acc_and_f1": "(accuracy + F1) / 2",
                "max_acc_acc_and_f1": "max(accuracy, (accuracy + F1) / 2)", "f1": "F1", "weighted_f1": "weighted F1"}


def per_seed_means(df: pd.DataFrame, tasks) -> pd.DataFrame:
    """Rows of the mean over `tasks` per series, x and seed (a transfer's seed is its fine-tuning seed,
    its mask seeds averaged), for the seeds every task has: the mean panel's values and spread."""
    rows = df[df.task.isin(tasks) & ~df.reference.astype(bool)]
    if rows.empty:
        return rows.assign(id=[])
    per = rows.groupby(["series", "x", "seed", "task"]).id.mean().unstack("task").reindex(columns=list(tasks))
    return per.mean(axis=1, skipna=False).dropna().rename("id").reset_index()


def draw(ax, rows: pd.DataFrame, references: pd.DataFrame, palette: dict, log_x: bool = False) -> None:
    """One panel: each series' score (mean ± sd over its runs): a line over x where the series has
    several x values, a dot with an error bar where it has one (where no series has more than one,
    the series side by side: dots, not bars from 0, which would hide a 1-point difference); each
    reference (the full model) a dashed line with its ± sd band; the y-axis at least
    plots.LEAST_SPAN points tall, inside [0, 100]."""
    plt = plots.pyplot()
    several = rows.groupby("series").x.nunique() > 1 if not rows.empty else pd.Series(dtype=bool)
    drawn = []
    if not rows.empty and not several.any():  # one x per series: a dot with its sd per series, in order
        stats = rows.groupby("series", sort=False).id.agg(["mean", "std", "size"])
        stats = stats.reindex([n for n in palette if n in stats.index])  # every panel in the legend's order
        names = list(stats.index)
        for i, name in enumerate(names):
            ax.errorbar([i], [stats["mean"][name]], yerr=[0 if pd.isna(stats["std"][name]) else stats["std"][name]],
                        fmt="o", ms=6, capsize=4, color=palette[name])
        ax.set_xticks(range(len(names)), names, rotation=35, ha="right", fontsize=8)
        ax.set_xlim(-0.6, len(names) - 0.4)
        drawn += list(stats["mean"] + stats["std"].fillna(0)) + list(stats["mean"] - stats["std"].fillna(0))
    else:
        for name, series in rows.groupby("series", sort=False):
            stats = series.groupby("x").id.agg(["mean", "std"]).sort_index()
            spread = stats["std"].fillna(0)
            if len(stats) > 1:
                ax.plot(stats.index, stats["mean"], marker="o", ms=3, color=palette[name], label=name)
                ax.fill_between(stats.index, stats["mean"] - spread, (stats["mean"] + spread).clip(upper=100.0),
                                color=palette[name], alpha=0.15)
            else:
                ax.errorbar(stats.index, stats["mean"], yerr=spread, fmt="o", capsize=3, color=palette[name], label=name)
            drawn += list(stats["mean"] + spread) + list(stats["mean"] - spread)
        if log_x:
            ax.set_xscale("log")
    for name, ref in references.groupby("series"):
        mean, std = ref.id.mean(), (ref.id.std() if len(ref) > 1 else 0.0)  # sample sd over the runs
        ax.axhline(mean, ls="--", color=palette[name], label=name)
        ax.axhspan(mean - std, min(100.0, mean + std), color=palette[name], alpha=0.1)
        drawn += [mean - std, mean + std]
    plots.score_axis(ax, drawn)
    plt.setp(ax.get_yticklabels(), fontsize=8)


def score_figure(page, title: str, xlabel: str, frame: pd.DataFrame | None = None, tasks=None, log_x: bool = False):
    """One panel per task and one for the mean over `tasks` (None: the frame's): ID score (x100, as the
    tables and the paper print it) against x, mean ± sd over the runs (mask and fine-tuning seeds) as draw() shows it; the mean panel's spread is
    over fine-tuning seeds (per_seed_means). Of the page's frame, or of `frame` (one group's rows)."""
    plt = plots.pyplot()
    frame = page.frame if frame is None else frame
    df = scores_only(frame[frame.task != PROBE_TASK])
    df = df.assign(id=100 * df.id)
    names = list(dict.fromkeys(df.task))
    tasks = [t for t in (tasks or names) if t in names]
    panels = names + (["mean over tasks"] if len(tasks) > 1 else [])
    columns = min(4, len(panels))
    rows_count = -(-len(panels) // columns)
    fig, axes = plt.subplots(rows_count, columns, figsize=(4.2 * columns, 3.4 * rows_count), squeeze=False)
    palette = plots.palette_of(list(dict.fromkeys(df.series)))
    for ax, panel in zip(axes.flat, panels):
        if panel == "mean over tasks":
            rows, refs = per_seed_means(df, tasks), per_seed_means(df.assign(reference=False)[df.reference.astype(bool)], tasks)
            ax.set_ylabel("mean score (x100)" + (f" ({len(tasks)} tasks)" if tasks != names else ""))
        else:
            sub = df[df.task == panel]
            rows, refs = sub[~sub.reference.astype(bool)], sub[sub.reference.astype(bool)]
            ax.set_ylabel(METRIC_NAMES.get(sub.metric.iloc[0], sub.metric.iloc[0]) + " (x100)")
        draw(ax, rows, refs, palette, log_x)
        ax.set_title(f"{panel}: {plots.id_label(df)}" + (" (synthetic)" if page.synthetic else ""), fontsize=10)
        ax.set_xlabel(xlabel if rows.x.nunique() > 1 or rows.empty else "")
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    plots.palette_legend(fig, palette, max(1, min(4, len(palette))), -0.02 - 0.04 * (len(palette) // 4), dashed={FULL})
    fig.suptitle(title)
    fig.tight_layout()
    plt.close(fig)
    return fig
