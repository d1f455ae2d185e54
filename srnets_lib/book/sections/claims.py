"""The paper's claims as rules on a build's results: each Claim evaluates a results frame
(sections.gather.frame) into Verdicts, with the numbers that decide them; `judge` judges a page's
claims on its Results. The claims several sections judge are in srnet_claims.py; a claim of one
section lives in its module.

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

from srnets_lib.book.verdicts.verdict import Measures, Verdict, pct, with_seed_margins
from srnets_lib.book.sections.results import Results
from srnets_lib.book.sections.series import STD

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
        """The series whose values decide it (its page's points must make them: tests/book/test_sections.py)."""
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


