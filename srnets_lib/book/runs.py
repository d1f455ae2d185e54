"""The runs behind the book's pages: a page's points as the RunGraph that computes them, each run
asked for what every page of the book asks of it (what it keeps and scores), so a run shared by two
pages is computed once, whichever is swept first. The sweep, `plan` and `evaluate` read these graphs
(sweeps/ computes them); a notebook computing its own point computes its closure here."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from srnets_lib import paths
from srnets_lib.book.sections import SECTIONS, get, points
from srnets_lib.book.sections.base import Point
from srnets_lib.settings.pages import RUNLESS_PAGES
from srnets_lib.settings.params import Params, load
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
    (an IMP run's other levels: a few evaluations, where `make book-full` would train it again)."""
    every = [f"{s}.ipynb" for s in SECTIONS]
    book = [p for wanted in pages(every, params, full).values() for p in wanted] + list(extra)
    runs = graph(book, params)
    if full:
        return runs
    riders = [p for wanted in pages(every, params, True).values() for p in wanted if p.config.key() in runs.nodes]
    return graph(book + riders, params)


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
    each run asked for what every page asks of it; one executors.Outcome per run computed."""
    runs = book_graph(params, extra=wanted).closure([p.config for p in wanted])
    check_inputs([node.config for node in runs], params.execution.skip_ood)
    return LocalExecutor(progress=progress).run(runs, Path(root) if root else paths.runs_root())
