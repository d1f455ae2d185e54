"""Paper-style figures (metric vs sparsity, mean +- std band over seeds, full-model reference
lines) and tables (mean +- std) from a sections.gather.frame DataFrame."""

from __future__ import annotations

import re

import pandas as pd

from srnets_lib.book import columns
from srnets_lib.book.shown import Html


def pyplot():
    """matplotlib's pyplot, imported where a figure is drawn: the book's dependency (the `book`
    extra), never the library's core."""
    import matplotlib.pyplot as plt

    return plt


def seaborn():
    """seaborn, imported where a figure is drawn (the `book` extra)."""
    import seaborn as sns

    return sns

METRIC_LABEL = {"accuracy": "accuracy", "weighted_f1": "weighted F1", "f1": "F1 (duplicate)"}


def metric_columns(df: pd.DataFrame) -> list[str]:
    return ["id"] + sorted(columns.ood_columns(df))


# each series of the book and its colour, the same on every page and in every figure (tab10's and a
# few darker ones); series never drawn together may share one. A series not listed takes, in a
# fixed order from its name, the first of SPARE that no other series of its figure has.
COLOURS = {
    "full bert (std)": "#4d4d4d", "full bert (poe)": "#17becf", "full bert (reweight)": "#bcbd22",
    "full bert (confreg)": "#8c6d31", "full model": "#4d4d4d",
    "full model (std)": "#4d4d4d", "full model (poe)": "#17becf",  # appendix C.5's backbones' own
    "mask train (std)": "#1f77b4", "mask train (poe)": "#d62728", "mask train (poe) on poe ft": "#ff7f0e",
    "mask train (reweight)": "#8c564b", "mask train (confreg)": "#637939",
    "imp (std)": "#2ca02c", "imp (poe)": "#9467bd", "imp (poe) on poe ft": "#e377c2",
    "imp-rw (poe), then std ft": "#98df8a", "imp-rw (poe), then poe ft": "#c5b0d5",
    "mask train (poe), then std ft": "#ff9896", "mask train (poe), then poe ft": "#ffbb78",
    "mask train (std), pt": "#aec7e8", "mask train (poe), pt": "#7b4173",
    "bert-ft subnet": "#393b79", "bert-pt subnet": "#843c39", "bert-pt subnet + ft": "#31a354",
    # section 5.1's ends are runs of 4.4 and 4.2 (the same colours); its other starts are its own
    "ft step=0": "#7b4173", "ft to end": "#d62728",
    "fixed": "#d62728", "gradual 0.7->0.9": "#e6550d",  # fixed 0.9 is 4.2's PoE mask at 0.9 (one run)
    "fixed, soft init": "#6b6ecf", "gradual 0.2->0.9": "#a55194",
    "gradual 0.5->0.9": "#b5cf6b",
    "mask 0.5": "#3182bd", "mask 0.7": "#e6550d", "mask 0.5->0.7": "#31a354",
    "TAMT-MLM": "#d62728", "TAMT-KD": "#1f77b4", "TAMT-MLM+KD": "#9467bd", "IMP": "#2ca02c", "OMP": "#ff7f0e",
    "Rand": "#8c564b", "TAMT-MLM (Rand_init)": "#e377c2", "TAMT-KD (Rand_init)": "#17becf",
}
SPARE = ("#393b79", "#e6550d", "#31a354", "#843c39", "#7b4173", "#3182bd", "#bcbd22", "#8c564b", "#e377c2",
         "#17becf", "#636363", "#9c9ede", "#e7969c", "#a55194", "#6b6ecf", "#b5cf6b")


def palette_of(series: list[str]) -> dict:
    """{series name: its colour} for the series of one figure (every figure draws through this): a
    listed series its colour in COLOURS whatever the figure; another the first free one of SPARE."""
    palette = {name: COLOURS[name] for name in series if name in COLOURS}
    for name in series:
        if name not in palette:
            start = sum(name.encode()) % len(SPARE)  # a fixed start from the name, not from the figure
            taken = set(palette.values())
            palette[name] = next((c for c in SPARE[start:] + SPARE[:start] if c not in taken), SPARE[start])
    return palette


LEAST_SPAN = 5.0  # a score axis spans at least this many points: a 0.3-point spread never reads as a trend


def score_axis(ax, values, least: float = LEAST_SPAN) -> None:
    """A score panel's y-axis (x100): the values drawn (means and their sd ends) with a margin, at
    least `least` points tall, inside [0, 100] (no band or bar above a perfect score)."""
    values = [float(v) for v in values if v == v]
    if not values:
        return
    low, high = min(values), max(values)
    pad = max(0.08 * (high - low), (least - (high - low)) / 2, 0.0)
    low, high = max(0.0, low - pad), min(100.0, high + pad)
    if high - low < least:  # pushed against 0 or 100: widen the other way
        low, high = (max(0.0, high - least), high) if high >= 100.0 else (low, min(100.0, low + least))
    ax.set_ylim(low, high)


def empty_panels(fig) -> list[str]:
    """The titles of a figure's visible panels that draw no data (no line, bar, band or image): a
    page never shows one (Page.figure warns, which the browser check fails on)."""
    return [ax.get_title() or f"panel {i + 1}" for i, ax in enumerate(fig.axes)
            if ax.get_visible() and ax.axison and not (ax.lines or ax.patches or ax.collections or ax.images)]


def palette_legend(fig, palette: dict, columns: int, y: float, line: bool = True, dashed=()) -> None:
    """A figure's legend below its panels: one entry per series of `palette` (palette_of), a marker in
    its colour on a line (dashed for the series in `dashed`) or, with line False, alone."""
    plt = pyplot()
    handles = [plt.Line2D([], [], color=colour, marker="o", ls=("--" if name in dashed else "-") if line else "")
               for name, colour in palette.items()]
    fig.legend(handles, list(palette), loc="lower center", ncol=columns, fontsize=8, bbox_to_anchor=(0.5, y))


def id_label(df: pd.DataFrame) -> str:
    """What the frame's ID scores were measured on: "ID test" (synthetic data's test split, never
    read by selection) or "ID dev" (real data, the authors' protocol: selected and reported on dev)."""
    splits = set(df["id_split"].dropna()) if "id_split" in df else {"dev"}
    return "ID test" if splits == {"test"} else "ID dev" if splits <= {"dev"} else "ID (test or dev)"


def sparsity_figure(df: pd.DataFrame, title: str, xlabel: str = "sparsity", synthetic: bool = True):
    """One row per task, one column per metric (the ID score, then each OOD set), in percent as the
    tables print them."""
    plt, sns = pyplot(), seaborn()
    df = df.assign(**{c: df[c] * 100 for c in metric_columns(df)})
    tasks = list(dict.fromkeys(df["task"]))
    panels = max(len([c for c in metric_columns(df[df.task == t]) if df[df.task == t][c].notna().any()])
                  for t in tasks)
    fig, axes = plt.subplots(len(tasks), panels, figsize=(4.2 * panels, 3.3 * len(tasks)), squeeze=False)
    palette = palette_of(list(dict.fromkeys(df["series"])))
    for row, task in enumerate(tasks):
        sub = df[df.task == task]
        cols = [c for c in metric_columns(sub) if sub[c].notna().any()]
        for col, metric in enumerate(cols):
            ax = axes[row][col]
            curves = sub[~sub.reference]
            if not curves.empty:
                sns.lineplot(data=curves, x="x", y=metric, hue="series", palette=palette, marker="o",
                             errorbar="sd", ax=ax, legend=(row == 0 and col == 0))
            stats = curves.groupby(["series", "x"])[metric].agg(["mean", "std"]).fillna(0.0)  # the sd bands' ends
            drawn = list(stats["mean"] + stats["std"]) + list(stats["mean"] - stats["std"])
            for name, ref in sub[sub.reference].groupby("series"):
                mean, std = ref[metric].mean(), (ref[metric].std(ddof=1) if ref[metric].count() > 1 else 0.0)
                ax.axhline(mean, ls="--", color=palette[name], label=name)
                ax.axhspan(mean - std, min(100.0, mean + std), color=palette[name], alpha=0.1)
                drawn += [mean - std, mean + std]
            score_axis(ax, drawn)
            name = id_label(sub) if metric == "id" else columns.name(metric)
            ax.set_title(f"{task}: {name}" + (" (synthetic)" if synthetic else ""), fontsize=10)
            ax.set_xlabel(xlabel)
            if (sub.x % 1 == 0).all():  # whole epochs or steps: no half ticks
                ax.xaxis.get_major_locator().set_params(integer=True)
            kind = sub["metric" if metric == "id" else "ood_metric"].iloc[0]
            ax.set_ylabel(f"{METRIC_LABEL.get(kind, 'score')} (%)")
        for col in range(len(cols), panels):
            axes[row][col].axis("off")
    handles, labels = axes[0][0].get_legend_handles_labels()
    if axes[0][0].get_legend():
        axes[0][0].get_legend().remove()
    fig.suptitle(title)
    fig.tight_layout()
    # below the panels, clear of their axis labels (the page's inline figure is cut to fit what it draws)
    fig.legend(handles, labels, loc="upper center", ncol=min(4, len(labels)), fontsize=8, bbox_to_anchor=(0.5, 0.0))
    return fig


def curve_figure(df: pd.DataFrame, title: str, x: str = "step", synthetic: bool = True):
    """Training curves (metrics.jsonl rows), one panel per metric, mean +- std over seeds."""
    plt, sns = pyplot(), seaborn()
    metrics = [c for c in ["dev"] + sorted(set(df.columns) - {"dev", "step", "epoch", "sparsity", "loss",
                                                                  "series", "task", "seed", "x"}) if c in df]
    fig, axes = plt.subplots(1, len(metrics), figsize=(4.5 * len(metrics), 3.3), squeeze=False)
    df = df.assign(**{m: 100 * df[m] for m in metrics})  # in percent, as the tables print scores
    for ax, metric in zip(axes[0], metrics):
        sns.lineplot(data=df, x=x, y=metric, hue="series", errorbar="sd", ax=ax,
                     palette=palette_of(list(dict.fromkeys(df.series))), legend=ax is axes[0][0])
        name = {"dev": "ID dev", "test": "ID test"}.get(metric, f"OOD {metric}")
        ax.set_title(name + (" (synthetic)" if synthetic else ""), fontsize=10)
        ax.set_ylabel(f"{name} accuracy (%)")
        ax.set_xlabel(f"mask-training {x}s" if x in ("step", "epoch") else x)
        ax.set_ylim(top=min(100.5, ax.get_ylim()[1]))
    handles, labels = axes[0][0].get_legend_handles_labels()
    if axes[0][0].get_legend():
        axes[0][0].get_legend().remove()
    fig.suptitle(title)
    fig.tight_layout()
    fig.legend(handles, labels, loc="upper center", ncol=min(4, max(1, len(labels))), fontsize=8,
               bbox_to_anchor=(0.5, 0.0))  # below the panels, not over the curves
    return fig


def table(df: pd.DataFrame, index=("task", "series", "x")) -> pd.DataFrame:
    """mean ± sample std over seeds (x100, one decimal, like the paper's tables; the mean alone from one
    seed) of the ID score and of each OOD set, the sets as rows of their own ("OOD set"), so no
    column is empty for a task without that set; rows without any OOD score keep "–"."""
    sets = [c for c in columns.ood_columns(df) if df[c].notna().any()]
    keys = list(index)
    if sets:
        rest = [c for c in df.columns if c not in sets]
        long = df.melt(id_vars=rest, value_vars=sets, var_name="OOD set", value_name="OOD").dropna(subset=["OOD"])
        long["OOD set"] = long["OOD set"].map(columns.name)
        none = df[df[sets].isna().all(axis=1)][rest].assign(**{"OOD set": "–", "OOD": float("nan")})
        df, keys = pd.concat([long, none], ignore_index=True), keys + ["OOD set"]
    grouped = df.groupby(keys)[["id", "OOD"] if sets else ["id"]]
    mean, std, seeds = grouped.mean() * 100, grouped.std(ddof=1).fillna(0) * 100, grouped.size()  # sample std
    out = pd.DataFrame({(id_label(df) if c == "id" else c): [
        "–" if pd.isna(m) else f"{m:.1f}" if n == 1 else f"{m:.1f} ± {s:.1f}"  # no spread from one seed
        for m, s, n in zip(mean[c], std[c], seeds)] for c in mean.columns}, index=mean.index)
    out["seeds"] = seeds
    return out.sort_index(key=lambda level: level if pd.api.types.is_numeric_dtype(level) else level.map(_natural))


def _natural(value) -> str:
    """A label's sort key with its numbers in numeric order ("ft step=8" before "ft step=16")."""
    return re.sub(r"\d+(?:\.\d+)?", lambda m: f"{float(m.group()):020.6f}", str(value))


def folded(df: pd.DataFrame, what: str, longer_than: int = 24):
    """A table shown whole (pandas' display cuts the middle of one over 60 rows): one longer than
    `longer_than` rows inside a collapsed <details> block that says what it holds."""
    if not isinstance(df, pd.DataFrame) or len(df) <= longer_than:
        return df
    return Html(f"<details><summary>{what}: {len(df)} rows (click to open)</summary>{df.to_html()}</details>")


def subset_figure(df: pd.DataFrame, title: str, synthetic: bool = True):
    """Accuracy per subset of each task's OOD set (gather.subsets rows), one panel per task: the
    subsets of its subset column (HANS's heuristics, the synthetic members) or else its labels,
    grouped by label; mean ± sd over seeds."""
    plt, sns = pyplot(), seaborn()
    ood = df[~df.split.isin(["dev", "test"])]
    tasks = list(dict.fromkeys(ood.task))
    # one task's panel as wide as the legend below it
    fig, axes = plt.subplots(1, max(1, len(tasks)), figsize=(max(9.0, 5.2 * len(tasks)), 4.4), squeeze=False)
    series = list(dict.fromkeys(ood.series))
    palette = palette_of(series)
    for ax, task in zip(axes[0], tasks):
        rows = ood[ood.task == task]
        kind = next((k for k in dict.fromkeys(rows.subset) if k != "label"), "label")
        shown = rows[rows.subset == kind].assign(accuracy=lambda d: d.accuracy * 100)
        order = list(shown.sort_values(["label", "value"]).value.drop_duplicates())  # grouped by label
        sns.barplot(data=shown, x="value", y="accuracy", hue="series", order=order, hue_order=series,
                    palette=palette, errorbar="sd", ax=ax, legend=False)
        ax.set_title(f"{task}: {rows.split.iloc[0]} per {kind}" + (" (synthetic)" if synthetic else ""), fontsize=10)
        ax.set_xlabel("")
        ax.set_ylabel("accuracy (%)")
        ax.set_ylim(0, 105)
        ax.tick_params(axis="x", labelrotation=45, labelsize=8)
        for tick in ax.get_xticklabels():
            tick.set_horizontalalignment("right")
    handles = [plt.Rectangle((0, 0), 1, 1, color=palette[name]) for name in series]
    columns = min(3, len(series))
    fig.legend(handles, series, loc="lower center", ncol=columns, fontsize=8, bbox_to_anchor=(0.5, 0.0))
    fig.suptitle(title)
    fig.tight_layout(rect=(0, 0.045 * -(-len(series) // columns), 1, 1))  # the legend's rows below the panels
    return fig
