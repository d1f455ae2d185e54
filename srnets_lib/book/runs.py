"""The runs behind the book's pages: a page's points as the RunGraph that computes them, each run
asked for what every page of the book asks of it (what it keeps and scores), so a run shared by two
pages is computed once, whichever is swept first. The sweep, `plan` and `evaluate` read these graphs
(sweeps/ computes them); a notebook computing its own point computes its closure here."""

from __future__ import annotations

import statistics
import sys
from dataclasses import dataclass, replace
from pathlib import Path

from srnets_lib import methods, paths
from srnets_lib.book.sections import SECTIONS, get, points
from srnets_lib.book.sections.point import Point
from srnets_lib.settings.pages import RUNLESS_PAGES
from srnets_lib.settings.params import Params, load
from srnets_lib.store.result import RunResult
from srnets_lib.store.runs import Run
from srnets_lib.sweeps.executors import LocalExecutor, check_inputs
from srnets_lib.sweeps.graph import RunGraph
from srnets_lib.sweeps.sweep import Job


def graph(wanted: list[Point], params: Params) -> RunGraph:
    """The runs behind `wanted`, each once, dependencies first, with what each must leave behind
    (its points' requests, else the params file's execution defaults; graph.needs). A point at an
    IMP level reads that level's scores, and no other level's."""
    runs = RunGraph(params.execution.request())
    for point in wanted:
        request = point.request or runs.default
        runs.add(point.config, request if point.level is None else replace(request, levels=(point.level,)))
    return runs


def pages(notebooks: list[str], params: Params, full: bool = False, part: int | None = None) -> dict[str, list]:
    """{section: its points} for the given section notebooks, in the papers' order; the opt-in
    pages and sparsities (their runs are over the default build's budget) only with `full`; with
    `part`, only the pages of that part of the book (1: the SRNets paper, 2: TAMT)."""
    chosen = {}
    order = {s: i for i, s in enumerate(SECTIONS)}
    for notebook in sorted(notebooks, key=lambda n: order.get(Path(n).stem, len(order))):
        section = Path(notebook).stem
        if section in RUNLESS_PAGES:
            continue
        if section not in SECTIONS:
            raise ValueError(f"{notebook}: not a book notebook; accepted: "
                             + ", ".join(f"book/{s}.ipynb" for s in (*SECTIONS, *RUNLESS_PAGES)))
        if (full or not get(section).opt_in) and part in (None, get(section).part):
            chosen[section] = points(section, params, full=full)
    return chosen


def of_notebooks(notebooks: list[str], params: Params, full: bool = False, part: int | None = None):
    """(the RunGraph behind the notebooks, {section: the configs it shows}), each run asked for what
    every page of the book asks of it (book_graph)."""
    shown = pages(notebooks, params, full, part)
    needed = book_graph(params, full).closure([p.config for wanted in shown.values() for p in wanted])
    return needed, {s: [p.config for p in wanted] for s, wanted in shown.items()}


def book_graph(params: Params, full: bool = False, extra: list = ()) -> RunGraph:
    """The RunGraph of every page of the book (the opt-in ones with `full`) and of the points
    `extra`; the default build's graph also scores the opt-in points whose run it computes anyway
    (an IMP run's other levels: a few evaluations, where `make book-full` would train it again). A
    page whose own settings do not hold under `params` (an override meant for another page) is left
    out of the requests, said in one line: the pages asked for are checked by `pages` themselves."""
    book = [p for wanted in _every_page(params, full).values() for p in wanted] + list(extra)
    runs = graph(book, params)
    if full:
        return runs
    riders = [p for wanted in _every_page(params, True, quiet=True).values() for p in wanted
              if p.config.key() in runs.nodes]
    return graph(book + riders, params)


def _every_page(params: Params, full: bool, quiet: bool = False) -> dict[str, list]:
    chosen = {}
    for section in SECTIONS:
        try:
            chosen.update(pages([f"{section}.ipynb"], params, full))
        except ValueError as err:
            if not quiet:
                print(f"page {section} is left out of the runs' shared requests: its settings do not hold under "
                      f"{params.source} and the overrides ({str(err).splitlines()[0]})", file=sys.stderr)
    return chosen


def notebook_jobs(notebooks: list[str], params_file: str) -> list[Job]:
    """One papermill job per (notebook, seed, sparsity) of its page's (Section.seeds, sparsities);
    notebooks without a `sparsity` parameter get one per seed; the run-less pages none."""
    import papermill  # the book's executor, imported where notebooks are executed

    params = load(params_file)
    planned = []
    for notebook in (n for n in notebooks if Path(n).stem not in RUNLESS_PAGES):
        section = get(Path(notebook).stem)
        sparsities = section.sparsities(params) if "sparsity" in papermill.inspect_notebook(notebook) else [None]
        planned += [Job(notebook, seed, s, params_file) for seed in section.seeds(params) for s in sparsities]
    return planned


def compute(wanted: list[Point], params: Params, root=None, progress: bool = True) -> list:
    """Run every point the store lacks, in this process (dependencies first; shared runs once),
    each run asked for what every page asks of it; one executors.RunOutcome per run computed."""
    runs = book_graph(params, extra=wanted).closure([p.config for p in wanted])
    check_inputs([node.config for node in runs], params.execution.skip_ood)
    return LocalExecutor(progress=progress).run(runs, Path(root) if root else paths.runs_root())


@dataclass(frozen=True)
class Cost:
    """What computing a page's missing points costs: runs, optimizer steps (methods.planned_schedule,
    as `plan` counts them), and the seconds on this machine estimated for those of a method the
    store has finished runs of (`untimed`: the others)."""
    runs: int
    steps: int
    seconds: float
    untimed: int

    def words(self) -> str:
        spent = f"{self.seconds:.0f} s" if self.seconds < 120 else f"{self.seconds / 60:.0f} minutes"
        timed = self.runs - self.untimed
        if not timed:
            time = "no finished run of their methods in the store to time them by"
        else:
            time = (f"about {spent} here" + (f" for {timed} of them" if self.untimed else "")
                    + ", timed by the store's finished runs of each method"
                    + (f"; {self.untimed} of a method it has no finished run of, not timed" if self.untimed else ""))
        return f"{self.runs} run(s), {self.steps:,} optimizer steps ({time})"


def cost(wanted: list[Point], params: Params, root=None) -> Cost:
    """The runs behind `wanted` that the store does not serve (and those built on them), their steps
    and their seconds estimated from the store's finished runs of the same method and backbone (the
    median seconds per step; a run of no steps, OMP's or random pruning's: the median seconds)."""
    root = Path(root) if root else paths.runs_root()
    runs = book_graph(params, extra=wanted).closure([p.config for p in wanted])
    todo, waiting = [], set()
    for node in runs:
        if not Run(node.config, root).serves(node.request) or any(d in waiting for d in runs.dependencies(node)):
            todo.append(node.config)
            waiting.add(node.key)
    timed = _timings(root)
    steps = [methods.planned_schedule(c).steps for c in todo]
    estimates = [_estimate(timed, c, n) for c, n in zip(todo, steps)]
    return Cost(len(todo), sum(steps), sum(e for e in estimates if e is not None), estimates.count(None))


def _timings(root: Path) -> dict[tuple[str, str], list[RunResult]]:
    found: dict[tuple[str, str], list[RunResult]] = {}
    for final in root.glob(f"*/{paths.FINAL}") if root.is_dir() else []:
        try:
            result = RunResult.model_validate_json(final.read_text())
        except (OSError, ValueError):
            continue
        found.setdefault((result.method, result.backbone), []).append(result)
    return found


def _estimate(timed: dict, config, steps: int) -> float | None:
    results = timed.get((config.method, config.backbone)) or []
    if steps == 0:
        return statistics.median(r.seconds for r in results) if results else None
    rates = [r.seconds / r.steps_run for r in results if r.steps_run]
    return steps * statistics.median(rates) if rates else None
