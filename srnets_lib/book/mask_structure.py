"""The structure of the subnetworks' masks, per Transformer layer: an analysis the paper does not
give. How many attention heads and feed-forward neurons a mask empties (or nearly: it keeps under
NEARLY_EMPTY of their weights), and how similar the masks of two methods or losses are at the
same sparsity (Jaccard, per matrix, averaged over a layer's matrices: pruning.jaccard)."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import torch

from srnets_lib.book import plots
from srnets_lib.model.pruning import jaccard

NEARLY_EMPTY = 0.01
LAYER = re.compile(r"(?:^|\.)layer\.(\d+)\.(.+)$")
QKV = ("attention.self.query", "attention.self.key", "attention.self.value")


def by_layer(mask: dict[str, torch.Tensor]) -> dict[int, dict[str, torch.Tensor]]:
    """{layer: {matrix within the layer ("attention.self.query", ...): its boolean mask}}; the
    pooler, the classifier and the embeddings are in no layer."""
    layers: dict[int, dict[str, torch.Tensor]] = {}
    for name, kept in mask.items():
        match = LAYER.search(name)
        if match:
            layers.setdefault(int(match.group(1)), {})[match.group(2)] = kept
    return dict(sorted(layers.items()))


def emptied(mask: dict[str, torch.Tensor], num_heads: int) -> pd.DataFrame:
    """Per layer: the fraction of attention heads and of feed-forward neurons that keep under
    NEARLY_EMPTY of their weights. A head's weights: its rows of the query, key and value matrices
    (nn.Linear weights are [out, in]) and its columns of the attention output; a neuron's: its row
    of the intermediate matrix and its column of the output matrix."""
    rows = []
    for layer, m in by_layer(mask).items():
        m = {name: kept.numpy() for name, kept in m.items()}
        rows_kept = sum(np.count_nonzero(m[name], axis=1) for name in QKV)  # per output row
        out = np.count_nonzero(m["attention.output.dense"], axis=0)  # per input column
        hidden = out.size
        head = hidden // num_heads
        per_head = (rows_kept.reshape(num_heads, head).sum(1) + out.reshape(num_heads, head).sum(1)) / (4 * head * hidden)
        neuron = (np.count_nonzero(m["intermediate.dense"], axis=1)
                  + np.count_nonzero(m["output.dense"], axis=0)) / (2 * hidden)
        rows.append({"layer": layer, "heads emptied": float(np.mean(per_head < NEARLY_EMPTY)),
                     "neurons emptied": float(np.mean(neuron < NEARLY_EMPTY))})
    return pd.DataFrame(rows)


def similarity(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> pd.DataFrame:
    """Per layer: the Jaccard similarity of two masks over the layer's matrices."""
    la, lb = by_layer(a), by_layer(b)
    return pd.DataFrame([{"layer": layer, "jaccard": jaccard(la[layer], lb[layer])} for layer in la])


def frame(masks: dict[tuple, dict[str, torch.Tensor]], num_heads: int, against: str) -> pd.DataFrame:
    """masks {(task, seed, series): mask} of one sparsity -> per (task, seed, series, layer): heads
    and neurons emptied, and the Jaccard similarity to the `against` series' mask of the same task
    and seed (NaN for that series itself, or where it is missing)."""
    parts = []
    for (task, seed, series), mask in masks.items():
        part = emptied(mask, num_heads).assign(task=task, seed=seed, series=series)
        other = masks.get((task, seed, against))
        part["jaccard"] = (similarity(mask, other).jaccard.values if other is not None and series != against
                           else float("nan"))
        parts.append(part)
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def figure(df: pd.DataFrame, sparsity: float, against: str, synthetic: bool):
    """Three panels by layer (mean and sd over the tasks and seeds it has, as its title says): heads
    emptied, neurons emptied, Jaccard similarity to `against`."""
    plt, sns = plots.pyplot(), plots.seaborn()
    panels = [("heads emptied", "attention heads emptied (%)"), ("neurons emptied", "feed-forward neurons emptied (%)"),
              ("jaccard", f"Jaccard similarity to {against}")]
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    shown = df.assign(**{c: df[c] * 100 for c in ("heads emptied", "neurons emptied")})
    series = list(dict.fromkeys(df.series))  # one colour per series in every panel
    palette = plots.palette_of(series)
    for ax, (column, title) in zip(axes, panels):
        data = shown.dropna(subset=[column])
        if not data.empty:
            sns.barplot(data=data, x="layer", y=column, hue="series", hue_order=series, palette=palette,
                        errorbar="sd", ax=ax, legend=ax is axes[0])
        if column != "jaccard" and not (data[column] > 0).any():
            ax.text(0.5, 0.5, f"none in any layer\n(emptied: under {NEARLY_EMPTY:.0%} of its weights kept)",
                    ha="center", va="center", transform=ax.transAxes)
        ax.set_title(title + (" (synthetic)" if synthetic else ""), fontsize=10)
        ax.set_ylabel("%" if column != "jaccard" else "Jaccard")
        if column != "jaccard":
            ax.set_ylim(0, max(5.0, float(data[column].max()) * 1.2 if not data.empty else 0.0))
    if axes[0].get_legend():
        axes[0].get_legend().remove()
    handles = [plt.Rectangle((0, 0), 1, 1, color=palette[name]) for name in series]
    tasks, seeds = df.task.nunique(), df.seed.nunique()
    over = (f"mean ± sd over {tasks} task{'s' * (tasks != 1)} and {seeds} seed{'s' * (seeds != 1)}"
            if tasks * seeds > 1 else "one task and one seed: no spread")
    fig.suptitle(f"The masks at sparsity {sparsity:g}, by layer ({over})")
    fig.tight_layout()
    fig.legend(handles, series, loc="upper center", ncol=min(6, len(series)), fontsize=8, bbox_to_anchor=(0.5, 0.0))
    return fig
