"""The interactive copy of a sparsity figure (book/interactive.py): every run of the figure is a
point whose hover names its run, seed and exact score; a series is one legend entry toggling it in
every panel; and the HTML draws offline (plotly.js inside it, nothing fetched)."""

import re

import pandas as pd

from srnets_lib.book import interactive


def points() -> pd.DataFrame:
    """Section 4.2's figure points as Page.data("figure") gives them: two seeds of a mask series at
    two sparsities and a full model, on NLI's ID test split and HANS-like."""
    rows = [("full bert (std)", 1, 0.0, True, 0.93, 0.70, "nli-finetune-std-a"),
            ("full bert (std)", 2, 0.0, True, 0.95, 0.72, "nli-finetune-std-b")]
    rows += [("mask train (poe)", seed, x, False, 0.90 - x / 10 + seed / 100, 0.94, f"nli-mask-poe-{seed}-{x}")
             for seed in (1, 2) for x in (0.5, 0.7)]
    return pd.DataFrame([{"series": s, "task": "nli", "seed": seed, "x": x, "reference": ref, "group": "", "level": None,
                          "id": i, "ood:hans-like": o, "key": key} for s, seed, x, ref, i, o, key in rows])


def test_every_run_is_a_point_that_names_its_run_seed_and_score():
    fig = interactive.figure(points(), "figures 2 and 3")
    hovers = [t for trace in fig.data if trace.text is not None for t in trace.text]
    assert len(hovers) == 2 * len(points())  # each run once per panel: ID and HANS-like
    first = next(h for h in hovers if "nli-mask-poe-1-0.5" in h and ", id:" in h)
    assert "seed 1" in first and "sparsity 0.5" in first and "id: 86.0000" in first  # 0.90 - 0.05 + 0.01, in %


def test_a_series_is_one_legend_entry_toggling_every_panel():
    fig = interactive.figure(points(), "figures 2 and 3")
    legend = [t.name for t in fig.data if t.showlegend is not False]
    assert sorted(legend) == ["full bert (std)", "mask train (poe)"]
    assert {t.legendgroup for t in fig.data} == {"full bert (std)", "mask train (poe)"}
    assert len({(t.xaxis, t.yaxis) for t in fig.data}) == 2  # two panels


def test_the_html_draws_offline():
    html = interactive.explore(points(), "figures 2 and 3")
    assert f'id="{interactive.POINT_ID}"' in html and "plotly.js v" in html  # the library inside the page
    assert not re.search(r'<script[^>]+src=', html)  # nothing loaded from elsewhere
