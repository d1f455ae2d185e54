"""The scorecard (book/scorecard.ipynb): each claim of the two papers that the book judges, on one
screen: one line per claim with its coloured outcome (verdict.py's, the same word its page shows),
its section (a link to the page), the claim, the rule in words, its weakest case's margin with its
unit and standard error, and how many seeds clear the rule alone. Below it: what the paper prints
for each claim (paper_numbers.yaml) beside this build's weakest case, how precise one number is,
the robustness grid and every case judged. Everything is read from the run store (gathered, never
computed), paper_numbers.yaml and the shipped robustness grid."""

from __future__ import annotations

import html

import pandas as pd

from srnets_lib import paths
from srnets_lib.book import banner, paper_numbers, robustness, sections
from srnets_lib.book import standard_errors
from srnets_lib.book.page import DEFAULT_PARAMS, gathered, unjudged as unjudged_word
from srnets_lib.book.verdicts.verdict import (MARGIN, NOISE, STATEMENTS, UNITS, Verdict, anchor, claim_outcomes,
                                              counted, shown, size)
from srnets_lib.book.verdicts.verdict_text import badge
from srnets_lib.book.shown import Html, Shown
from srnets_lib.settings import params as params_lib
from srnets_lib.settings.pages import SECTIONS

COLUMNS = ["page", "section", "reproduces", "group", "claim_id", "claim", "paper", "verdict", "confirmed", "measured",
           "margin", "alone", "rule", "anchor"]


def build(params_file=None) -> "Scorecard":
    """The scorecard of the store the params file's build reads (params_file None: $SRNETS_PARAMS,
    else params/toy.yaml)."""
    return Scorecard(params_lib.load(params_file or paths.setting("SRNETS_PARAMS", DEFAULT_PARAMS, "a params file")))


def margin_text(v: Verdict | None) -> str:
    """The margin of the mean over seeds in its unit, ± its standard error (verdict.Verdict.noise),
    with the seeds behind it; a margin that clears the thresholds by less than the rule asks says so."""
    if v is None or v.margin is None:
        return "n/a"
    noise = f" ± {size(v.noise, v.unit)}" if v.noise is not None else " (standard error unknown)"
    seeds = f" ({v.seeds} seed{'s' * (v.seeds != 1)})" if v.seeds else ""
    thin = f", under the {UNITS[v.unit][2]} margin the rule asks" if v.thin else ""
    return f"{shown(v.margin, v.unit)}{noise}{seeds}{thin}"


def alone_text(v: Verdict | None) -> str:
    """How many seeds clear the rule alone: "1 of 2", or "one seed"."""
    if v is None or v.margin is None:
        return "n/a"
    return f"{v.seeds_clearing} of {len(v.seed_margins)}" if v.seed_margins else f"{v.seeds or 1} seed{'s' * (v.seeds > 1)}"


def weakest(verdicts: list[Verdict]) -> Verdict | None:
    """The judged verdict with the smallest margin (else a not-measurable one, else None); a claim's
    verdicts share one unit."""
    judged = [v for v in verdicts if v.margin is not None and v.holds is not None]
    return min(judged, key=lambda v: v.margin) if judged else next(iter(verdicts), None)


def rule_text(statement) -> str:
    """The rule in words, with its thresholds' values (verdict.Statement.in_words)."""
    return statement.in_words()


class Scorecard:
    """The rows of the scorecard (`frame`) and each verdict behind them (`verdicts`)."""

    def __init__(self, params):
        self.params = params
        self.synthetic = banner.synthetic(params)
        self.verdicts: dict[str, list[Verdict]] = {}
        self.missing: dict[str, int] = {}
        self.pages = {name: gathered(name, params) for name in SECTIONS}
        for name, page in self.pages.items():
            self.verdicts[name], self.missing[name] = page.evaluate(), len(page.results.missing)
        self.frame = pd.DataFrame([row for name in SECTIONS for row in self._rows(name)], columns=COLUMNS)

    def _rows(self, name: str) -> list[dict]:
        section = sections.get(name)
        unjudged = unjudged_word(section, self.missing[name])
        rows = []
        for claim, group, word, verdicts in claim_outcomes(self.verdicts[name], unjudged):
            worst = weakest(verdicts)
            rows.append(self._row(name, claim, group, word, **{
                "confirmed": counted(verdicts),
                "measured": (f"{worst.subject}: {worst.measured}" if worst.measured
                             else f"{worst.subject}: {worst.reason or 'runs missing'}"),
                "margin": margin_text(worst) + (f" ({worst.outcome})" if worst.outcome != word and worst.margin is not None
                                                else ""),
                "alone": alone_text(worst)}))
        judged_claims = {claim for claim, *_ in claim_outcomes(self.verdicts[name])}
        rows += [self._row(name, e["claim"], "", unjudged, confirmed="0 of 0", measured="no finished runs", margin="n/a",
                           alone="n/a")
                 for e in paper_numbers.load()["claims"] if e["page"] == name and e["claim"] not in judged_claims]
        return rows

    def _row(self, name: str, claim: str, group: str, verdict: str, **measured) -> dict:
        section, statement = sections.get(name), STATEMENTS[claim]
        return {"page": name, "section": section.number, "reproduces": section.reproduces, "group": group,
                "claim_id": claim, "claim": statement.text, "paper": paper_numbers.printed(paper_numbers.claim(name, claim)),
                "verdict": verdict, "rule": rule_text(statement), "anchor": anchor(name, claim, group), **measured}

    def summary(self) -> Shown:
        """What the scorecard reads (the scale and the store), how a claim is decided, and its count
        of claims per outcome."""
        counts = self.frame.verdict.value_counts()
        scale = ("In this toy build the comparison with the paper is one of **direction** only: the toy's "
                 "numbers come from synthetic tasks and a small backbone and are not comparable in size with "
                 "the paper's." if self.synthetic else
                 "At paper scale the comparison is of values: the paper's numbers are means over its seeds.")
        return Shown(
            banner.banner(self.params),
            f"It reads the run store `{banner.shown_store()}` of `{banner.shown_path(self.params.source)}`'s build. {scale}",
            f"**How a claim is decided.** A claim's rule has parts (the ID score kept, the OOD score gained, a "
            f"prerequisite such as the model having learned the task), each a value minus its threshold in the "
            f"claim's unit (points of a score; % of a share; a loss in its own unit: nats of the MLM loss, 1 - cos "
            f"of the KD loss; a rank correlation). Each seed is judged alone on every part, and a seed failing a "
            f"prerequisite fails; a case's margin is the mean over its seeds of the rule's margin (its weakest "
            f"part), with a standard error from the runs' stored predictions and the seeds' spread, and each part "
            f"carries its own. A case is *not confirmed* when the margin or a part falls below 0 by more than "
            f"{NOISE:g} standard errors (or fewer than half its seeds clear it alone); *confirmed* when the margin "
            f"and every part clear their thresholds by at least {100 * MARGIN:g} point (1%, 0.01 of a loss, 0.01 of "
            f"a correlation) and by more than {NOISE:g} standard errors; *within noise* otherwise. A claim is "
            f"confirmed when every case is, partly confirmed when some are and no more are not confirmed, not "
            f"confirmed when more of its cases are not confirmed than confirmed (book/verdicts/verdict.py).",
            Html(f"Of its {len(self.frame)} claims: " + ", ".join(f"{badge(word)} {n}" for word, n in counts.items())
                 + "."))

    def table(self) -> Shown:
        """One line per claim: its outcome, its section (a link to the page), the claim, the rule in
        words, the weakest case's margin ± its standard error, and the seeds that clear it alone."""
        text = (lambda value: html.escape(str(value)).replace("*", ""))  # the statements' markdown emphasis
        head = "".join(f"<th>{h}</th>" for h in ("verdict (cases)", "section", "claim", "the rule, in words",
                                                  "weakest case: margin ± standard error", "seeds clearing alone"))
        rows = []
        for r in self.frame.itertuples():
            cases = r.confirmed.split(",")[0].replace(" confirmed", "")
            rows.append(
                f'<tr id="{r.anchor}" class="srnets-claim" data-page="{r.page}" data-claim="{r.claim_id}" '
                f'data-group="{text(r.group)}" data-outcome="{text(r.verdict)}">'
                f"<td>{badge(text(r.verdict))} <small>({text(cases)})</small></td>"
                f'<td><a href="{r.page}.html">{text(r.section)}</a></td>'
                f"<td>{text(r.claim)}{f' [{text(r.group)}]' if r.group else ''}</td>"
                f"<td><small>{text(r.rule)}</small></td><td>{text(r.margin)}</td><td>{text(r.alone)}</td></tr>")
        widths = "".join(f'<col style="width: {w}%">' for w in (16, 10, 18, 30, 15, 11))  # the rule's words the widest
        return Shown(Html(f'<div class="scorecard" style="font-size: 0.8em"><table class="dataframe">'
                          f"<colgroup>{widths}</colgroup><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody>"
                          "</table></div>"))

    def evidence(self) -> Shown:
        """Per claim: the paper's figure or table, what the paper prints for it (or what its figure
        shows), this build's weakest case and how many of its cases read each outcome."""
        f = self.frame
        text = (lambda value: html.escape(str(value)).replace("*", ""))
        table = pd.DataFrame({
            "section": [f'<a href="{page}.html">{text(number)}</a>' for page, number in zip(f.page, f.section)],
            "claim": [f"{text(claim)}{f' [{text(group)}]' if group else ''}<br><small>{text(where)}</small>"
                      for claim, group, where in zip(f.claim, f.group, f.reproduces)],
            "the paper prints": f.paper.map(text),
            "this build's weakest case": f.measured.map(text),
            "cases": f.confirmed.map(text)})
        return Shown(Html(f'<div class="scorecard" style="font-size: 0.8em">{_html(table, (8, 22, 30, 30, 10))}</div>'))

    def details(self) -> Shown:
        """Every verdict behind the rows, in a collapsed block."""
        rows = [{"section": sections.get(name).number, "case": v.subject, "measured": v.measured or v.reason,
                 "verdict": v.outcome, "margin ± standard error": margin_text(v), "seeds clearing alone": alone_text(v)}
                for name, verdicts in self.verdicts.items() for v in verdicts]
        table = _html(pd.DataFrame(rows).map(lambda x: html.escape(str(x))))
        return Shown(Html(f"<details><summary>Each case judged ({len(rows)})</summary>{table}</details>"))

    def robustness(self) -> Shown:
        """The core claims judged again with the data changed one field at a time (robustness.py):
        from this build's store where `make robustness` stored them, else the grid shipped with the
        package while its runs are this build's (checked by their keys), else how to produce them."""
        df, why, source = robustness.load(self.params), "", "this build's run store"
        if df is None:
            df, why = robustness.shipped(self.params)
            source = ("the last grid measured, shipped with the package (`srnets_lib/book/robustness_grid.json`; "
                      "every setting's run keys are this build's)")
        if df is None:
            return Shown(
                f"*Not computed for this build's store*{f' ({why})' if why else ''}. "
                f"`make robustness PARAMS={banner.shown_path(self.params.source)}` judges the claims of sections "
                f"{', '.join(sections.get(n).number for n in robustness.PAGES)} again at {len(robustness.DATA_SEEDS)} "
                f"other data seeds and {len(robustness.STRENGTHS)} other bias strengths, one field changed at a time "
                "(an hour or more on a 2-core CPU); this page then shows each cell's outcome, its margin and standard error.")
        table = robustness.pivot(df, marks=True).reset_index()
        return Shown(f"From {source}: {robustness.judged_text(df)}. Each cell is a (page, claim, task) judged in one "
                     f"setting, its outcome by "
                     f"the same rule as the rows above, then the weakest case's margin ± standard error in the "
                     f"claim's unit: **{robustness.summary(df)}**.{robustness.coverage(df)}",
                     Html(f'<div style="font-size: 0.75em">{_html(table.map(str))}</div>'))

    def precision(self) -> Shown:
        """How precise one reported number of this build is (standard_errors.py): the standard errors of
        the reported scores, and how much higher the selected checkpoint's dev score reads than its
        test score."""
        points = [p for page in self.pages.values() for p in page.results.points]
        errors = standard_errors.errors(points)
        if errors.empty:
            return Shown("*No finished run stored its predictions.*")
        gaps = standard_errors.selection_gaps(points)
        return Shown(
            "Every reported score of this build's runs (each run and IMP level once), from its stored "
            "per-example predictions: the standard error of one score, in points. Accuracy's is exact "
            "(binomial on the ID split, a random sample; stratified by label and subset on an OOD set, "
            f"drawn that way); the F1 scores' are bootstrapped ({standard_errors.RESAMPLES} resamples). Two "
            "scores whose difference is within about twice their combined standard error are not told "
            "apart by one run each; a verdict's margin reads against that."
            + (" The last row: checkpoints are selected on ID dev, and the selected checkpoint's dev score "
               "reads this much above the ID test score the book reports (the optimism that reporting "
               "dev's own score would add)." if len(gaps) > 1 else ""),
            Html(_html(standard_errors.summary(errors, gaps))))


def _html(df: pd.DataFrame, widths: tuple[int, ...] = ()) -> str:
    """A table's HTML; `widths`: its columns' shares of the text column (%), for a fixed layout."""
    table = df.to_html(index=False, escape=False, border=0, classes="dataframe", justify="left")
    if not widths:
        return table
    columns = "".join(f'<col style="width: {w}%">' for w in widths)
    opening = table.index(">") + 1
    return f"{table[:opening]}<colgroup>{columns}</colgroup>{table[opening:]}"
