"""`python -m srnets_lib robustness` (`make robustness`): the pages' claims judged again with the
data changed one field at a time (other data seeds, other bias strengths), so a reader sees
whether a toy verdict is a property of the setting or of one draw of the data.

Each setting is the params file with one override (`data.data_seed=3`, `data.bias_strength=0.65`);
its runs are computed like the book's (the store keys them by their data: nothing is computed
twice, and the default setting's runs are the book's own), then every verdict of the chosen pages
is judged on them. A cell is (setting, page, claim, task): it holds when every verdict in it holds
(with the margin). The table goes to `<run store>/robustness/<params name>.json`, which the
scorecard page shows; on a 2-core CPU a setting of section 4.2 alone takes about as long as its
share of the book (10-15 minutes).
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import pandas as pd

from srnets_lib import paths
from srnets_lib.book import runs
from srnets_lib.book.page import gathered
from srnets_lib.book.sections.verdict import STATEMENTS, outcome, shown
from srnets_lib.settings import params as params_lib
from srnets_lib.sweeps import sweep
from srnets_lib.sweeps.executors import RUNS_PER_GPU, check_inputs

PAGES = ("sec4_2", "sec4_3", "sec4_4", "sec5_2")  # the core claims of Part I
DATA_SEEDS = (1, 2, 3, 4)  # besides the params' own (0 in the toy): five in all
STRENGTHS = (0.65, 0.75, 0.85, 0.95)  # spanning [0.65, 0.95] around the toy's 0.8
COLUMNS = ["setting", "page", "claim", "task", "holds", "verdicts", "held", "margin"]


def settings(data_seeds=DATA_SEEDS, strengths=STRENGTHS) -> list[tuple[str, list[str]]]:
    """(name, overrides): the params' own setting, then one field changed at a time."""
    return ([("default", [])] + [(f"data_seed={s}", [f"data.data_seed={s}"]) for s in data_seeds]
            + [(f"bias_strength={s:g}", [f"data.bias_strength={s}"]) for s in strengths])


def cells(setting: str, params, pages=PAGES) -> list[dict]:
    """Every (page, claim, task) cell of `pages` judged on the store, in one setting."""
    rows = []
    for page in pages:
        verdicts = gathered(page, params).evaluate()
        found: dict[tuple, list] = {}
        for v in verdicts:
            found.setdefault((v.claim, v.task), []).append(v)
        for (claim, task), group in found.items():
            word = outcome(group)  # the scorecard's rule: confirmed when every verdict holds
            rows.append({"setting": setting, "page": page, "claim": claim, "task": task,
                         "holds": None if word == "not measurable" else word == "confirmed", "verdicts": len(group),
                         "held": sum(bool(v.holds) for v in group),
                         "margin": min((v.margin for v in group if v.margin is not None), default=None)})
    return rows


def path(params, root: Path | None = None) -> Path:
    return (root or paths.runs_root()) / "robustness" / f"{params.name}.json"


def load(params, root: Path | None = None) -> pd.DataFrame | None:
    """The stored table of `params`' grid (None before `make robustness` has run); its `attrs`
    say when it was judged."""
    file = path(params, root)
    if not file.is_file():
        return None
    stored = json.loads(file.read_text())
    df = pd.DataFrame(stored["rows"], columns=COLUMNS)
    df.attrs["judged"] = stored["judged"]
    return df


def summary(df: pd.DataFrame) -> str:
    judged = df[df.holds.notna()]
    held = int(judged.holds.astype(bool).sum())
    return (f"{held} of {len(judged)} cells hold ({100 * held / max(1, len(judged)):.0f}%) over "
            f"{df.setting.nunique()} settings; {len(df) - len(judged)} not measurable")


def pivot(df: pd.DataFrame) -> pd.DataFrame:
    """One row per (page, claim, task), one column per setting: 'yes' or 'no' and the margin in its
    claim's unit."""
    def mark(row):
        if row.holds is None or pd.isna(row.holds):
            return "n/a"
        unit = STATEMENTS[row.claim].unit
        margin = "" if row.margin is None or pd.isna(row.margin) else f" ({shown(row.margin, unit)})"
        return ("yes" if row.holds else "no") + margin

    marked = df.assign(cell=df.apply(mark, axis=1))
    order = list(dict.fromkeys(df.setting))
    table = marked.pivot_table(index=["page", "claim", "task"], columns="setting", values="cell",
                              aggfunc="first", sort=False)[order]
    return table.rename_axis(columns=None)


def judge(params_file: str, overrides: list[str], pages=PAGES, data_seeds=DATA_SEEDS, strengths=STRENGTHS,
          executor: str = "ray", runs_per_gpu: int = RUNS_PER_GPU, compute: bool = True) -> int:
    """Compute each setting's runs (unless not `compute`), judge its cells, write the table; the
    exit status (1 if a run failed; an interrupted or refused sweep's, which writes no table)."""
    base = params_lib.load(params_file, overrides)
    rows, failed = [], 0
    for name, changed in settings(data_seeds, strengths):
        print(f"robustness: {name}", flush=True)
        params = params_lib.load(params_file, overrides + changed)
        if compute:
            status = sweep.interruptible(lambda: _compute(params, pages, executor, runs_per_gpu))
            if status > 1:  # interrupted (130, 143): no table from a part of the grid
                return status
            failed += status
        rows += cells(name, params, pages)
    df = pd.DataFrame(rows, columns=COLUMNS)
    out = path(base)
    out.parent.mkdir(parents=True, exist_ok=True)
    with paths.replacing(out) as tmp:
        tmp.write_text(json.dumps({"judged": datetime.datetime.now().isoformat(timespec="seconds"), "rows": rows},
                                  indent=1) + "\n")
    print(pivot(df).to_string())
    print(f"robustness: {summary(df)}; written to {out}")
    return 1 if failed else 0


def _compute(params, pages, executor: str, runs_per_gpu: int) -> int:
    """One setting's runs: those of its pages, as the sweep computes them."""
    graph, _ = runs.of_notebooks([f"{page}.ipynb" for page in pages], params)
    check_inputs([node.config for node in graph], params.execution.skip_ood)
    return sweep.status(sweep.compute(graph, executor, runs_per_gpu=runs_per_gpu))
