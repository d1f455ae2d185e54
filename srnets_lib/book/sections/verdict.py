"""Verdicts: a paper claim judged on a build's results, as a record (the values that decide it,
the rule and its thresholds, holds or not, the margin), and the markdown a page renders from them.

One pass rule for every claim: it holds when the mean over seeds clears each of its thresholds by
at least MARGIN of the statement's unit (UNITS: 1 point of a score, 1% of a share, 0.01 nats of a
loss, 0.01 of a rank correlation). The margin is the smallest of the deciding values minus their
thresholds, in that unit; a verdict also says how many seeds clear the rule alone (`seed_margins`:
the same rule judged on each seed's runs). Every verdict is built by its Statement (judged,
unmeasurable)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import pandas as pd

from srnets_lib.book import columns

MARGIN = 0.01  # in the statement's unit
# unit -> (scale, how a margin reads, what MARGIN is in it)
UNITS = {"points": (100, "{:+.1f} points", "1-point"), "share": (100, "{:+.1f}%", "1%"),
         "nats": (1, "{:+.3f} nats", "0.01-nat"), "rho": (1, "{:+.2f} of rho", "0.01 of rho")}


def shown(margin: float, unit: str = "points") -> str:
    """A margin with its unit: "+3.0 points", "+12.0%", "+0.015 nats"."""
    scale, form, _ = UNITS[unit]
    return form.format(scale * margin)


@dataclass(frozen=True)
class Statement:
    """A claim of the paper as the book judges it: a short id, the claim as a page quotes it, and
    the decision rule in words with its thresholds (fractions: 0.01 = 1 point)."""

    id: str
    text: str
    rule: str
    thresholds: dict[str, float] = field(default_factory=dict)
    unit: str = "points"  # what its margin is in (UNITS)

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
    notes: tuple[str, ...] = ()  # what qualifies the verdict: a collapsed reference, the seeds' spread
    group: str = ""  # the page's facet (C.5: the backbone)
    seed_margins: tuple[float | None, ...] = ()  # the margin judged on each seed alone (two or more seeds)
    thin: bool = False  # the thresholds are cleared, but by less than MARGIN: not confirmed
    unit: str = "points"  # the margin's (the statement's)

    def __post_init__(self):
        """The pass rule (module docstring): a claim that clears its thresholds by less than the
        margin does not hold; `thin` says so."""
        if self.holds and (self.margin is None or self.margin < MARGIN):
            object.__setattr__(self, "holds", False)
            object.__setattr__(self, "thin", True)

    @property
    def seeds_clearing(self) -> int:
        """How many seeds clear the rule alone (with the margin)."""
        return sum(m is not None and m >= MARGIN for m in self.seed_margins)


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
    """One word for a claim judged on several subjects (tasks, sparsities, series)."""
    judged = [v for v in verdicts if v.holds is not None]
    held = sum(bool(v.holds) for v in judged)
    if not judged:
        return "not measurable"
    if held == len(verdicts):
        return "confirmed"
    return "not confirmed" if held == 0 else "partly confirmed"


def pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}"


def share(part: float, whole: float) -> str:
    """`part` as a percentage of `whole` ("n/a of" a reference that scored 0: a model predicting one
    class gets a binary F1 of 0)."""
    return f"{100 * part / whole:.1f}%" if whole else "n/a"


class Measures:
    """One task's rows of a results frame (sections.gather.frame): means over seeds of a series'
    ID or OOD score, remembering the fewest seeds read."""

    def __init__(self, df: pd.DataFrame, task: str):
        self.task = task
        self.rows = df[df.task == task]
        ood = [c for c in columns.ood_columns(self.rows) if self.rows[c].notna().any()]
        self.ood = ood[0] if ood else None  # the task's OOD set
        self.counts: list[int] = []

    @property
    def ood_name(self) -> str:
        return columns.name(self.ood) if self.ood else "OOD"

    def values(self, series: str, column: str = "id", x: float | None = None) -> pd.Series:
        """One value per seed (at x, if given); column "ood" is the task's OOD set."""
        column = self.ood if column == "ood" else column
        sub = self.rows[self.rows.series == series]
        if column not in sub:  # no OOD scores for this task (yet)
            return pd.Series(dtype=float)
        if x is not None:
            sub = sub[(sub.x - x).abs() < 1e-9]
        return sub[column].dropna()

    def mean(self, series: str, column: str = "id", x: float | None = None) -> float | None:
        values = self.values(series, column, x)
        if values.empty:
            return None
        self.counts.append(len(values))
        return float(values.mean())

    def spread(self, series: str, column: str = "id", x: float | None = None) -> float:
        """The seeds' standard deviation, as the tables print it after ± (ddof 0; 0 for one seed)."""
        values = self.values(series, column, x)
        return float(values.std(ddof=0)) if len(values) > 1 else 0.0

    def verdict(self, statement: Statement, subject: str, holds: bool | None, margin: float | None = None,
                **fields) -> Verdict:
        """`statement` judged on this task, with the fewest seeds behind the means it read."""
        return statement.judged(self.task, subject, holds, margin, seeds=min(self.counts, default=0), **fields)

    def unmeasurable(self, statement: Statement, subject: str, reason: str = "runs missing", **fields) -> Verdict:
        return self.verdict(statement, subject, None, reason=reason, **fields)


def _margin(v: Verdict) -> str:
    """The margin sentence: over its thresholds, the seeds behind it, how many clear it alone."""
    if v.margin is None:
        return ""
    alone = (f"; {v.seeds_clearing} of {len(v.seed_margins)} seeds clear it alone ("
             + ", ".join("n/a" if m is None else shown(m, v.unit) for m in v.seed_margins) + ")") if v.seed_margins else ""
    thin = f", under the {UNITS[v.unit][2]} margin the rule asks" if v.thin else ""
    return (f"(margin {shown(v.margin, v.unit)} over its thresholds{thin}; mean of {v.seeds} "
            f"seed{'s' * (v.seeds != 1)}{alone})")


def _sentence(v: Verdict, first: bool) -> str:
    if v.holds is None and not v.measured:
        return f"not measurable ({v.reason})." if first else f"{v.statement}: not measurable ({v.reason})."
    outcome = (f"**not measurable** here: {v.reason}" if v.holds is None
               else f"**{'confirmed' if v.holds else 'not confirmed'}** here")
    return " ".join([f"{v.measured}: {v.statement} is {outcome}", _margin(v)]).rstrip() + ". " + " ".join(v.notes)


def render(verdicts: list[Verdict]) -> str:
    """Markdown: a bold line per group, then a bullet per subject; verdicts on one subject share
    its bullet, and one not measurable for the same reason as the one before it is said once."""
    lines, group, line, said = [], None, None, set()
    for v in verdicts:
        if v.group != group:
            group, line = v.group, None
            lines += [f"\n**{group}**\n"] if group else []
        if (v.task, v.subject) != line:
            line, said = (v.task, v.subject), set()
            lines.append(f"- {v.subject}:")
        if v.holds is None and not v.measured and v.reason in said:
            continue
        lines[-1] += " " + _sentence(v, first=lines[-1].endswith(":"))
        said.add(v.reason)
    return "\n".join(lines).strip()


def summary(verdicts: list[Verdict], synthetic: bool) -> str:
    """The two or three sentences that open a page: how many of its cases hold, then its clearest
    and its weakest case with their numbers (all from the verdicts, so from the run store)."""
    judged = sorted((v for v in verdicts if v.margin is not None), key=lambda v: v.margin * UNITS[v.unit][0])
    scale = "on synthetic data, not the paper's" if synthetic else "at this build's settings"
    if not judged:
        return f"**In short** ({scale}): none of the {len(verdicts)} cases this page judges is measurable yet."
    held = sum(bool(v.holds) for v in verdicts)
    thin = sum(v.thin for v in verdicts)
    unmeasured = sum(v.holds is None for v in verdicts)
    counts = [f"{thin} clear{'s' * (thin == 1)} {'its' if thin == 1 else 'their'} thresholds by less than "
              "the rule's margin"] * bool(thin) + [f"{unmeasured} not measurable"] * bool(unmeasured)
    text = (f"**In short** ({scale}): {held} of the {len(verdicts)} cases this page judges confirm the paper's claim"
            + "".join(f"; {c}" for c in counts) + ".")
    case = (lambda v: f"{v.statement} on {v.subject} ({v.measured}; margin {shown(v.margin, v.unit)})")
    if len(judged) == 1:
        return text + f" The case: {case(judged[0])}."
    return text + f" The clearest: {case(judged[-1])}. The weakest: {case(judged[0])}."

