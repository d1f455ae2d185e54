"""The numbers behind a page, as a person editing it in Jupyter asks for them: `sec.data("figure")`
(book/page.py's Page.data) returns a pandas DataFrame, narrowed by series, task, x or seed, a value the
page does not have refused naming those it has; `sec.figures()` the matplotlib Figures its figure
cell draws, to restyle (`fig.axes[0].set_ylim(...)`, `fig.savefig(...)`).

    sec.data()                                  # every finished point: series, task, seed, x, id, ood:<set>, key
    sec.data("figure", series="mask train (poe)", x=0.7)
    sec.data("table")                           # the page's table (mean ± std over seeds, x100)
    sec.data("curves")                          # every evaluation of its runs (metrics.jsonl)
    sec.data("references")                      # every finished full model
    sec.data("verdicts")                        # its claims' verdicts, one record per case
"""

from __future__ import annotations

from dataclasses import asdict

import pandas as pd

WHAT = ("figure", "table", "curves", "references", "verdicts")
FILTERS = ("series", "task", "x", "seed")


def data(page, what: str = "figure", **filters) -> pd.DataFrame:
    """The DataFrame `what` of `page` (WHAT), narrowed by `filters` (FILTERS: one value each)."""
    if what not in WHAT:
        raise ValueError(f"sec.data({what!r}): this page's data are {', '.join(map(repr, WHAT))}")
    unknown = sorted(set(filters) - set(FILTERS))
    if unknown:
        raise ValueError(f"sec.data(..., {unknown[0]}=...): filter by {', '.join(FILTERS)}")
    if what == "verdicts":
        return pd.DataFrame([{**asdict(v), "outcome": v.outcome} for v in page.evaluate()])
    if what == "table":
        return page.table().parts[0] if not page.results.frame.empty else pd.DataFrame()
    frame = {"figure": page.results.frame, "curves": page.curves(), "references": page.results.references}[what]
    for name, wanted in filters.items():
        frame = narrowed(frame, name, wanted, what)
    return frame.reset_index(drop=True)


def narrowed(frame: pd.DataFrame, name: str, wanted, what: str) -> pd.DataFrame:
    """`frame`'s rows whose `name` is `wanted` (a number within 1e-9); a value it lacks is refused
    naming the values it has."""
    if frame.empty or name not in frame:
        raise ValueError(f"sec.data({what!r}, {name}={wanted!r}): the page has no finished point to filter "
                         "(sec.results.missing lists the points the store lacks)")
    values = frame[name]
    kept = (values - float(wanted)).abs() < 1e-9 if pd.api.types.is_numeric_dtype(values) and not isinstance(
        wanted, str) else values == wanted
    if not kept.any():
        shown = ", ".join(f"{v:g}" if isinstance(v, float) else repr(v) for v in dict.fromkeys(values))
        raise ValueError(f"sec.data({what!r}, {name}={wanted!r}): no such {name} among the page's finished points; "
                         f"its {name} values: {shown}")
    return frame[kept]
