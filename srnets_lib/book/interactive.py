"""An interactive copy of a page's sparsity figure (sections 4.2-4.4, C.1), for a reader who would
rather explore than read: hover a point for its run key, seed and exact score; click a legend entry
to hide or show its series in every panel. Drawn with plotly, the library made for figures a browser
redraws: its figures are JSON that plotly.js draws, in the HTML book and in JupyterLab alike, and
plotly.js comes inside the Python package, so the page embeds it and works offline (no CDN). The
static figure stays above it, for readers without JavaScript."""

from __future__ import annotations

import pandas as pd

from srnets_lib.book import columns, plots
from srnets_lib.book.shown import Html, Shown

POINT_ID = "srnets-explore"  # the figure's HTML id (the browser check hovers a point of it)


def _panels(frame: pd.DataFrame) -> list[tuple[str, str]]:
    """(task, column) per panel: each task's ID score, then each of its OOD sets'."""
    return [(task, column) for task in dict.fromkeys(frame.task)
            for column in ["id"] + sorted(c for c in columns.ood_columns(frame) if frame.loc[frame.task == task, c].notna().any())]


def _hover(row, column: str) -> str:
    level = "" if pd.isna(row.get("level")) else f", IMP level {row['level']:g}"
    return (f"<b>{row['series']}</b><br>{row['task']}, {column.removeprefix('ood:')}: {100 * row[column]:.4f}"
            f"<br>sparsity {row['x']:g}, seed {row['seed']}<br>run {row['key']}{level}")


def figure(frame: pd.DataFrame, title: str):
    """The plotly Figure: one panel per (task, score); per series its seeds' points (hover: run,
    seed, score) and the line through their means; full models as dashed lines across the panel."""
    from plotly.subplots import make_subplots
    import plotly.graph_objects as go

    panels, tasks = _panels(frame), list(dict.fromkeys(frame.task))
    ncols, nrows = max(sum(1 for t, _ in panels if t == task) for task in tasks), len(tasks)
    fig = make_subplots(rows=nrows, cols=ncols, subplot_titles=[f"{t}: {c.removeprefix('ood:')}" for t, c in panels],
                        horizontal_spacing=0.08, vertical_spacing=0.12 if nrows > 1 else 0.2)
    palette = plots.palette_of(list(dict.fromkeys(frame.series)))
    xs = sorted(set(frame.loc[~frame.reference.astype(bool), "x"])) or [0.0, 1.0]
    shown = set()
    for task, column in panels:
        row, col = tasks.index(task) + 1, [c for t, c in panels if t == task].index(column) + 1
        of_panel = frame[(frame.task == task) & frame[column].notna()]
        for series, rows in of_panel.groupby("series", sort=False):
            colour, first = palette[series], series not in shown
            shown.add(series)
            text = [_hover(r, column) for _, r in rows.iterrows()]
            if rows.reference.astype(bool).all():  # a full model: its score across the sparsities
                mean = 100 * rows[column].mean()
                fig.add_trace(go.Scatter(x=[xs[0], xs[-1]], y=[mean, mean], mode="lines", name=series, legendgroup=series,
                                         showlegend=first, line=dict(color=colour, dash="dash"), hoverinfo="skip"), row, col)
                fig.add_trace(go.Scatter(x=[xs[0]] * len(rows), y=100 * rows[column], mode="markers", name=series,
                                         legendgroup=series, showlegend=False, marker=dict(color=colour, symbol="diamond"),
                                         text=text, hovertemplate="%{text}<extra></extra>"), row, col)
                continue
            means = rows.groupby("x")[column].mean()
            fig.add_trace(go.Scatter(x=list(means.index), y=100 * means.values, mode="lines", name=series, legendgroup=series,
                                     showlegend=first, line=dict(color=colour), hoverinfo="skip"), row, col)
            fig.add_trace(go.Scatter(x=rows.x, y=100 * rows[column], mode="markers", name=series, legendgroup=series,
                                     showlegend=False, marker=dict(color=colour, size=8), text=text,
                                     hovertemplate="%{text}<extra></extra>"), row, col)
    fig.update_xaxes(title_text="sparsity", tickvals=xs)
    fig.update_yaxes(title_text="score (%)")
    fig.update_layout(title=title, height=320 * nrows + 140, template="plotly_white", hovermode="closest",
                      legend=dict(orientation="h", y=-0.12 if nrows > 1 else -0.3), margin=dict(l=60, r=20, t=80, b=40))
    return fig


def explore(frame: pd.DataFrame, title: str) -> Html:
    """The interactive figure as HTML that draws offline: plotly.js embedded once in the page."""
    return Html(figure(frame, title).to_html(full_html=False, include_plotlyjs=True, div_id=POINT_ID,
                                             config={"displaylogo": False, "responsive": True}))


def of_page(page) -> Shown:
    """A page's figure points (Page.data("figure")) as the interactive figure, titled after the
    paper's figure it redraws."""
    rows = page.data("figure") if not page.results.frame.empty else page.results.frame
    if rows.empty:
        return Shown("*No finished runs to draw.*")
    data = "synthetic data" if page.results.synthetic else "this build's runs"
    what = page.section.reproduces
    return Shown(explore(rows, f"{what[:1].upper()}{what[1:]}, to explore ({data})"))
