"""`python -m srnets_lib robustness` (`make robustness`): the pages' claims judged again with the
data changed one field at a time (other data seeds, other bias strengths), so a reader sees
whether a toy verdict is a property of the setting or of one draw of the data.

Each setting is the params file with one override (`data.data_seed=3`, `data.bias_strength=0.65`);
its runs are computed like the book's (the store keys them by their data: nothing is computed
twice, and the default setting's runs are the book's own), then every verdict of the chosen pages
is judged on them. A cell is (setting, page, claim, task): its outcome is verdict.outcome of its
verdicts, the word the pages and the scorecard use (confirmed when every verdict in it is). The
table goes to `<run store>/robustness/<params name>.json`, with the commit, the CPU and the date it
was judged on and, per setting, a digest of the run keys it read; the scorecard page shows it. A
build whose store has no grid shows the last one measured and shipped with the package
(robustness_grid.json), while the run keys of every one of its settings are those this build's
params file gives (`shipped`): a changed run reads as another grid, never as this one.

A grid is computed in parts (a setting is about 8 minutes on 2 cores): a call judges the settings
it is given and keeps the earlier table's others (the store's, else the shipped one) whose run keys
are unchanged, each setting with the commit, CPU and date it was judged at (`merged`). The default
setting is judged by every call: where the earlier table reads it otherwise, that table was judged
by another rule, and none of it is kept.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import platform
import subprocess
from importlib import resources
from pathlib import Path

import pandas as pd

from srnets_lib import paths
from srnets_lib.book import runs
from srnets_lib.book import sections
from srnets_lib.book.page import gathered
from srnets_lib.book.verdicts.verdict import STATEMENTS, outcome, shown, size
from srnets_lib.book.verdicts.verdict_text import mark
from srnets_lib.settings import params as params_lib
from srnets_lib.sweeps import sweep
from srnets_lib.sweeps.executors import RUNS_PER_GPU, check_inputs

PAGES = ("sec4_2", "sec4_3", "sec4_4", "sec5_2")  # the core claims of Part I
DATA_SEEDS = (1, 2, 3, 4)  # besides the params' own (0 in the toy): five in all
STRENGTHS = (0.65, 0.75, 0.85, 0.95)  # spanning [0.65, 0.95] around the toy's 0.8
COLUMNS = ["setting", "page", "claim", "task", "holds", "verdicts", "held", "margin", "outcome", "noise"]
SHIPPED = "robustness_grid.json"  # the last grid measured, shipped with the package


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
            word = outcome(group)  # the scorecard's rule: confirmed when every verdict is
            judged = [v for v in group if v.margin is not None and v.holds is not None]
            weakest = min(judged, key=lambda v: v.margin) if judged else None
            rows.append({"setting": setting, "page": page, "claim": claim, "task": task,
                         "holds": None if word == "not measurable" else word == "confirmed", "verdicts": len(group),
                         "held": sum(v.outcome == "confirmed" for v in group),
                         "margin": None if weakest is None else weakest.margin, "outcome": word,
                         "noise": None if weakest is None else weakest.noise})
    return rows


def keys(params, pages=PAGES) -> str:
    """A digest of the run keys the pages' points read in `params`: equal digests, equal runs."""
    found = sorted({p.config.key() for page in pages for p in sections.points(page, params)})
    return hashlib.sha256("\n".join(found).encode()).hexdigest()[:16]


def path(params, root: Path | None = None) -> Path:
    return (root or paths.runs_root()) / "robustness" / f"{params.name}.json"


def _frame(stored: dict) -> pd.DataFrame:
    df = pd.DataFrame(stored["rows"], columns=COLUMNS)
    df["outcome"] = [o if isinstance(o, str) else ("n/a" if h is None else "confirmed" if h else "not confirmed")
                     for o, h in zip(df.outcome, df.holds)]  # a grid judged before outcomes were stored
    for key in ("judged", "commit", "cpu"):
        df.attrs[key] = stored.get(key, "not recorded")
    df.attrs["provenance"] = {name: {key: setting.get(key, df.attrs[key]) for key in ("judged", "commit", "cpu")}
                              for name, setting in stored.get("settings", {}).items()}
    return df


def judged_text(df: pd.DataFrame) -> str:
    """Markdown: when, at which commit and on which CPU the table's settings were judged (a
    grid computed in parts names each part's settings)."""
    parts: dict[tuple, list[str]] = {}
    for name, where in (df.attrs.get("provenance") or {"": df.attrs}).items():
        parts.setdefault((where["judged"], where["commit"], where["cpu"]), []).append(name)
    return "; ".join(f"judged {judged} at commit `{commit}` on {cpu}"
                     + (f" ({', '.join(names)})" if len(parts) > 1 else "")
                     for (judged, commit, cpu), names in parts.items())


def load(params, root: Path | None = None) -> pd.DataFrame | None:
    """The stored table of `params`' grid (None before `make robustness` has run); its `attrs`
    say when, at which commit and on which CPU it was judged."""
    file = path(params, root)
    if not file.is_file():
        return None
    return _frame(json.loads(file.read_text()))


def shipped(params) -> tuple[pd.DataFrame | None, str]:
    """The grid shipped with the package, if it was judged on `params`' settings and every one of
    them still reads the same runs (their keys' digests); else None and why not."""
    file = resources.files("srnets_lib.book").joinpath(SHIPPED)
    if not file.is_file():
        return None, "no grid is shipped with the package"
    stored = json.loads(file.read_text())
    if stored.get("params") != params.name:
        return None, f"the shipped grid was judged on {stored.get('params')!r}, not {params.name!r}"
    changed = [name for name, setting in stored["settings"].items()
               if keys(params_lib.load(params.source, setting["overrides"]), stored["pages"]) != setting["keys"]]
    if changed:
        return None, (f"the shipped grid's runs differ from this build's in {len(changed)} of its "
                      f"{len(stored['settings'])} settings ({', '.join(changed)}): its keys changed since")
    return _frame(stored), ""


def summary(df: pd.DataFrame) -> str:
    words = df.outcome.value_counts()
    judged = df[df.outcome != "not measurable"]
    held = int((judged.outcome == "confirmed").sum())
    return (f"{held} of {len(judged)} cells confirmed ({100 * held / max(1, len(judged)):.0f}%) over "
            f"{df.setting.nunique()} settings; " + ", ".join(f"{n} {w}" for w, n in words.items() if w != "confirmed"))


def coverage(df: pd.DataFrame) -> str:
    """The settings of the grid a table does not hold, in a sentence ("": it holds them all)."""
    absent = [name for name, _ in settings() if name not in set(df.setting)]
    return (f" It holds {df.setting.nunique()} of the grid's {len(settings())} settings: {', '.join(absent)} "
            f"{'is' if len(absent) == 1 else 'are'} not computed yet, so the claims' robustness to "
            f"{'it' if len(absent) == 1 else 'them'} is unknown." if absent else "")


def pivot(df: pd.DataFrame, marks: bool = False) -> pd.DataFrame:
    """One row per (page, claim, task), one column per setting: the outcome (its mark where `marks`),
    the weakest margin in its claim's unit and its standard error."""
    def cell(row):
        if row.outcome == "not measurable" or row.margin is None or pd.isna(row.margin):
            return (mark("not measurable") + " n/a") if marks else "n/a"
        unit = STATEMENTS[row.claim].unit
        noise = "" if row.noise is None or pd.isna(row.noise) else f" ± {size(row.noise, unit)}"
        return f"{mark(row.outcome) if marks else row.outcome} {shown(row.margin, unit)}{noise}"

    marked = df.assign(cell=df.apply(cell, axis=1))
    if marks:  # as a page shows it: the section's number (4.2), not its notebook's name
        marked = marked.assign(page=[sections.get(p).number for p in marked.page])
    order = list(dict.fromkeys(df.setting))
    table = marked.pivot_table(index=["page", "claim", "task"], columns="setting", values="cell",
                               aggfunc="first", sort=False)[order]
    return table.rename_axis(index={"page": "section"} if marks else {}, columns=None)


def provenance() -> dict:
    """Where a grid is judged: the commit (with "+changes" where the tree differs from it), the CPU, the date."""
    def git(*args) -> str:
        done = subprocess.run(["git", *args], cwd=paths.PROJECT_ROOT, capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else ""

    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), "") if Path("/proc/cpuinfo").is_file() else ""
    return {"judged": datetime.datetime.now().isoformat(timespec="seconds"),
            "commit": commit + ("+changes" if git("status", "--porcelain", "--untracked-files=no") else ""),
            "cpu": cpu or platform.processor() or "unknown"}


def judge(params_file: str, overrides: list[str], pages=PAGES, data_seeds=DATA_SEEDS, strengths=STRENGTHS,
          executor: str = "ray", runs_per_gpu: int = RUNS_PER_GPU, compute: bool = True) -> int:
    """Compute each setting's runs (unless not `compute`), judge its cells, write the table; the
    exit status (1 if a run failed; an interrupted or refused sweep's, which writes no table)."""
    base = params_lib.load(params_file, overrides)
    rows, failed, digests, now = [], 0, {}, provenance()
    for name, changed in settings(data_seeds, strengths):
        print(f"robustness: {name}", flush=True)
        params = params_lib.load(params_file, overrides + changed)
        if compute:
            status = sweep.interruptible(lambda: _compute(params, pages, executor, runs_per_gpu))
            if status > 1:  # interrupted (130, 143): no table from a part of the grid
                return status
            failed += status
        rows += cells(name, params, pages)
        digests[name] = {"overrides": overrides + changed, "keys": keys(params, pages), **now}
    out = path(base)
    earlier = load_json(out) or load_json(resources.files("srnets_lib.book").joinpath(SHIPPED))
    rows, digests = merged(rows, digests, earlier, base, params_file, list(pages))
    df = pd.DataFrame(rows, columns=COLUMNS)
    out.parent.mkdir(parents=True, exist_ok=True)
    with paths.replacing(out) as tmp:
        tmp.write_text(json.dumps({**now, "params": base.name, "pages": list(pages), "settings": digests,
                                   "rows": rows}, indent=1) + "\n")
    print(pivot(df).to_string())
    print(f"robustness: {summary(df)}; written to {out}")
    return 1 if failed else 0


def load_json(file) -> dict | None:
    return json.loads(file.read_text()) if file.is_file() else None


def _cell(row: dict) -> tuple:
    return row["page"], row["claim"], row["task"], row["outcome"], row["margin"], row["noise"]


def merged(rows: list[dict], digests: dict, earlier: dict | None, base, params_file: str,
           pages: list) -> tuple[list, dict]:
    """This call's `rows` and `digests` with the `earlier` table's other settings whose runs are
    unchanged (the keys this build gives them), in the grid's order. A setting this call found no
    run of (every cell not measurable) keeps its earlier cells. Nothing is kept from a table of other
    params file or pages, or one that reads the default setting otherwise (another rule judged it)."""
    if not earlier or earlier.get("params") != base.name or earlier.get("pages") != pages or "settings" not in earlier:
        return rows, digests
    by_setting = {}
    for row in earlier["rows"]:
        by_setting.setdefault(row["setting"], []).append(row)
    now = {name: [r for r in rows if r["setting"] == name] for name in digests}
    before = earlier["settings"].get("default", {})
    if before.get("keys") == digests["default"]["keys"] and \
            sorted(map(_cell, by_setting.get("default", []))) != sorted(map(_cell, now["default"])):
        print(f"robustness: the earlier table (judged {earlier.get('judged')} at {earlier.get('commit')}) reads "
              "the default setting's runs otherwise: another rule judged it, so none of it is kept", flush=True)
        return rows, digests
    for name, setting in earlier["settings"].items():
        absent = name not in now or all(r["outcome"] == "not measurable" for r in now[name])
        if not absent or keys(params_lib.load(params_file, setting["overrides"]), pages) != setting["keys"]:
            if name not in now:
                print(f"robustness: {name} of the earlier table is not kept: its runs changed since", flush=True)
            continue
        digests[name] = {key: setting.get(key, earlier.get(key, "not recorded"))
                         for key in ("overrides", "keys", "judged", "commit", "cpu")}
        now[name] = by_setting.get(name, [])
    order = [name for name, _ in settings(sorted({int(n.split("=")[1]) for n in digests if n.startswith("data_seed=")}),
                                          sorted({float(n.split("=")[1]) for n in digests if n.startswith("bias_")}))]
    return [r for name in order for r in now[name]], {name: digests[name] for name in order}


def _compute(params, pages, executor: str, runs_per_gpu: int) -> int:
    """One setting's runs: those of its pages, as the sweep computes them."""
    graph, _ = runs.of_notebooks([f"{page}.ipynb" for page in pages], params)
    check_inputs([node.config for node in graph], params.execution.skip_ood)
    return sweep.status(sweep.compute(graph, executor, runs_per_gpu=runs_per_gpu))
