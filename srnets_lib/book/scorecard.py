"""The scorecard (book/scorecard.ipynb): each claim of the two papers that the book judges, on one
page: the paper's statement and its figure or table, what the paper prints for it
(paper_numbers.yaml), what this build measures (the weakest of its verdicts: mean over seeds, the
margin with its spread across seeds), the rule, the verdict and a link to the page that shows it.
Everything is read from the run store (gathered, never computed) and paper_numbers.yaml."""

from __future__ import annotations

import html

import numpy as np
import pandas as pd

from srnets_lib import paths
from srnets_lib.book import banner as report, paper_numbers, robustness, sections
from srnets_lib.book import standard_errors as precision
from srnets_lib.book.page import DEFAULT_PARAMS, gathered
from srnets_lib.book.sections.verdict import STATEMENTS, UNITS, Verdict, outcome, shown
from srnets_lib.book.shown import Html, Shown
from srnets_lib.settings import params as params_lib
from srnets_lib.settings.pages import SECTIONS

COLUMNS = ["page", "section", "reproduces", "group", "claim_id", "claim", "paper", "verdict", "confirmed", "measured",
           "margin", "rule"]


def build(params_file=None) -> "Scorecard":
    """The scorecard of the store the params file's build reads (params_file None: $SRNETS_PARAMS,
    else params/toy.yaml)."""
    return Scorecard(params_lib.load(params_file or paths.setting("SRNETS_PARAMS", DEFAULT_PARAMS, "a params file")))


def margin_text(v: Verdict | None) -> str:
    """The margin of the mean over seeds in its unit, ± the standard deviation of the seeds' own margins."""
    if v is None or v.margin is None:
        return "n/a"
    alone = [m for m in v.seed_margins if m is not None]
    spread = f" ± {shown(float(np.std(alone)), v.unit).lstrip('+')}" if len(alone) > 1 else ""
    seeds = f" ({v.seeds} seed{'s' * (v.seeds != 1)})" if v.seeds else ""
    return f"{shown(v.margin, v.unit)}{spread}{seeds}"


def weakest(verdicts: list[Verdict]) -> Verdict | None:
    """The judged verdict with the smallest margin (else a not-measurable one, else None); a claim's
    verdicts share one unit."""
    judged = [v for v in verdicts if v.margin is not None]
    return min(judged, key=lambda v: v.margin) if judged else next(iter(verdicts), None)


def rule_text(statement) -> str:
    thresholds = ", ".join(f"{k} = {value:g}" for k, value in statement.thresholds.items())
    return statement.rule + (f" ({thresholds})" if thresholds else "")


class Scorecard:
    """The rows of the scorecard (`frame`) and each verdict behind them (`verdicts`)."""

    def __init__(self, params):
        self.params = params
        self.synthetic = report.synthetic(params)
        self.verdicts: dict[str, list[Verdict]] = {}
        self.missing: dict[str, int] = {}
        self.pages = {name: gathered(name, params) for name in SECTIONS}
        for name, page in self.pages.items():
            self.verdicts[name], self.missing[name] = page.evaluate(), len(page.missing)
        self.frame = pd.DataFrame([row for name in SECTIONS for row in self._rows(name)], columns=COLUMNS)

    def _rows(self, name: str) -> list[dict]:
        section = sections.get(name)
        claims: dict[tuple, list[Verdict]] = {}
        for v in self.verdicts[name]:
            claims.setdefault((v.claim, v.group), []).append(v)
        unjudged = "not built (opt-in page: make book-full)" if section.opt_in and self.missing[name] else "not measurable"
        rows = []
        for (claim, group), verdicts in claims.items():
            worst = weakest(verdicts)
            judged = [v for v in verdicts if v.holds is not None]
            thin = sum(v.thin for v in verdicts)
            word = outcome(verdicts)
            rows.append(self._row(name, claim, group, unjudged if word == "not measurable" else word, **{
                "confirmed": (f"{sum(bool(v.holds) for v in judged)} of {len(verdicts)}"
                              + (f" ({thin} under the {UNITS[worst.unit][2]} margin)" if thin else "")),
                "measured": (f"{worst.subject}: {worst.measured}" if worst.measured
                             else f"{worst.subject}: {worst.reason or 'runs missing'}"),
                "margin": margin_text(worst)}))
        judged_claims = {claim for claim, _ in claims}
        rows += [self._row(name, e["claim"], "", unjudged, confirmed="0 of 0", measured="no finished runs", margin="n/a")
                 for e in paper_numbers.load()["claims"] if e["page"] == name and e["claim"] not in judged_claims]
        return rows

    def _row(self, name: str, claim: str, group: str, verdict: str, **measured) -> dict:
        section, statement = sections.get(name), STATEMENTS[claim]
        return {"page": name, "section": section.number, "reproduces": section.reproduces, "group": group,
                "claim_id": claim, "claim": statement.text, "paper": paper_numbers.printed(paper_numbers.claim(name, claim)),
                "verdict": verdict, "rule": rule_text(statement), **measured}

    def summary(self) -> Shown:
        """What the scorecard reads (the scale and the store) and its count of confirmed claims."""
        counts = self.frame.verdict.value_counts()
        scale = ("In this toy build the comparison with the paper is one of **direction** only: the toy's "
                 "numbers come from synthetic tasks and a small backbone and are not comparable in size with "
                 "the paper's." if self.synthetic else
                 "At paper scale the comparison is of values: the paper's numbers are means over its seeds.")
        return Shown(
            report.banner(self.params),
            f"It reads the run store `{paths.runs_root()}` of `{report.shown_path(self.params.source)}`'s build. {scale}",
            "A margin is the smallest distance of the claim's deciding values from its thresholds, in the "
            "claim's unit: points of a score, % of a share (of IMP's iterations, of a mask's weights), nats of "
            "a loss, or a rank correlation. A claim is confirmed when the mean over seeds clears every "
            "threshold by at least 1 point (1%, 0.01 nats, 0.01 of the correlation).",
            f"Of its {len(self.frame)} claims: " + ", ".join(f"{n} {word}" for word, n in counts.items()) + ".")

    def table(self) -> Shown:
        """One row per claim, with a link to its page."""
        return Shown(Html(f'<div class="scorecard" style="font-size: 0.85em">{_html(self._shown())}</div>'))

    def _shown(self) -> pd.DataFrame:
        """The rows as the page prints them: the claim with its figure and rule under it, the
        verdict with its count of cases."""
        f = self.frame
        text = (lambda value: html.escape(str(value)).replace("*", ""))  # the statements' markdown emphasis
        return pd.DataFrame({
            "section": [f'<a href="{page}.html">{text(number)}</a>' for page, number in zip(f.page, f.section)],
            "claim": [f"{text(claim)}{f' [{text(group)}]' if group else ''}<br><small>{text(where)}; rule: "
                      f"{text(rule)}</small>" for claim, group, where, rule in zip(f.claim, f.group, f.reproduces, f.rule)],
            "the paper prints": f.paper.map(text),
            "this build (the weakest case)": f.measured.map(text),
            "verdict (cases confirmed)": [f"<b>{text(word)}</b><br>{text(count)}" for word, count in zip(f.verdict, f.confirmed)],
            "margin (± across seeds)": f.margin.map(text)})

    def details(self) -> Shown:
        """Every verdict behind the rows, in a collapsed block."""
        rows = [{"section": sections.get(name).number, "case": v.subject, "measured": v.measured or v.reason,
                 "verdict": ("not measurable" if v.holds is None else "confirmed" if v.holds else "not confirmed"),
                 "margin": margin_text(v)}
                for name, verdicts in self.verdicts.items() for v in verdicts]
        table = _html(pd.DataFrame(rows).map(lambda x: html.escape(str(x))))
        return Shown(Html(f"<details><summary>Each case judged ({len(rows)})</summary>{table}</details>"))

    def robustness(self) -> Shown:
        """The core claims judged again with the data changed one field at a time (robustness.py),
        where `make robustness` has stored them; else how to produce them."""
        df = robustness.load(self.params)
        if df is None:
            return Shown(
                f"*Not computed for this build's store.* `make robustness PARAMS={report.shown_path(self.params.source)}` "
                f"judges the claims of sections {', '.join(sections.get(n).number for n in robustness.PAGES)} again at {len(robustness.DATA_SEEDS)} other data "
                f"seeds and {len(robustness.STRENGTHS)} other bias strengths, one field changed at a time (hours "
                "on a 2-core CPU); this page then shows each cell, the margin in its unit, and how many hold.")
        table = robustness.pivot(df).reset_index()
        return Shown(f"Each cell is a (page, claim, task) judged in one setting: **{robustness.summary(df)}** "
                     f"(judged {df.attrs['judged']} on this store). 'yes' holds with the margin; the number "
                     "is the smallest margin, in the claim's unit.",
                     Html(f'<div style="font-size: 0.8em">{_html(table.map(lambda x: html.escape(str(x))))}</div>'))

    def precision(self) -> Shown:
        """How precise one reported number of this build is (precision.py): the standard errors of
        the reported scores, and how much higher the selected checkpoint's dev score reads than its
        test score."""
        points = [p for page in self.pages.values() for p in page.points]
        errors = precision.errors(points)
        if errors.empty:
            return Shown("*No finished run stored its predictions.*")
        gaps = precision.selection_gaps(points)
        return Shown(
            "Every reported score of this build's runs (each run and IMP level once), from its stored "
            "per-example predictions: the standard error of one score, in points. Accuracy's is exact "
            "(binomial on the ID split, a random sample; stratified by label and subset on an OOD set, "
            f"drawn that way); the F1 scores' are bootstrapped ({precision.RESAMPLES} resamples). Two "
            "scores whose difference is within about twice their combined standard error are not told "
            "apart by one run each; a verdict's margin reads against that."
            + (" The last row: checkpoints are selected on ID dev, and the selected checkpoint's dev score "
               "reads this much above the ID test score the book reports (the optimism that reporting "
               "dev's own score would add)." if len(gaps) > 1 else ""),
            Html(_html(precision.summary(errors, gaps))))


def _html(df: pd.DataFrame) -> str:
    return df.to_html(index=False, escape=False, border=0, classes="dataframe", justify="left")
