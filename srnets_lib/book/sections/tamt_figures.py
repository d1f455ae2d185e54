"""Part II's score figures: a TAMT page's scores per task and their mean over tasks against
sparsity or iterations (TAMT figures 2-4, 6, 7, 10, 11, 14-16), and figure 1's one-shot
subnetworks; the full models as reference lines, the spread over fine-tuning seeds as bands."""

from __future__ import annotations

import pandas as pd

from srnets_lib.book import columns
from srnets_lib.book import plots
from srnets_lib.book.sections.tamt import FULL, PROBE_TASK, scores_only
from srnets_lib.book.sections.tamt_analyses import LOSSES

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


def score_figure(results, title: str, xlabel: str, frame: pd.DataFrame | None = None, tasks=None, log_x: bool = False):
    """One panel per task and one for the mean over `tasks` (None: the frame's): ID score (x100, as the
    tables and the paper print it) against x, mean ± sd over the runs (mask and fine-tuning seeds) as draw() shows it; the mean panel's spread is
    over fine-tuning seeds (per_seed_means). Of the page's frame, or of `frame` (one group's rows)."""
    plt = plots.pyplot()
    frame = results.frame if frame is None else frame
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
        ax.set_title(f"{panel}: {plots.id_label(df)}" + (" (synthetic)" if results.synthetic else ""), fontsize=10)
        ax.set_xlabel(xlabel if rows.x.nunique() > 1 or rows.empty else "")
    for ax in list(axes.flat)[len(panels):]:
        ax.axis("off")
    plots.palette_legend(fig, palette, max(1, min(4, len(palette))), -0.02 - 0.04 * (len(palette) // 4), dashed={FULL})
    fig.suptitle(title)
    fig.tight_layout()
    plt.close(fig)
    return fig


def oneshot_figure(results):
    """Figure 1: OMP and random subnetworks against sparsity: the mean score over every task (its
    spread over fine-tuning seeds), then each held-out loss (over mask seeds)."""
    plt = plots.pyplot()
    rows = results.frame[results.frame.series.isin(["OMP", "Rand"]) & (results.frame.group == "")]
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    palette = plots.palette_of(["OMP", "Rand"])
    tasks = [t for t in results.tasks if t in set(rows.task)]
    means = per_seed_means(rows, tasks) if tasks else rows.iloc[0:0]
    draw(axes[0], means.assign(id=100 * means.id), rows.iloc[0:0], palette)
    axes[0].set_ylabel(f"mean score over {len(tasks)} tasks (x100)")
    corpus = rows[rows.task == PROBE_TASK]
    for ax, loss in zip(axes[1:], LOSSES):
        column = columns.score(loss)
        draw(ax, corpus.assign(id=corpus[column]) if column in corpus else corpus.iloc[0:0], corpus.iloc[0:0], palette)
        ax.set_ylabel(f"held-out {loss.replace('_', ' ')}")
    xs = sorted(set(rows.x.dropna()))
    for ax in axes:  # one sparsity: bars per series, the sparsity said below them
        ax.set_xlabel("sparsity" if len(xs) != 1 else f"at {xs[0]:.0%} sparsity")
        ax.set_title(ax.get_ylabel() + (" (synthetic)" if results.synthetic else ""), fontsize=10)
    plots.palette_legend(fig, palette, 2, -0.05)
    fig.suptitle("OMP and random subnetworks: downstream and pre-training performance (cf. TAMT figure 1)")
    fig.tight_layout()
    plt.close(fig)
    return fig
