"""Mask structure (analysis beyond the paper) on masks whose structure is known: a head is emptied
when its query/key/value rows and its attention-output columns keep under 1% of their weights; a
neuron when its intermediate row and its output column do; Jaccard per layer."""

import pytest
import torch

from srnets_lib.book import mask_structure

HIDDEN, HEADS, FFN = 8, 2, 12  # heads of 4 dimensions


def layer_mask(layer: int, fill: bool = True) -> dict[str, torch.Tensor]:
    shapes = {"attention.self.query": (HIDDEN, HIDDEN), "attention.self.key": (HIDDEN, HIDDEN),
              "attention.self.value": (HIDDEN, HIDDEN), "attention.output.dense": (HIDDEN, HIDDEN),
              "intermediate.dense": (FFN, HIDDEN), "output.dense": (HIDDEN, FFN)}
    return {f"bert.encoder.layer.{layer}.{name}": torch.full(shape, fill) for name, shape in shapes.items()}


def test_a_head_and_a_neuron_are_emptied_only_when_all_their_weights_go():
    mask = {**layer_mask(0), **layer_mask(1), "classifier": torch.ones(3, HIDDEN, dtype=torch.bool)}
    for name in ("query", "key", "value"):  # head 1 of layer 0: rows 4..7 of Q, K, V ...
        mask[f"bert.encoder.layer.0.attention.self.{name}"][4:] = False
    mask["bert.encoder.layer.0.attention.output.dense"][:, 4:] = False  # ... and its output columns
    mask["bert.encoder.layer.1.intermediate.dense"][3] = False  # neuron 3 of layer 1: its row ...
    mask["bert.encoder.layer.1.output.dense"][:, 3] = False  # ... and its column
    mask["bert.encoder.layer.1.intermediate.dense"][5] = False  # neuron 5 keeps its output column
    df = mask_structure.emptied(mask, HEADS).set_index("layer")
    assert df.loc[0, "heads emptied"] == 0.5 and df.loc[1, "heads emptied"] == 0.0
    assert df.loc[0, "neurons emptied"] == 0.0 and df.loc[1, "neurons emptied"] == 1 / FFN


def test_jaccard_by_layer_is_kept_in_both_over_kept_in_either_per_matrix():
    a, b = {**layer_mask(0), **layer_mask(1)}, {**layer_mask(0), **layer_mask(1)}
    b["bert.encoder.layer.1.intermediate.dense"][:6] = False  # half of one of layer 1's six matrices
    df = mask_structure.similarity(a, b).set_index("layer")
    assert df.loc[0, "jaccard"] == 1.0 and df.loc[1, "jaccard"] == (5 + 0.5) / 6


def test_the_frame_compares_each_series_with_the_reference_of_its_task_and_seed():
    a, b = {**layer_mask(0)}, {**layer_mask(0)}
    b["bert.encoder.layer.0.output.dense"][:, :6] = False
    masks = {("nli", 1, "mask train (poe)"): a, ("nli", 1, "imp (poe)"): b, ("nli", 2, "imp (poe)"): a}
    df = mask_structure.frame(masks, HEADS, against="mask train (poe)")
    jaccard = df.set_index(["seed", "series"]).jaccard
    assert jaccard[(1, "imp (poe)")] == (5 + 0.5) / 6
    assert jaccard.isna()[(1, "mask train (poe)")] and jaccard.isna()[(2, "imp (poe)")]  # itself; seed 2 has none


def test_the_figures_title_says_what_its_spread_is_over():
    masks = {("nli", 1, "mask train (poe)"): layer_mask(0), ("nli", 1, "imp (poe)"): layer_mask(0)}
    fig = mask_structure.figure(mask_structure.frame(masks, HEADS, against="mask train (poe)"), 0.7,
                                "mask train (poe)", synthetic=True)
    assert fig._suptitle.get_text().endswith("(one task and one seed: no spread)")
    masks[("nli", 2, "imp (poe)")] = layer_mask(0)
    fig2 = mask_structure.figure(mask_structure.frame(masks, HEADS, against="mask train (poe)"), 0.7,
                                 "mask train (poe)", synthetic=True)
    assert fig2._suptitle.get_text().endswith("(mean ± sd over 1 task and 2 seeds)")


def test_the_figure_draws_each_layers_sparsity_and_only_panels_with_data():
    """No head or neuron emptied: their panels are left out and the title says so; every panel drawn
    has bars, and the legend lists the series drawn."""
    half = layer_mask(0)
    half["bert.encoder.layer.0.intermediate.dense"][:6] = False
    masks = {("nli", 1, "mask train (poe)"): layer_mask(0), ("nli", 1, "imp (poe)"): half}
    df = mask_structure.frame(masks, HEADS, against="mask train (poe)")
    assert df.set_index("series").sparsity["imp (poe)"] == pytest.approx(6 * HIDDEN / (4 * 64 + 2 * 96))  # 6 rows of the intermediate matrix
    fig = mask_structure.figure(df, 0.7, "mask train (poe)", synthetic=True)
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == ["weights pruned (%) (synthetic)", "Jaccard similarity to mask train (poe) (synthetic)"]
    assert all(ax.patches for ax in fig.axes)
    assert "no attention head or feed-forward neuron emptied in any layer" in fig._suptitle.get_text()
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["mask train (poe)", "imp (poe)"]
