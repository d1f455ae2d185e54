"""Part II's figures of the analyses (tamt_analyses.py): held-out pre-training loss against the
downstream score (TAMT figures 5, 12, 13), the masks' distance to OMP at the end of their search
and along it (figure 8), and their pairwise similarity (figure 17)."""

from __future__ import annotations

import pandas as pd

from srnets_lib.book import columns
from srnets_lib.book import plots
from srnets_lib.book.sections.tamt import FULL, OBJECTIVES, PROBE_TASK, SERIES
from srnets_lib.book.sections.tamt_analyses import COMPARED, LOSSES, analysis, distance_curves, distances, similarities

def similarity_figure(results):
    """Figure 17: one heat map per sparsity of the methods' pairwise mask similarity."""
    plt = plots.pyplot()
    table = similarities(results)
    xs = sorted(set(table.x)) or [None]
    fig, axes = plt.subplots(1, len(xs), figsize=(3.4 * len(xs), 3.2), squeeze=False)
    for ax, x in zip(axes[0], xs):
        grid = table[table.x == x].pivot(index="a", columns="b", values="similarity").reindex(
            index=list(COMPARED), columns=list(COMPARED)) if x is not None else None
        if grid is not None:
            ax.imshow(grid.to_numpy(dtype=float), vmin=0, vmax=1, cmap="viridis")
            for i in range(len(COMPARED)):
                for j in range(len(COMPARED)):
                    value = grid.iat[i, j]
                    ax.text(j, i, "" if pd.isna(value) else f"{value:.2f}", ha="center", va="center", fontsize=7, color="w")
            ax.set_title(f"{x:.0%} sparsity", fontsize=10)
        ax.set_xticks(range(len(COMPARED)), COMPARED, rotation=35, ha="right", fontsize=8)
        ax.set_yticks(range(len(COMPARED)), COMPARED, fontsize=8)
    fig.suptitle("Pairwise Jaccard similarity of the masks (cf. TAMT figure 17)" + (" (synthetic)" if results.synthetic else ""))
    fig.tight_layout()
    plt.close(fig)
    return fig


def final_distance_figure(results):
    """Figure 8 at the end of the searches: each method's mask distance to the OMP mask of its
    sparsity (mean ± sd over mask seeds); the iterations page draws it along the searches."""
    plt = plots.pyplot()
    masks = distances(results)
    masks = masks[masks.series != "OMP"]
    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    if not masks.empty:
        names = list(dict.fromkeys(masks.series))
        palette = plots.palette_of(names)
        xs = sorted(set(masks.x))
        width = 0.8 / len(names)
        for i, name in enumerate(names):
            stats = masks[masks.series == name].groupby("x")["distance to OMP"].agg(["mean", "std"]).reindex(xs)
            ax.bar([k + i * width for k in range(len(xs))], stats["mean"], width, yerr=stats["std"].fillna(0),
                   capsize=2, color=palette[name], label=name)
        ax.set_xticks([k + width * (len(names) - 1) / 2 for k in range(len(xs))], [f"{x:g}" for x in xs])
        ax.legend(fontsize=8)
    ax.set_xlabel("sparsity")
    ax.set_ylabel("1 - Jaccard to the OMP mask")
    fig.suptitle("Mask distance to OMP, masks at the end of their search (cf. TAMT figure 8)")
    fig.tight_layout()
    plt.close(fig)
    return fig


def trajectory_distance_figure(results, sparsity: float):
    """Figure 8: each search's distance to the OMP mask against its iterations, one panel per
    sparsity whose searches the store has (mean +- sd over mask seeds); None where it has none."""
    plt = plots.pyplot()
    table = distance_curves(results)
    groups = [g for g in dict.fromkeys(p.group for p in results.points if not p.reference)
              if not table.empty and (table.group == g).any()]
    if not groups:
        return None
    fig, axes = plt.subplots(1, len(groups), figsize=(4.6 * len(groups), 3.6), squeeze=False)
    palette = plots.palette_of([SERIES[o] for o in OBJECTIVES] + ["IMP"])
    for ax, group in zip(axes[0], groups):
        for name, rows in table[table.group == group].groupby("series"):
            stats = rows.groupby("x")["distance to OMP"].agg(["mean", "std"]).sort_index()
            ax.errorbar(stats.index, stats["mean"], yerr=stats["std"].fillna(0), marker="o", ms=3, capsize=2,
                        color=palette[name], label=name, ls="-" if name != "IMP" else ":")
        ax.set_title(group or f"{sparsity:.0%} sparsity", fontsize=10)
        ax.set_xlabel("pre-training iterations")
        ax.set_ylabel("1 - Jaccard to the OMP mask")
        ax.legend(fontsize=8)
    fig.suptitle("Mask distance to OMP along the searches (cf. TAMT figure 8)" + (" (synthetic)" if results.synthetic else ""))
    fig.tight_layout()
    plt.close(fig)
    return fig


def loss_figure(results, tasks: list[str], title: str):
    """Figure 5: every subnetwork's held-out loss against its mean score over the figure's tasks;
    TAMT's masks along training (make book-full) as one line per sparsity, from few to many steps."""
    plt = plots.pyplot()
    table = analysis(results).dropna(subset=["score"])
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    palette = plots.palette_of(list(dict.fromkeys(table.series)))
    for ax, loss in zip(axes, LOSSES):
        rows = table.dropna(subset=[loss]) if loss in table else table.iloc[0:0]
        for (name, x), part in rows.groupby(["series", "x"]):
            trajectory = part[part.group != ""].assign(steps=lambda d: d.group.str.split().str[0].astype(int))
            if len(trajectory) > 1:
                trajectory = trajectory.sort_values("steps")
                ax.plot(trajectory[loss], 100 * trajectory.score, "-", color=palette[name], alpha=0.6, lw=1)
            ax.scatter(part[loss], 100 * part.score, color=palette[name], s=20 + 60 * (x - 0.4), alpha=0.8)
        ax.set_xlabel(f"held-out {loss.replace('_', ' ')}")
        ax.set_ylabel("mean score (x100) over " + ", ".join(tasks))
        ax.set_title(f"{loss.replace('_', ' ')} vs mean score" + (" (synthetic)" if results.synthetic else ""), fontsize=10)
    plots.palette_legend(fig, palette, max(1, min(6, len(palette))), -0.04, line=False)
    fig.suptitle(title + "; marker size: sparsity; lines: TAMT's masks along training")
    fig.tight_layout()
    plt.close(fig)
    return fig


def per_task_figure(results, tasks: list[str]):
    """Figures 12 and 13: each held-out loss against each task's score (the figure's tasks)."""
    plt = plots.pyplot()
    probes = results.frame[results.frame.task == PROBE_TASK]
    losses = probes.groupby(["series", "x", "group"])[[columns.score(k) for k in LOSSES if columns.score(k) in probes]].mean()
    tasks = [t for t in tasks if t in set(results.frame.task)]
    scores = results.frame[results.frame.task.isin(tasks) & (results.frame.series != FULL)].groupby(
        ["series", "x", "group", "task"]).id.mean().unstack("task")
    table = losses.join(scores, how="inner").reset_index()
    fig, axes = plt.subplots(2, max(1, len(tasks)), figsize=(3.6 * max(1, len(tasks)), 6.4), squeeze=False)
    palette = plots.palette_of(list(dict.fromkeys(table.series)))
    for row, loss in enumerate(LOSSES):
        for ax, task in zip(axes[row], tasks):
            column = columns.score(loss)
            if column in table and task in table:
                for name, part in table.groupby("series"):
                    ax.scatter(part[column], 100 * part[task], color=palette[name], s=14, label=name)
            ax.set_xlabel(f"held-out {loss.replace('_', ' ')}", fontsize=8)
            ax.set_ylabel("score (x100)", fontsize=8)
            ax.set_title(f"{task}" + (" (synthetic)" if results.synthetic else ""), fontsize=9)
    plots.palette_legend(fig, palette, max(1, min(6, len(palette))), -0.03, line=False)
    fig.suptitle("Held-out MLM (top) and KD (bottom) loss vs each task's score (cf. TAMT figures 12, 13)")
    fig.tight_layout()
    plt.close(fig)
    return fig
