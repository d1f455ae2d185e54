"""Verdicts: a paper claim judged on a build's results, as a record (the values that decide it,
the rule and its thresholds, holds or not, the margin and how noisy it is), its one outcome, and
the markdown a page renders from them.

The rule, fixed before any result it judges (and never tuned to one), written once here:
- A rule has parts (an ID part and an OOD part, a prerequisite such as "the model learned the
  task"), each a deciding value minus its threshold in the statement's unit (UNITS: points of a
  score, % of a share, nats, a loss in its own unit, rho); the rule's margin on some runs is the smallest part's. A part
  that fails on a seed fails that seed's rule: a seed is never set aside for failing a prerequisite.
- With two or more seeds, every seed is judged alone on every part, and the verdict's margin is the
  mean of the seeds' margins of the whole rule (so it lies between them), each part's margin the
  mean of its seeds'. With one seed, the margin is that seed's.
- Noise: each part's standard error combines its prediction noise (noise.py: the evaluation sets'
  sampling, the models scored on the same examples paired) with the spread of its seeds' values
  (their sample standard deviation over the square root of their number), in quadrature; the
  rule's margin likewise, from its binding part's predictions and the seeds' rule margins.
- Its outcome (`Verdict.outcome`, one word, computed here only, which the pages, the scorecard and
  the robustness grid all read):
  "not measurable"  the values are missing, or the claim cannot be judged (`reason` says why);
  "not confirmed"   the margin, or some part, falls below 0 by more than NOISE (2) of its
                    standard errors; or the rule clears but fewer than half the seeds clear it
                    alone; or it clears its thresholds, beyond its noise, by less than MARGIN;
  "confirmed"       the margin and every part clear their thresholds by MARGIN of the unit or more
                    (1 point of a score, 1% of a share, 0.01 nats, 0.01 of rho) and by more than
                    NOISE of their standard errors, and at least half the seeds clear the rule alone;
  "within noise"    otherwise: the margin or a part lies within NOISE standard errors of 0, and the
                    data do not tell the claim holding from failing.
  A standard error that is unknown (no stored predictions, one seed) counts as 0.
- A claim judged on several cases (tasks, sparsities, series) reads `outcome(verdicts)`:
  confirmed when every case is; partly confirmed when some are and no more cases are not
  confirmed than confirmed; not confirmed when some case is not confirmed and no more are
  confirmed; within noise when every judged case is; not measurable when none is judged. The page and the scorecard give the counts beside it.
Every verdict is built by its Statement (judged, unmeasurable)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from typing import Literal, get_args

import pandas as pd

from srnets_lib.book import columns
from srnets_lib.book.verdicts import noise

MARGIN = 0.01  # in the statement's unit
NOISE = 2.0  # a margin within this many of its standard errors of 0 is within noise
# unit -> (scale, how a margin reads, what MARGIN is in it)
UNITS = {"points": (100, "{:+.1f} points", "1-point"), "share": (100, "{:+.1f}%", "1%"),
         "nats": (1, "{:+.3f} nats", "0.01-nat"), "rho": (1, "{:+.2f} of rho", "0.01 of rho"),
         # a loss in its own unit: nats of the MLM cross-entropy, 1 - cos (or the MSE) of the KD loss
         "loss": (1, "{:+.3f} of the loss", "0.01-of-the-loss")}
Unit = Literal["points", "share", "nats", "rho", "loss"]  # the keys of UNITS (tested)
# a verdict's one word, and a claim's over its cases (`outcome`)
Outcome = Literal["confirmed", "partly confirmed", "within noise", "not confirmed", "not measurable"]
OUTCOMES: tuple[str, ...] = get_args(Outcome)


def shown(margin: float, unit: str = "points", extra: int = 0) -> str:
    """A margin with its unit: "+3.0 points", "+12.0%", "+0.015 nats" (`extra` digits more)."""
    scale, form, _ = UNITS[unit]
    return re.sub(r"\.(\d)f", lambda d: f".{int(d.group(1)) + extra}f", form).format(scale * margin)


def size(value: float, unit: str = "points", extra: int = 0) -> str:
    """A size in a unit, unsigned: a standard error ("1.9 points")."""
    return shown(value, unit, extra).lstrip("+")


def digits(margin: float, error: float | None, unit: str, within: bool) -> int:
    """How many digits more than the unit's the margin and its standard error need for the printed
    comparison (|margin| against NOISE x the error) to read as the verdict decided it (at most 3)."""
    if error is None:
        return 0
    for extra in range(4):
        printed = [abs(float(shown(v, unit, extra).split()[0].rstrip("%"))) for v in (margin, error)]
        if (printed[0] <= NOISE * printed[1]) == within:
            return extra
    return 3


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
    unit: Unit = "points"  # what its margin is in (UNITS)
    words: str = ""

    def __post_init__(self):
        if self.unit not in UNITS:
            raise ValueError(f"statement {self.id}: unit {self.unit!r} is not one of {', '.join(UNITS)}")
        if STATEMENTS.get(self.id, self) != self:  # the same statement again (a module reloaded) is fine
            raise ValueError(f"statement id {self.id!r} is taken by another claim: {STATEMENTS[self.id].text!r}")
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
    unit: Unit = "points"  # the margin's (the statement's)
    sampling: float | None = None  # the margin's standard error from the stored predictions (noise.py)
    parts: dict[str, float] = field(default_factory=dict)  # each part's margin (the rule's margin: the least)
    part_sampling: dict[str, float | None] = field(default_factory=dict)  # each part's prediction noise
    seed_parts: tuple[dict | None, ...] = ()  # each seed's parts, judged alone (with seed_margins)
    identical: tuple[str, ...] = ()  # the models it compares that are right on the same examples

    def __post_init__(self):
        """The rule (module docstring). A margin given as parts ({name: value - threshold}) is their
        least; a margin read from stored predictions (a noise.Score) gives its standard error to
        `sampling`, each part's to `part_sampling`. With two or more seeds judged alone the margin
        (and each part) is the mean of the seeds'; it holds where it clears MARGIN, and `thin` says
        where it clears its thresholds by less."""
        set_ = object.__setattr__
        if isinstance(self.margin, dict):
            parts = dict(self.margin)
            set_(self, "part_sampling", {k: v.se if isinstance(v, noise.Score) else None for k, v in parts.items()})
            set_(self, "margin", min(parts.values()))
            set_(self, "parts", {k: float(v) for k, v in parts.items()})
        if isinstance(self.margin, noise.Score):
            set_(self, "sampling", self.margin.se if self.sampling is None else self.sampling)
            set_(self, "margin", float(self.margin))
        set_(self, "values", {k: float(v) if isinstance(v, float) else v for k, v in self.values.items()})
        alone = [m for m in self.seed_margins if m is not None]
        cleared = self.holds  # the rule's thresholds cleared (on one seed: as the claim decided it)
        if len(alone) > 1 and self.holds is not None:
            set_(self, "margin", sum(alone) / len(alone))
            cleared = self.margin >= 0
            judged = [p for p in self.seed_parts if p]
            if judged and self.parts:
                set_(self, "parts", {k: _mean([p[k] for p in judged if k in p], m) for k, m in self.parts.items()})
        if cleared is not None:
            thin = bool(cleared) and (self.margin is None or self.margin < MARGIN)
            set_(self, "holds", bool(cleared) and not thin)
            set_(self, "thin", thin)

    @property
    def seeds_clearing(self) -> int:
        """How many seeds clear the rule alone (with the margin)."""
        return sum(m is not None and m >= MARGIN for m in self.seed_margins)

    @property
    def seed_noise(self) -> float | None:
        """The standard error of the mean margin from the seeds: their margins' sample standard
        deviation over the square root of their number (two or more seeds judged alone)."""
        return _spread([m for m in self.seed_margins if m is not None])

    @property
    def noise(self) -> float | None:
        """The margin's standard error: the predictions' and the seeds', in quadrature (None: neither known)."""
        return _quadrature(self.sampling, self.seed_noise)

    @property
    def part_noise(self) -> dict[str, float | None]:
        """Each part's standard error: its prediction noise and its seeds' spread, in quadrature."""
        judged = [p for p in self.seed_parts if p]
        return {k: _quadrature(self.part_sampling.get(k), _spread([p[k] for p in judged])) for k in self.parts}

    @property
    def deciding(self) -> list[tuple[str, float, float]]:
        """(name, margin, standard error: 0 where unknown) of the rule and of each of its parts."""
        return [("rule", self.margin, self.noise or 0.0)] + [(k, m, self.part_noise[k] or 0.0)
                                                             for k, m in self.parts.items()]

    @property
    def outcome(self) -> Outcome:
        """Its one word (the module docstring's rule)."""
        if self.holds is None:
            return "not measurable"
        if self.margin is None:
            return "confirmed" if self.holds else "not confirmed"
        if any(m < -NOISE * se or (m < 0 and se == 0) for _, m, se in self.deciding):
            return "not confirmed"
        if all(m >= MARGIN and m > NOISE * se for _, m, se in self.deciding):
            return "confirmed" if 2 * self.seeds_clearing >= len(self.seed_margins) else "not confirmed"
        if any(abs(m) <= NOISE * se for _, m, se in self.deciding):
            return "within noise"
        return "not confirmed"


def _mean(values: list[float], otherwise: float) -> float:
    return sum(values) / len(values) if values else otherwise


def _spread(values: list[float]) -> float | None:
    """The standard error of the mean of `values` (two or more): sample sd over sqrt(n)."""
    return float(pd.Series(values).std(ddof=1)) / math.sqrt(len(values)) if len(values) > 1 else None


def _quadrature(*errors: float | None) -> float | None:
    known = [e for e in errors if e is not None]
    return math.sqrt(sum(e * e for e in known)) if known else None


def with_seed_margins(verdicts: list[Verdict], each_seed: list[list[Verdict]]) -> list[Verdict]:
    """`verdicts` (judged on the means over seeds) with the same rule judged on each seed's runs
    alone (`each_seed`: the verdicts of each seed, two or more): the seeds' margins and parts, whose
    means then make the verdict's margin (Verdict.__post_init__)."""
    if len(each_seed) < 2:
        return verdicts
    alone: dict[tuple, list] = {}
    for judged in each_seed:
        for v in judged:
            alone.setdefault((v.claim, v.task, v.subject), []).append(v)
    out = []
    for v in verdicts:
        seeds = alone.get((v.claim, v.task, v.subject), [])
        if v.holds is None or not seeds:
            out.append(v)
            continue
        out.append(replace(v, seed_margins=tuple(s.margin for s in seeds),
                           seed_parts=tuple(s.parts if s.margin is not None else None for s in seeds)))
    return out


def outcome(verdicts: list[Verdict]) -> Outcome:
    """One word for a claim judged on several cases (tasks, sparsities, series): the module
    docstring's rule."""
    words = [v.outcome for v in verdicts]
    judged = [w for w in words if w != "not measurable"]
    if not judged:
        return "not measurable"
    if all(w == "confirmed" for w in words):
        return "confirmed"
    confirmed, failed = judged.count("confirmed"), judged.count("not confirmed")
    if confirmed and confirmed >= failed:
        return "partly confirmed"
    return "not confirmed" if failed else "within noise"


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
        self.read: dict[tuple, noise.Score] = {}  # (series, column, x) -> the mean it read

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

    def mean(self, series: str, column: str = "id", x: float | None = None) -> noise.Score | None:
        rows, column = self._rows(series, column, x)
        if rows.empty:
            return None
        self.counts.append(len(rows))
        score = noise.mean(noise.scores(rows, column))
        self.read[(series, column, x)] = score
        return score

    def spread(self, series: str, column: str = "id", x: float | None = None) -> float:
        """The seeds' sample standard deviation, as the tables print it after ± (0 for one seed)."""
        values = self.values(series, column, x)
        return float(values.std(ddof=1)) if len(values) > 1 else 0.0

    def verdict(self, statement: Statement, subject: str, holds: bool | None, margin: float | None = None,
                **fields) -> Verdict:
        """`statement` judged on this task, with the fewest seeds behind the means it read, and the
        series it compared that are right and wrong on the very same examples (`identical`)."""
        fields.setdefault("identical", self.identical())
        return statement.judged(self.task, subject, holds, margin, seeds=min(self.counts, default=0), **fields)

    def identical(self) -> tuple[str, ...]:
        """'a and b (ID)' for each two series read at one point whose scores have the same per-example
        terms on every evaluation set: the same examples right and wrong, no noise between them."""
        found = []
        read = list(self.read.items())
        for i, ((a, column, _), x) in enumerate(read):
            for (b, other, _), y in read[i + 1:]:
                if column == other and a != b and noise.same_terms(x, y):
                    found.append(f"{a} and {b} ({'ID' if column == 'id' else columns.name(column)})")
        return tuple(dict.fromkeys(found))

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
