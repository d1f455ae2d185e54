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
    """Per layer: its sparsity (the share of its matrices' weights pruned), and the fraction of
    attention heads and of feed-forward neurons that keep under
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
        kept = sum(np.count_nonzero(v) for v in m.values()) / sum(v.size for v in m.values())
        rows.append({"layer": layer, "sparsity": 1.0 - kept, "heads emptied": float(np.mean(per_head < NEARLY_EMPTY)),
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


PANELS = (("sparsity", "weights pruned (%)"), ("heads emptied", "attention heads emptied (%)"),
          ("neurons emptied", "feed-forward neurons emptied (%)"), ("jaccard", "Jaccard similarity to {against}"))


def figure(df: pd.DataFrame, sparsity: float, against: str, synthetic: bool):
    """By layer (mean and sd over the tasks and seeds it has, as its title says): the sparsity of
    each layer, the heads and neurons emptied, and the Jaccard similarity to `against`; a panel only
    where it has something to draw (none emptied in any layer: the title says so), the legend the
    series drawn."""
    plt, sns = plots.pyplot(), plots.seaborn()
    shown = df.assign(**{c: df[c] * 100 for c in ("sparsity", "heads emptied", "neurons emptied")})
    panels = [(c, t.format(against=against)) for c, t in PANELS
              if shown[c].notna().any() and (c in ("sparsity", "jaccard") or (shown[c] > 0).any())]
    fig, axes = plt.subplots(1, len(panels), figsize=(3.4 * len(panels) + 0.6, 3.4), squeeze=False)
    series = list(dict.fromkeys(df.series))  # one colour per series in every panel
    palette = plots.palette_of(series)
    for ax, (column, title) in zip(axes[0], panels):
        data = shown.dropna(subset=[column])
        sns.barplot(data=data, x="layer", y=column, hue="series", hue_order=[s for s in series if s in set(data.series)],
                    palette=palette, errorbar="sd", ax=ax, legend=False)
        ax.set_title(title + (" (synthetic)" if synthetic else ""), fontsize=10)
        ax.set_ylabel("Jaccard" if column == "jaccard" else "%")
        if column != "jaccard":
            ax.set_ylim(0, min(100.0, max(5.0, float(data[column].max()) * 1.15)))
    handles = [plt.Rectangle((0, 0), 1, 1, color=palette[name]) for name in series]
    tasks, seeds = df.task.nunique(), df.seed.nunique()
    over = (f"mean ± sd over {tasks} task{'s' * (tasks != 1)} and {seeds} seed{'s' * (seeds != 1)}"
            if tasks * seeds > 1 else "one task and one seed: no spread")
    none = [c.split()[0] for c in ("heads emptied", "neurons emptied") if c not in dict(panels)]
    note = (f"; no {' or '.join({'heads': 'attention head', 'neurons': 'feed-forward neuron'}[n] for n in none)} "
            f"emptied in any layer (under {NEARLY_EMPTY:.0%} of its weights kept)") if none else ""
    fig.suptitle(f"The masks at sparsity {sparsity:g}, by layer{note} ({over})", fontsize=10)
    fig.tight_layout()
    fig.legend(handles, series, loc="upper center", ncol=min(4, len(series)), fontsize=9, bbox_to_anchor=(0.5, 0.0))
    return fig
