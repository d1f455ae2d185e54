"""The paper's published numbers (paper_numbers.yaml, shipped with the package) as the tables a
page prints beside its own: appendix tables 5 and 6."""

from __future__ import annotations

from functools import cache
from importlib import resources

import pandas as pd
import yaml


@cache
def load() -> dict:
    """{table: its source, caption, columns and rows}, as paper_numbers.yaml holds them."""
    return yaml.safe_load(resources.files("srnets_lib.book").joinpath("paper_numbers.yaml").read_text())


def table(name: str, tasks=None) -> pd.DataFrame:
    """The paper's table `name`, "mean (std)" per cell, one row per book series (and group), the
    paper's row label beside it; only the columns of `tasks` (None: every column)."""
    spec = load()[name]
    columns = [c for c, where in spec["columns"].items() if tasks is None or where["task"] in tasks]
    index = ["group", "series"] if any("group" in row for row in spec["rows"]) else ["series"]
    rows = [{**{key: row[key] for key in index}, "paper's row": row["row"],
             **{c: f"{mean:.2f} ({std:.2f})" for c, (mean, std) in row["values"].items() if c in columns}}
            for row in spec["rows"]]
    return pd.DataFrame(rows, columns=[*index, "paper's row", *columns]).set_index(index)


def claim(page: str, claim_id: str) -> dict:
    """The entry of paper_numbers.yaml's `claims` for the claim `claim_id` judged on `page`."""
    for entry in load()["claims"]:
        if entry["page"] == page and entry["claim"] == claim_id:
            return entry
    raise KeyError(f"srnets_lib/book/paper_numbers.yaml: no entry under `claims` for page {page!r}, claim "
                   f"{claim_id!r}; add one (its source, and `cells` or `stated` where the paper prints a value)")


def printed(entry: dict) -> str:
    """What the paper prints for a claim: its table cells ("group, row: column value (std), ..."),
    the sentence that states a value (quoted), or "figure only" and what the figure shows; with the source."""
    if "cells" in entry:
        cells = entry["cells"]
        spec = load()[cells["table"]]
        rows = [row for row in spec["rows"] if row["row"] in cells["rows"]]  # in the table's order
        missing = [name for name in cells["rows"] if not any(row["row"] == name for row in rows)]
        if missing or not rows:
            raise KeyError(f"srnets_lib/book/paper_numbers.yaml: {cells['table']} has no row {missing}")
        text = "; ".join(", ".join(filter(None, (row.get("group"), row["row"]))) + ": "
                         + ", ".join(f"{c} {row['values'][c][0]:.2f}" for c in cells["columns"])
                         for row in rows)
    elif "stated" in entry:
        text = f"\u201c{' '.join(entry['stated'].split())}\u201d"
    else:
        text = "figure only" + (f": {entry['shows']}" if "shows" in entry else "")
    return f"{text} ({entry['source']})"
