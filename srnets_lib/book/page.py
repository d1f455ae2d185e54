"""A book page's setup in one call: `sec = page.load("sec4_2", ...)` loads the params file,
says what the numbers are, builds the section's points, computes the runs the store lacks (unless
told not to) and reads the results from the store into one frozen `Results` value (`read`), which
the section draws and judges; the notebook's cells then show `sec`'s figure, tables and verdicts,
each cell showing what a method of `sec` returns (book/shown.py)."""

from __future__ import annotations

import ast
import json
import os
import warnings
from pathlib import Path

import pandas as pd
import yaml

from srnets_lib.book import (analyses, banner, frames, interactive, page_notes, paper_numbers,
                             plots, sections)
from srnets_lib import paths
from srnets_lib.settings import params as params_lib
from srnets_lib.book.sections import claims, gather
from srnets_lib.book.verdicts import verdict_text
from srnets_lib.book.sections.point import Point
from srnets_lib.book.sections.results import Results
from srnets_lib.book.verdicts.verdict import Verdict
from srnets_lib.book.verdicts.verdict_text import render
from srnets_lib.book.shown import Html
from srnets_lib.book import runs as book_runs
from srnets_lib.book.shown import Shown

DEFAULT_PARAMS = "params/toy.yaml"


def load(name: str, params_file=None, seeds=None, sparsity=None, tasks=None, compute=None) -> "Page":
    """The page of section `name` (a notebook's stem). params_file None: $SRNETS_PARAMS, else
    params/toy.yaml. seeds, tasks None: the section's (Section.seeds / tasks); a string is
    read as YAML (papermill -p seeds "[1]"). sparsity: one value, else the preset's list. compute:
    True computes the runs the store lacks here, False only gathers; None: as $SRNETS_COMPUTE says (0:
    the book build gathers only), else computing in a batch run (papermill, a script) and not in a
    notebook a person runs (Jupyter): that shows what is missing, with its cost and the command."""
    _check_injected_parameters()
    params = params_lib.load(params_file or paths.setting("SRNETS_PARAMS", DEFAULT_PARAMS, "a params file"))
    sparsities = None if sparsity is None else [_number("sparsity", sparsity)]
    seeds = _listed(seeds)
    if seeds is not None and not all(isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in seeds):
        raise ValueError(f"parameter seeds={seeds!r}: expected seed numbers >= 0, e.g. -p seeds \"[1, 2]\"")
    tasks, seeds, sparsities = sections.resolve(name, params, _listed(tasks), seeds, sparsities)
    page = Page(sections.get(name), params, tasks, seeds, sparsities, opt_in=sparsity is None)
    computing = _computing(compute)
    # a person's notebook left to decide computes nothing unasked: its missing note says what it would cost
    page.held_back = not computing and compute is None and os.environ.get("SRNETS_COMPUTE") is None
    page.failed = failed = page.compute() if computing else []
    if failed:  # a page asked to compute its points fails with them (papermill, sweep --by notebooks)
        raise RuntimeError(f"{len(failed)} run(s) of this page failed: " + "; ".join(o.job for o in failed))
    return page


def _history() -> list[str] | None:
    """The cells an IPython kernel or shell ran so far; None for a plain Python caller."""
    try:
        return get_ipython().user_ns.get("In", [])  # noqa: F821 (defined inside IPython)
    except (NameError, AttributeError):
        return None


def _check_injected_parameters() -> None:
    """papermill only warns about a parameter the notebook does not declare, and the run goes on
    without it: refuse it here. Its injected cell ("# Parameters") directly follows the
    notebook's parameters cell in the kernel's input history."""
    history = _history() or []
    for before, cell in zip(history, history[1:]):
        if cell.lstrip().startswith("# Parameters"):
            unknown = sorted(_assigned(cell) - _assigned(before))
            if unknown:
                raise ValueError(f"unknown notebook parameter(s) {', '.join(unknown)} (papermill -p): this "
                                 f"notebook accepts {', '.join(sorted(_assigned(before)))}")


def _assigned(source: str) -> set[str]:
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    return {t.id for node in tree.body if isinstance(node, ast.Assign) for t in node.targets if isinstance(t, ast.Name)}


def reproduce_text(name: str, params, sparsities: list, seeds: list) -> str:
    """Markdown: the exact commands behind a page (papermill -p only for the parameters its
    notebook declares; the params file where it is not the default)."""
    notebook = f"book/{name}.ipynb"
    cell = next(c for c in json.loads((paths.BOOK_DIR / f"{name}.ipynb").read_text())["cells"]
                if "parameters" in c.get("metadata", {}).get("tags", []))
    point = f" -p sparsity {sparsities[0]:g}" if "sparsity" in _assigned("".join(cell["source"])) and sparsities else ""
    source = banner.shown_path(params.source) if params.source != "<memory>" else DEFAULT_PARAMS
    other = "" if source == DEFAULT_PARAMS else f" -p params_file {source}"
    part = sections.get(name).part
    return "\n".join([
        "**Reproduce this page.**", "",
        f"- One point: `papermill {notebook} out.ipynb{point} -p seeds \"[{seeds[0]}]\"{other}`",
        f"- Every run it shows, then the page: `python -m srnets_lib sweep {notebook} --params {source}`, then "
        "`SRNETS_COMPUTE=0 jupyter-book build --all .` (or `make book` for the whole book). Each run is asked "
        "for what every page reads of it, so a run shared with another page is never computed twice.",
        f"- At paper scale (a GPU, the datasets): `python -m srnets_lib plan {notebook} --params params/paper.yaml` "
        "lists its runs, optimizer steps and GPU-hours (at the rates `python -m srnets_lib.tools.bench` measured on the "
        f"GPU for each run's setting); compute them with the whole part, `make book PARAMS=params/paper.yaml "
        f"PART={part}`.",
        f"- Its points as Hugging Face model folders with model cards: `python -m srnets_lib export --page {name} --series "
        f"\"{next(p.series for p in sections.points(name, params) if not p.reference)}\" --params {source} --out "
        f"exported/{name}` (one series; `--task`, `--sparsity`, `--seed` narrow it)."])


def planned(section: sections.Section, params, tasks: list, seeds: list, sparsities: list,
            opt_in: bool = False) -> tuple[list[Point], list[Point]]:
    """A page's points, and (`opt_in`) those at the preset's other sparsities (params.sparsities_for)
    that it draws where the store has them (`make book-full` computes them)."""
    shown = sections.points(section.name, params, tasks, seeds, sparsities)
    seen = {_identity(p) for p in shown}
    return shown, [p for p in sections.points(section.name, params, tasks, seeds, full=True)
                   if _identity(p) not in seen] if opt_in else []


def read(section: sections.Section, params, tasks: list, seeds: list, sparsities: list,
         points: tuple[list[Point], list[Point]], asked: bool) -> Results:
    """The page's results from the store: `points` as `planned` gives them (shown, opt-in)."""
    shown, extra = points
    every = gather.frame(shown + extra)
    return Results(params, list(tasks), list(seeds), list(sparsities), asked, shown, extra,
                   frame=every[every.task.isin([*tasks, *section.gathered_tasks])],
                   references=every[every.reference.astype(bool)], missing=gather.missing(shown),
                   opt_in_missing=gather.missing(extra), synthetic=banner.synthetic(params))


def _identity(p: Point) -> tuple:
    return p.series, p.task, p.seed, p.x, p.group


def _listed(value) -> list | None:
    """None, a list, one value, or a YAML string of either (papermill -p passes strings)."""
    if isinstance(value, str):
        value = yaml.safe_load(value)
    if value is None or isinstance(value, (list, tuple)):
        return value
    return [value]


def _number(parameter: str, value) -> float:
    """A notebook parameter that must be a fraction in (0, 1), e.g. -p sparsity 0.7."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = float("nan")
    if not 0.0 < number < 1.0:
        raise ValueError(f"parameter {parameter}={value!r}: expected a number in (0, 1), e.g. -p {parameter} 0.7")
    return number


def _computing(compute) -> bool:
    """Whether the page computes the runs the store lacks (load's `compute`)."""
    if compute is None:
        compute = paths.setting("SRNETS_COMPUTE", None, "0 (gather only) or 1 (compute)")
        if compute is None:
            return not _interactive()
        return _flag("SRNETS_COMPUTE", compute, "0 or 1")
    return _flag("parameter compute", compute, "true or false, e.g. -p compute false")


def _flag(name: str, value, expected: str) -> bool:
    """A yes/no setting: a bool, or a word (papermill -p passes `false` as the string "false")."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"{name}={value!r}: expected {expected}")


def _interactive() -> bool:
    """Whether a person runs this notebook (Jupyter, an IPython shell), not papermill: papermill's
    injected parameters cell is in the history, or papermill started the kernel."""
    history = _history()
    if history is None:
        return False
    if any(cell.lstrip().startswith("# Parameters") for cell in history):
        return False
    return "papermill" not in _parent_command()


def _parent_command() -> str:
    """The command line of the process that started this one ('' where it cannot be read)."""
    try:
        return Path(f"/proc/{os.getppid()}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        try:
            import psutil

            return " ".join(psutil.Process(os.getppid()).cmdline())
        except Exception:  # no /proc and no psutil: taken as a person's kernel (it computes nothing unasked)
            return ""


def unjudged(section: sections.Section, missing) -> str:
    """The word of a claim none of whose cases is judged: "not built" where the page is opt-in and
    `make book` left its runs out (`missing`), else "not measurable"; the page and the scorecard both read it."""
    return "not built (opt-in page: make book-full)" if section.opt_in and missing else "not measurable"


class Page:
    """One section's page: its `Results` (read from the store once, again after computing) and
    what its notebook shows of them."""

    def __init__(self, section: sections.Section, params, tasks: list, seeds: list, sparsities: list,
                 opt_in: bool = False):
        """`opt_in`: also draw the points at the preset's other sparsities where the store has them."""
        self.section, self.params = section, params
        self._chosen = (list(tasks), list(seeds), list(sparsities))
        self._points = planned(section, params, tasks, seeds, sparsities, opt_in)
        self._asked = not opt_in  # a page asked for its sparsities (papermill -p sparsity) judges only those
        self.failed: list = []  # the outcomes of its runs that failed when it computed them
        self.held_back = False  # a person's notebook that computed nothing unasked (load's compute None)
        self.results = read(section, params, *self._chosen, self._points, self._asked)

    def compute(self) -> list:
        """Run the points the store lacks, here, then read the results again; the failed runs' outcomes."""
        failed = [o for o in book_runs.compute(self._points[0], self.params) if not o.ok]
        self.results = read(self.section, self.params, *self._chosen, self._points, self._asked)
        return failed

    def opt_in_note(self) -> str:
        return page_notes.opt_in(self)

    def asked_note(self) -> str | None:
        return page_notes.asked(self)

    def missing_note(self, failed=()) -> str:
        return page_notes.missing(self, failed)

    def data(self, what: str = "figure", **filters) -> pd.DataFrame:
        """The numbers behind the page as a DataFrame (book/frames.py: "figure", "table", "curves",
        "references", "verdicts"; narrowed by series, task, x, seed)."""
        return frames.data(self, what, **filters)

    def figures(self) -> list:
        """The matplotlib Figures of the page's figure cell, to restyle or save."""
        return [part for part in self.figure().parts if hasattr(part, "savefig")]

    def reproduce(self) -> Shown:
        """The commands that reproduce this page: one point, every run it shows, at paper scale."""
        return Shown(reproduce_text(self.section.name, self.params, self.results.sparsities, self.results.seeds))

    def figure(self) -> Shown:
        """The section's figure(s), drawn from the finished points, each with its caption."""
        plt = plots.pyplot()
        figures = self.section.figure(self.results) if not self.results.frame.empty else []
        for fig in figures:
            plt.close(fig)
            for panel in plots.empty_panels(fig):  # shown as a warning, which the browser check fails on
                warnings.warn(f"{self.section.name}: the figure panel {panel!r} draws no data", stacklevel=2)
        return Shown(*[part for fig in figures for part in (fig, self.caption(fig))]) if figures else Shown(
            "*No finished runs to draw.*")

    def explore(self) -> Shown:  # the figure's points, interactive (book/interactive.py: of_page)
        return interactive.of_page(self)

    def caption(self, fig) -> str:
        """What a figure is: the paper's figure it redraws and what this build put in it."""
        return page_notes.caption(self, fig)

    def table(self) -> Shown:
        """The section's table: mean ± std over seeds (x100)."""
        if self.results.frame.empty:
            return Shown("*No finished runs to tabulate.*")
        table = self.section.table(self.results)
        table.index = table.index.rename({"x": self.section.x_name})
        return Shown(plots.folded(table, "The values (mean ± std over seeds, x100)"))

    def references_table(self) -> Shown:
        """Every finished full model, per task (section 4.2: the ID-OOD gap of each task)."""
        references = self.results.references
        return Shown(plots.folded(plots.table(references, index=("task", "series")), "The full models")
                     if not references.empty else "*No finished full models.*")

    def paper_table(self) -> pd.DataFrame:
        """The paper's numbers for this section (paper_numbers.yaml), for the page's tasks."""
        return paper_numbers.table(self.section.paper_table, self.results.tasks)

    def curves(self) -> pd.DataFrame:
        """Every evaluation of the page's points' runs (metrics.jsonl): training curves."""
        return self.results.curves()

    def mask_structure(self, sparsity: float | None = None, against: str | None = None) -> Shown:
        """Beyond the paper: the structure of the subnetworks' masks (analyses.masks),
        each compared with `against` (None: the section's structure_against)."""
        return analyses.masks(self, sparsity, against or self.section.structure_against)

    def subsets(self, sparsity: float = 0.7, series: tuple | None = None) -> Shown:
        """Beyond the paper: each task's OOD score per subset (analyses.subsets) for `series`
        (None: the section's subset_series)."""
        return analyses.subsets(self, tuple(series or self.section.subset_series), sparsity)

    def training_optimum(self):
        """The Bayes-optimal model of each training distribution of the page (synthetic data)."""
        return analyses.training_optimum(self)

    def evaluate(self) -> list[Verdict]:
        """Every verdict of the page: its reference claims on every full model, its claims on its
        tasks, per group of points (C.5: per backbone)."""
        return self._on_references() + self._on_tasks()

    def summary(self) -> Shown:
        """The page's opening: what its numbers are (the banner; its tasks and seeds where not the
        preset's), the points the store lacks, its verdicts in brief, numbers from the run store, and
        each claim's outcome as the scorecard gives it, with a link to its row."""
        verdicts = self.evaluate()
        r = self.results
        return Shown(banner.banner(self.params) + banner.scope(self.params, r.tasks, r.seeds, self.section.name),
                     self.missing_note(self.failed) if r.missing else None,
                     self.opt_in_note() if r.opt_in_missing else None, self.asked_note(),
                     verdict_text.summary(verdicts, r.synthetic), self.section.judged_at(r),
                     self.section.remarks(r) or None,
                     Html(verdict_text.claims_html(verdicts, self.section.name, unjudged(self.section, r.missing))))

    def verdicts(self) -> Shown:
        """The section's claims judged on the page's tasks, as markdown."""
        return Shown(render(self._on_tasks()))

    def reference_verdicts(self) -> Shown:
        """The claims on the full models (section 4.2), as markdown."""
        return Shown(render(self._on_references()))

    def _on_tasks(self) -> list[Verdict]:
        return self.section.judge(self.results)

    def _on_references(self) -> list[Verdict]:
        tasks = list(dict.fromkeys(p.task for p in self.results.points if p.reference))
        return claims.judge(self.results, self.section.reference_claims, self.results.references, tasks)


def gathered(name: str, params) -> Page:
    """The page `name` on its default tasks and seeds, its results gathered from the store."""
    return Page(sections.get(name), params, *sections.resolve(name, params))
