"""The paper's claims as rules on a build's results: each Claim evaluates a results frame
(sections.gather.frame) into Verdicts, with the numbers that decide them. The claims several
sections judge live here; a claim of one section lives in its module.

Every threshold below was fixed before the results it judges were computed, and none is tuned
to a result:
  LEARNED      a model below 80% of the std full model's ID has not learned the task
  EXPLOITED    standard fine-tuning exploits the bias: its ID exceeds its OOD by over 5 points
  RETAINED     a sparse subnetwork "keeps" the full model's ID at >= 95% of it (section 4.2)
  GAIN         "improves OOD" means by more than 1 point
  COMPETITIVE  section 4.4's "competitive": >= 90% of the full model's ID (and OOD within 2 points)
  NEARLY_ALL   section 4.5's "nearly 100% OOD": >= 90% OOD
  EARLY        section 5.1's "competitive" start: >= 98% of "ft to end"'s ID, OOD >= its OOD - 2
A claim holds only when its mean clears every threshold by verdict.MARGIN (1 point) or more.
"""

from __future__ import annotations

import copy
from dataclasses import replace

import pandas as pd

from srnets_lib.book.sections.verdict import Measures, Statement, Verdict, pct, with_seed_margins
from srnets_lib.book.sections.results import Results
from srnets_lib.book.sections.series import POE, STD

LEARNED = 0.8
EXPLOITED = 0.05
RETAINED = 0.95
GAIN = 0.01
COMPETITIVE = 0.9
NEARLY_ALL = 0.9
EARLY = (0.98, 0.02)


def judge(results: Results, claims, df: pd.DataFrame | None = None, tasks: list | None = None) -> list[Verdict]:
    """`claims` evaluated on `df`'s rows of `tasks` (None: the page's frame, its tasks), per group of
    the page's points (C.5: per backbone); a page asked for its sparsities judges only those."""
    if results.asked:
        claims = [c for c in (claim.at(results.sparsities) for claim in claims) if c is not None]
    df, tasks = results.frame if df is None else df, results.tasks if tasks is None else tasks
    verdicts = []
    for group in dict.fromkeys(p.group for p in results.points):
        rows = df[df.group == group]
        verdicts += [replace(v, group=group) for claim in claims for v in claim.evaluate(rows, tasks)]
    return verdicts


class Claim:
    """Evaluates one of the paper's claims on each task of a results frame."""

    per_sparsity = False  # its cases are one sparsity each (a rule reading several at once is not)

    def at(self, sparsities) -> "Claim | None":
        """The claim as a page asked for `sparsities` judges it: its cases at those sparsities only;
        None where its rule reads other sparsities too (it cannot be judged on them alone)."""
        xs = getattr(self, "xs", None)
        if xs is None:
            return self
        kept = tuple(x for x in xs if any(abs(x - s) < 1e-9 for s in sparsities))
        if kept == tuple(xs):
            return self
        if not kept or not self.per_sparsity:
            return None
        narrowed = copy.copy(self)
        narrowed.xs = kept
        return narrowed

    def evaluate(self, df: pd.DataFrame, tasks=None) -> list[Verdict]:
        """Verdicts for `tasks` (default: the frame's) on the means over seeds, each with the same
        rule's margin on every seed alone; a task without rows is not measurable."""
        tasks = list(dict.fromkeys(df.task)) if tasks is None else tasks
        seeds = sorted(df.seed.dropna().unique()) if "seed" in df else []
        return with_seed_margins([v for task in tasks for v in self.judge(df, task)],
                                 [[v for task in tasks for v in self.judge(of_seed(df, s), task)] for s in seeds])

    def judge(self, df: pd.DataFrame, task: str) -> list[Verdict]:
        raise NotImplementedError

    def reads(self) -> tuple[str, ...]:
        """The series whose values decide it (its page's points must make them: tests/test_sections)."""
        return ()


def of_seed(df: pd.DataFrame, seed) -> pd.DataFrame:
    """The rows of one seed, with the full models it has none of at that seed (a reference computed
    at fewer seeds: its mean over them), so every seed is judged on every part of a rule."""
    own = df[df.seed == seed]
    if "reference" not in df:
        return own
    shared = df[df.reference.astype(bool) & ~df.series.isin(set(own.series))]
    return pd.concat([own, shared]) if not shared.empty else own


def reference(m: Measures, name: str, judged: str) -> tuple[str, float | None, float | None, tuple[str, ...]]:
    """(name, ID, OOD, notes) of the full model `judged` is compared with: `name`, or the std full
    model where `name` did not learn the task (a collapsed PoE model scores ~50% OOD whatever the bias)."""
    ref_id, ref_ood = m.mean(name), m.mean(name, "ood")
    std_id = m.mean(STD)
    if name != STD and None not in (ref_id, std_id) and ref_id < LEARNED * std_id:
        note = (f"{name} did not learn the task (ID {pct(ref_id)}, below {LEARNED:.0%} of {STD}'s "
                f"{pct(std_id)}), so {judged} is compared with {STD}.")
        return STD, std_id, m.mean(STD, "ood"), (note,)
    return name, ref_id, ref_ood, ()


BIAS = Statement("bias-exploited", "'standard fine-tuning exploits the dataset bias'",
                 "std full model: ID - OOD > EXPLOITED", {"EXPLOITED": EXPLOITED},
                 words="the std full model's ID score above its OOD score by more than {EXPLOITED}")
POE_IMPROVES = Statement("poe-improves-ood", "the paper's 'PoE improves OOD'",
                "PoE full model: ID >= LEARNED x std's and OOD > std's OOD + GAIN", {"LEARNED": LEARNED, "GAIN": GAIN},
                words="the PoE full model keeps at least {LEARNED} of the std model's ID score and beats its OOD "
                      "score by more than {GAIN}")


class FullModels(Claim):
    """Sections 4.2 (figures 2, 3) and C.5: the std model's ID-OOD gap is the dataset bias; the
    PoE full model improves OOD over it, unless it did not learn the task."""

    def reads(self):
        return STD, POE

    def judge(self, df, task):
        m = Measures(df, task)
        std_id, std_ood = m.mean(STD), m.mean(STD, "ood")
        if None in (std_id, std_ood):
            return [m.unmeasurable(s, task, "no finished full models") for s in (BIAS, POE_IMPROVES)]
        gap = std_id - std_ood
        verdicts = [m.verdict(BIAS, task, gap > EXPLOITED, gap - EXPLOITED, values={"std id": std_id, "std ood": std_ood},
                              measured=f"std full model ID {pct(std_id)} vs OOD {pct(std_ood)} ({m.ood_name}): "
                                       f"gap {100 * gap:+.1f} points")]
        poe_id, poe_ood = m.mean(POE), m.mean(POE, "ood")
        if None in (poe_id, poe_ood):
            return verdicts + [m.unmeasurable(POE_IMPROVES, task)]
        values = {"std id": std_id, "std ood": std_ood, "poe id": poe_id, "poe ood": poe_ood}
        measured = f"PoE full model: ID {pct(poe_id)}, OOD {pct(poe_ood)}"
        parts = {"PoE learned": poe_id - LEARNED * std_id, "OOD gained": poe_ood - (std_ood + GAIN)}
        notes = () if poe_id >= LEARNED * std_id else (
            f"The PoE model did not learn the task (ID below {LEARNED:.0%} of the std model's), so its OOD score is "
            "that of a near-constant predictor.",)
        return verdicts + [m.verdict(POE_IMPROVES, task, min(parts.values()) > 0, parts, values=values,
                                     measured=measured, notes=notes)]


SRNET = Statement("srnet", "a sparse *and* robust subnetwork",
                  "ID >= RETAINED x the full model's and OOD > its OOD + GAIN", {"RETAINED": RETAINED, "GAIN": GAIN},
                  words="the subnetwork keeps at least {RETAINED} of the full model's ID score and beats its OOD "
                        "score by more than {GAIN}")


class SubnetworkVsFull(Claim):
    """Sections 4.2, 4.3, C.1, C.5: a subnetwork series keeps the full model's ID and gains OOD
    (an SRNet) at each sparsity of `xs`. A reference that did not learn the task is replaced by
    the std full model."""

    per_sparsity = True

    def __init__(self, series: str, reference: str = STD, xs=(0.5, 0.7), names: dict | None = None):
        """`names`: how the verdict's text names a reference series (C.5: "full model (std)")."""
        self.series, self.reference, self.xs, self.names = series, reference, tuple(xs), dict(names or {})

    def reads(self):
        return self.series, self.reference, STD

    def judge(self, df, task):
        return [self._at(Measures(df, task), x) for x in self.xs]

    def _at(self, m: Measures, x: float) -> Verdict:
        name, ref_id, ref_ood, notes = reference(m, self.reference, self.series)
        subject = f"{m.task}, {self.series} at sparsity {x}"
        sub_id, sub_ood = m.mean(self.series, "id", x), m.mean(self.series, "ood", x)
        if None in (ref_id, ref_ood, sub_id, sub_ood):
            return m.unmeasurable(SRNET, subject, notes=notes)
        retained = sub_id / ref_id if ref_id else float("nan")
        gained = sub_ood - ref_ood
        margin = {"ID kept": sub_id - RETAINED * ref_id, "OOD gained": gained - GAIN}  # both in points of the score
        return m.verdict(SRNET, subject, retained >= RETAINED and gained > GAIN, margin, notes=notes,
                         values={"id": sub_id, "ood": sub_ood, "reference id": ref_id, "reference ood": ref_ood},
                         measured=f"ID {pct(sub_id)} ({100 * retained:.1f}% of {self.names.get(name, name)}), OOD {pct(sub_ood)} "
                                  f"({100 * gained:+.1f} points)")
