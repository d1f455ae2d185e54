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

from srnets_lib import paths
from srnets_lib.settings import params as params_lib

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
    from srnets_lib.book.scorecard import outcome, page_verdicts

    rows = []
    for page in pages:
        verdicts, _ = page_verdicts(page, params)
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
    import pandas as pd

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
    """One row per (page, claim, task), one column per setting: 'yes' or 'no' and the margin in points."""
    import pandas as pd

    def mark(row):
        if row.holds is None or pd.isna(row.holds):
            return "n/a"
        margin = "" if row.margin is None or pd.isna(row.margin) else f" ({100 * row.margin:+.1f})"
        return ("yes" if row.holds else "no") + margin

    shown = df.assign(cell=df.apply(mark, axis=1))
    order = list(dict.fromkeys(df.setting))
    table = shown.pivot_table(index=["page", "claim", "task"], columns="setting", values="cell",
                              aggfunc="first", sort=False)[order]
    return table.rename_axis(columns=None)


def add_arguments(parser) -> None:
    parser.add_argument("--params", default="params/toy.yaml", help="params file (default params/toy.yaml)")
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE", help="params overrides (every setting)")
    parser.add_argument("--pages", nargs="+", default=list(PAGES), help=f"default: {' '.join(PAGES)}")
    parser.add_argument("--data-seeds", nargs="*", type=int, default=list(DATA_SEEDS))
    parser.add_argument("--strengths", nargs="*", type=float, default=list(STRENGTHS))
    parser.add_argument("--executor", choices=["ray", "local"], default="ray")
    from srnets_lib.sweeps.executors import RUNS_PER_GPU

    parser.add_argument("--runs-per-gpu", type=int, default=RUNS_PER_GPU)
    parser.add_argument("--no-compute", dest="compute", action="store_false",
                        help="judge what the store holds, computing nothing")


def main(args) -> int:
    """Compute each setting's runs (unless --no-compute), judge its cells, write the table."""
    import pandas as pd

    from srnets_lib.sweeps.sweep import main as sweep_main

    base = params_lib.load(args.params, args.set)
    rows, failed = [], 0
    for name, overrides in settings(args.data_seeds, args.strengths):
        print(f"robustness: {name}", flush=True)
        if args.compute:
            status = sweep_main(argparse_namespace(args, overrides))
            if status > 1:  # interrupted (130, 143) or bad input (2): no table from a part of the grid
                return status
            failed += status
        rows += cells(name, params_lib.load(args.params, args.set + overrides), args.pages)
    df = pd.DataFrame(rows, columns=COLUMNS)
    out = path(base)
    out.parent.mkdir(parents=True, exist_ok=True)
    with paths.replacing(out) as tmp:
        tmp.write_text(json.dumps({"judged": datetime.datetime.now().isoformat(timespec="seconds"), "rows": rows},
                                  indent=1) + "\n")
    print(pivot(df).to_string())
    print(f"robustness: {summary(df)}; written to {out}")
    return 1 if failed else 0


def argparse_namespace(args, overrides: list[str]):
    """The sweep's arguments for one setting: the pages' notebooks, the params and its overrides."""
    import argparse

    notebooks = [str(paths.PROJECT_ROOT / "book" / f"{page}.ipynb") for page in args.pages]
    return argparse.Namespace(notebooks=notebooks, params=args.params, set=args.set + overrides, by="runs",
                              out="book/_executed", executor=args.executor, address=None, full=False,
                              runs_per_gpu=args.runs_per_gpu)
