"""Verdicts: a paper claim judged on a build's results, as a record (the values that decide it,
the rule and its thresholds, holds or not, the margin and how noisy it is), its one outcome, and
the markdown a page renders from them.

The rule, fixed before any result it judges (and never tuned to one):
- A verdict's margin is the smallest of its deciding values minus their thresholds, on the means
  over seeds, in its statement's unit (UNITS: points of a score, % of a share, nats, rho).
- Its noise is the standard error of that margin: from the stored predictions (noise.py: the
  evaluation sets' sampling, the models scored on the same examples paired) and, with two or more
  seeds, from the seeds (the sample standard deviation of the seeds' own margins over the square
  root of their number), the two combined in quadrature; unknown where neither is available.
- Its outcome (`Verdict.outcome`, one word, computed here only, which the pages, the scorecard and
  the robustness grid all read):
  "not measurable"  the values are missing, or the claim cannot be judged (`reason` says why);
  "within noise"    |margin| <= NOISE (2) x its noise: the data do not tell the claim holding
                    from failing;
  "confirmed"       otherwise, every threshold cleared by at least MARGIN of the unit (1 point of a
                    score, 1% of a share, 0.01 nats, 0.01 of rho);
  "not confirmed"   otherwise (`thin`: the thresholds cleared, by less than MARGIN).
- A claim judged on several cases (tasks, sparsities, series) reads `outcome(verdicts)`:
  confirmed when every case is, partly confirmed when some are, not confirmed when none is and
  some case is not confirmed, within noise when every judged case is, not measurable when none
  is judged.
A verdict also says how many seeds clear the rule alone (`seed_margins`: the same rule judged on
each seed's runs). Every verdict is built by its Statement (judged, unmeasurable)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace

import pandas as pd

from srnets_lib.book import columns
from srnets_lib.book.sections import noise as sampling

MARGIN = 0.01  # in the statement's unit
NOISE = 2.0  # a margin within this many of its standard errors of 0 is within noise
# unit -> (scale, how a margin reads, what MARGIN is in it)
UNITS = {"points": (100, "{:+.1f} points", "1-point"), "share": (100, "{:+.1f}%", "1%"),
         "nats": (1, "{:+.3f} nats", "0.01-nat"), "rho": (1, "{:+.2f} of rho", "0.01 of rho")}


def shown(margin: float, unit: str = "points") -> str:
    """A margin with its unit: "+3.0 points", "+12.0%", "+0.015 nats"."""
    scale, form, _ = UNITS[unit]
    return form.format(scale * margin)


def size(value: float, unit: str = "points") -> str:
    """A size in a unit, unsigned: a standard error ("1.9 points")."""
    return shown(value, unit).lstrip("+")


def threshold(value: float, unit: str, ratio: bool) -> str:
    """A threshold as the rule's words read it: a share of a reference value ("95%") or a level
    ("90%"), else a difference in the unit ("1 point", "0.01 nats")."""
    if unit in ("points", "share") and (ratio or value >= 0.5 or unit == "share"):
        return f"{100 * value:g}%"
    if unit == "points":
        return f"{100 * value:g} point{'s' * (abs(100 * value) != 1)}"
    return f"{value:g} nats" if unit == "nats" else f"{value:g}"


@dataclass(frozen=True)
class Statement:
    """A claim of the paper as the book judges it: a short id, the claim as a page quotes it, and
    the decision rule with its thresholds (fractions: 0.01 = 1 point); `words`, the rule as a
    sentence with each threshold written {NAME} (else `rule` is read with the values in place)."""

    id: str
    text: str
    rule: str
    thresholds: dict[str, float] = field(default_factory=dict)
    unit: str = "points"  # what its margin is in (UNITS)
    words: str = ""

    def __post_init__(self):
        if self.unit not in UNITS:
            raise ValueError(f"statement {self.id}: unit {self.unit!r} is not one of {', '.join(UNITS)}")
        STATEMENTS.setdefault(self.id, self)

    def judged(self, task: str, subject: str, holds: bool | None, margin: float | None = None, **fields) -> "Verdict":
        """This statement judged on `subject` (of `task`, "all" for a claim over tasks)."""
        return Verdict(self.id, self.text, task, subject, self.rule, self.thresholds, holds, margin,
                       unit=self.unit, **fields)

    def unmeasurable(self, task: str, subject: str, reason: str = "runs missing", **fields) -> "Verdict":
        return self.judged(task, subject, None, reason=reason, **fields)

    def in_words(self) -> str:
        """The rule with its thresholds' values: "ID >= 95% of the full model's and OOD > its OOD + 1 point"."""
        names = sorted(self.thresholds, key=len, reverse=True)
        if self.words:
            text = self.words
            for name in names:
                text = text.replace("{" + name + "}", threshold(self.thresholds[name], self.unit, ratio=False))
            return text
        text = self.rule
        for name in names:
            value = self.thresholds[name]
            text = re.sub(re.escape(name) + r" x ", threshold(value, self.unit, ratio=True) + " of ", text)
            text = re.sub(re.escape(name) + r"(?![\w\[])", threshold(value, self.unit, ratio=False), text)
        return text.replace(">=", "\u2265").replace("<=", "\u2264").replace(" x ", " \u00d7 ")


STATEMENTS: dict[str, Statement] = {}  # every statement by id, as the section modules define them


@dataclass(frozen=True)
class Verdict:
    """One statement judged on one task (and one series, sparsity or budget) of a build."""

    claim: str  # the statement's id
    statement: str
    task: str
    subject: str  # what was judged, as the page names it: "nli, mask train (poe) at sparsity 0.5"
    rule: str
    thresholds: dict[str, float]
    holds: bool | None  # None: not measurable, `reason` says why
    margin: float | None = None  # the deciding value minus its threshold (the smallest over the rule's conditions)
    values: dict[str, float] = field(default_factory=dict)  # the means over seeds that decide it
    measured: str = ""  # those values as the page states them
    seeds: int = 0  # the fewest seeds behind a deciding value
    reason: str = ""
    notes: tuple[str, ...] = ()  # what qualifies the verdict: a collapsed reference
    group: str = ""  # the page's facet (C.5: the backbone)
    seed_margins: tuple[float | None, ...] = ()  # the margin judged on each seed alone (two or more seeds)
    thin: bool = False  # the thresholds are cleared, but by less than MARGIN: not confirmed
    unit: str = "points"  # the margin's (the statement's)
    sampling: float | None = None  # the margin's standard error from the stored predictions (noise.py)

    def __post_init__(self):
        """The pass rule (module docstring): a claim that clears its thresholds by less than the
        margin does not hold; `thin` says so. A margin read from stored predictions (a noise.Score)
        gives its standard error to `sampling`."""
        if isinstance(self.margin, sampling.Score):
            object.__setattr__(self, "sampling", self.margin.se if self.sampling is None else self.sampling)
            object.__setattr__(self, "margin", float(self.margin))
        object.__setattr__(self, "values", {k: float(v) if isinstance(v, float) else v for k, v in self.values.items()})
        if self.holds and (self.margin is None or self.margin < MARGIN):
            object.__setattr__(self, "holds", False)
            object.__setattr__(self, "thin", True)

    @property
    def seeds_clearing(self) -> int:
        """How many seeds clear the rule alone (with the margin)."""
        return sum(m is not None and m >= MARGIN for m in self.seed_margins)

    @property
    def seed_noise(self) -> float | None:
        """The standard error of the mean margin from the seeds: their margins' sample standard
        deviation over the square root of their number (two or more seeds judged alone)."""
        alone = [m for m in self.seed_margins if m is not None]
        return float(pd.Series(alone).std(ddof=1)) / math.sqrt(len(alone)) if len(alone) > 1 else None

    @property
    def noise(self) -> float | None:
        """The margin's standard error: the predictions' and the seeds', in quadrature (None: neither known)."""
        known = [e for e in (self.sampling, self.seed_noise) if e is not None]
        return math.sqrt(sum(e * e for e in known)) if known else None

    @property
    def outcome(self) -> str:
        """Its one word (the module docstring's rule)."""
        if self.holds is None:
            return "not measurable"
        if self.margin is not None and self.noise is not None and abs(self.margin) <= NOISE * self.noise:
            return "within noise"
        return "confirmed" if self.holds else "not confirmed"


def with_seed_margins(verdicts: list[Verdict], each_seed: list[list[Verdict]]) -> list[Verdict]:
    """`verdicts` (judged on the means over seeds) with the margin of the same rule judged on each
    seed's runs alone (`each_seed`: the verdicts of each seed, two or more)."""
    if len(each_seed) < 2:
        return verdicts
    alone: dict[tuple, list] = {}
    for judged in each_seed:
        for v in judged:
            alone.setdefault((v.claim, v.task, v.subject), []).append(v.margin)
    return [replace(v, seed_margins=tuple(alone.get((v.claim, v.task, v.subject), ()))) if v.holds is not None
            else v for v in verdicts]


def outcome(verdicts: list[Verdict]) -> str:
    """One word for a claim judged on several cases (tasks, sparsities, series): the module
    docstring's rule."""
    words = [v.outcome for v in verdicts]
    judged = [w for w in words if w != "not measurable"]
    if not judged:
        return "not measurable"
    if all(w == "confirmed" for w in words):
        return "confirmed"
    if "confirmed" in judged:
        return "partly confirmed"
    return "not confirmed" if "not confirmed" in judged else "within noise"


def by_claim(verdicts: list[Verdict]) -> dict[tuple[str, str], list[Verdict]]:
    """The verdicts of each (claim, group), in order: a row of the scorecard, a line of a page's summary."""
    claims: dict[tuple[str, str], list[Verdict]] = {}
    for v in verdicts:
        claims.setdefault((v.claim, v.group), []).append(v)
    return claims


def counted(verdicts: list[Verdict]) -> str:
    """How many cases read each outcome: "2 of 4 confirmed, 1 within noise, 1 not confirmed"."""
    words = [v.outcome for v in verdicts]
    parts = [f"{words.count(w)} {w}" for w in ("within noise", "not confirmed", "not measurable") if w in words]
    return ", ".join([f"{words.count('confirmed')} of {len(words)} confirmed", *parts])


def pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}"


def share(part: float, whole: float) -> str:
    """`part` as a percentage of `whole` ("n/a of" a reference that scored 0: a model predicting one
    class gets a binary F1 of 0)."""
    return f"{100 * part / whole:.1f}%" if whole else "n/a"


class Measures:
    """One task's rows of a results frame (sections.gather.frame): means over seeds of a series'
    ID or OOD score (noise.Score: with what their noise is made of), remembering the fewest seeds read."""

    def __init__(self, df: pd.DataFrame, task: str):
        self.task = task
        self.rows = df[df.task == task]
        ood = [c for c in columns.ood_columns(self.rows) if self.rows[c].notna().any()]
        self.ood = ood[0] if ood else None  # the task's OOD set
        self.counts: list[int] = []

    @property
    def ood_name(self) -> str:
        return columns.name(self.ood) if self.ood else "OOD"

    def _rows(self, series: str, column: str, x: float | None) -> tuple[pd.DataFrame, str]:
        column = self.ood if column == "ood" else column
        sub = self.rows[self.rows.series == series]
        if column is None or column not in sub:  # no OOD scores for this task (yet)
            return sub.iloc[0:0], column
        if x is not None:
            sub = sub[(sub.x - x).abs() < 1e-9]
        return sub[sub[column].notna()], column

    def values(self, series: str, column: str = "id", x: float | None = None) -> pd.Series:
        """One value per seed (at x, if given); column "ood" is the task's OOD set."""
        rows, column = self._rows(series, column, x)
        return rows[column] if column is not None and column in rows else pd.Series(dtype=float)

    def mean(self, series: str, column: str = "id", x: float | None = None) -> sampling.Score | None:
        rows, column = self._rows(series, column, x)
        if rows.empty:
            return None
        self.counts.append(len(rows))
        return sampling.mean(sampling.scores(rows, column))

    def spread(self, series: str, column: str = "id", x: float | None = None) -> float:
        """The seeds' sample standard deviation, as the tables print it after ± (0 for one seed)."""
        values = self.values(series, column, x)
        return float(values.std(ddof=1)) if len(values) > 1 else 0.0

    def verdict(self, statement: Statement, subject: str, holds: bool | None, margin: float | None = None,
                **fields) -> Verdict:
        """`statement` judged on this task, with the fewest seeds behind the means it read."""
        return statement.judged(self.task, subject, holds, margin, seeds=min(self.counts, default=0), **fields)

    def unmeasurable(self, statement: Statement, subject: str, reason: str = "runs missing", **fields) -> Verdict:
        return self.verdict(statement, subject, None, reason=reason, **fields)


def anchor(page: str, claim: str, group: str = "") -> str:
    """The scorecard row's HTML id of a page's claim (and group)."""
    return re.sub(r"[^a-z0-9_-]+", "-", f"{page}-{claim}-{group}".lower()).strip("-")


def claim_outcomes(verdicts: list[Verdict], unjudged: str = "not measurable") -> list[tuple[str, str, str, list[Verdict]]]:
    """(claim, group, outcome, its verdicts) per claim of a page: the scorecard's rows and the
    page's summary read the same words. `unjudged`: the word of a claim none of whose cases is
    judged ("not built" on an opt-in page whose runs `make book` leaves out)."""
    rows = []
    for (claim, group), found in by_claim(verdicts).items():
        word = outcome(found)
        rows.append((claim, group, unjudged if word == "not measurable" else word, found))
    return rows
