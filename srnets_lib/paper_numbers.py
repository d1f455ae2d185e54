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
    return yaml.safe_load(resources.files("srnets_lib").joinpath("paper_numbers.yaml").read_text())


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
