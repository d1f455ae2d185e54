"""TAMT figures 6 and 7 (opt-in: make book-full): the downstream score of 70% subnetworks against
the pre-training iterations spent finding them: TAMT's masks after more and more steps, from the
OMP mask or from a random one (figure 7), against IMP pruning more or less often (figure 6)."""

from __future__ import annotations

import pandas as pd

from srnets_lib.book import plots
from srnets_lib.book.sections.base import Point
from srnets_lib.book.sections.claims import GAIN
from srnets_lib.book.sections.tamt import (FULL, SERIES, TamtSection, fewest, overall, runs_behind, score_figure,
                                           scores_only, seed_margins)
from srnets_lib.book.sections.verdict import Statement, Verdict, pct
from srnets_lib import methods

OBJECTIVES = ("mlm", "kd")  # figures 6 and 7 show TAMT-MLM and TAMT-KD
RANDOM = " (Rand_init)"
FEWER = Statement("tamt-fewer-iterations", "'TAMT reaches IMP's best score with fewer iterations' (8.4x fewer)",
                  "the fewest iterations at which TAMT's mean score >= IMP's best < the iterations of IMP's best "
                  "(margin: the share of IMP's iterations saved)", unit="share",
                  words="TAMT reaches IMP's best mean score after fewer pre-training iterations than IMP took to reach "
                        "it (the margin: the share of IMP's iterations saved)")
OMP_INIT = Statement("tamt-omp-init", "'OMP initialisation beats random initialisation'",
                     "at the most iterations, mean score from the OMP mask > from a random mask + GAIN", {"GAIN": GAIN},
                     words="after the most iterations, the search from the OMP mask beats the same search from a "
                           "random mask by more than {GAIN}")


def imp_iterations(recipes, config, sparsity: float) -> int:
    """The iterations IMP spends before its mask reaches `sparsity` (it prunes to it then)."""
    steps = methods.planned_schedule(config).sparsity_steps
    return next(step for step, level in steps.items() if abs(level - sparsity) < 1e-9)


class Iterations(TamtSection):
    name, number, title = "tamt_iterations", "TAMT 4.2.3, 4.2.4", "Pre-training iterations and mask initialisation"
    figure_tasks = True
    reproduces = "TAMT figures 6 and 7"
    figure_title = "Downstream score vs pre-training iterations at 70% sparsity (cf. TAMT figures 6, 7)"
    opt_in = True

    def points(self, recipes, tasks, seeds, sparsities):
        """Each mask (a TAMT run stopped after each of tamt.iteration_steps, from OMP or random;
        IMP pruning every tamt.imp_intervals steps), fine-tuned on each task and seed."""
        tamt, s = recipes.p.tamt, recipes.p.tamt.iteration_sparsity
        masks = []
        for seed in seeds:
            for o in OBJECTIVES:
                masks += [(SERIES[o] + suffix, n, recipes.tamt(o, s, seed, init, steps=n), None)
                          for n in tamt.iteration_steps for suffix, init in (("", "hard"), (RANDOM, "random"))]
            for interval in tamt.imp_intervals:
                imp = recipes.tamt_imp(seed, interval)
                masks.append(("IMP", imp_iterations(recipes, imp, s), imp, s))
        points = []
        for task in tasks:
            for ft in tamt.finetune_seeds:
                points.append(Point(FULL, task, ft, 0.0, recipes.full(task, "std", ft), reference=True))
                points += [Point(series, task, ft, n, recipes.transfer(task, mask, ft, level))
                           for series, n, mask, level in masks]
        return points

    def figure(self, page):
        return [score_figure(page, self.figure_title, "pre-training iterations")]

    def table(self, page):
        return plots.table(scores_only(page.frame), index=("task", "series", "x"))

    def judge(self, page) -> list[Verdict]:
        runs = runs_behind(page.frame) if not page.frame.empty else pd.Series(dtype=int)
        return [v for o in OBJECTIVES for v in (fewer_iterations(page.frame, SERIES[o], runs),
                                                omp_init(page.frame, SERIES[o], runs))]


def _series(scores: pd.Series, series: str) -> pd.Series:
    """x -> mean score of one series (finished points only)."""
    if scores.empty or series not in scores.index.get_level_values(0):
        return pd.Series(dtype=float)
    return scores.xs(series).dropna().sort_index()


def _reached(df: pd.DataFrame, series: str):
    """(IMP's iterations at its best mean score, that score, the fewest iterations at which `series`
    reaches it (None: never), `series`' curve); None where either curve is missing or is one point
    (another page's run at one iteration count: no pace to read)."""
    scores = overall(df)
    imp, tamt = _series(scores, "IMP"), _series(scores, series)
    if len(imp) < 2 or len(tamt) < 2:
        return None
    reached = tamt[tamt >= imp.max()]
    return imp.idxmax(), imp.max(), (reached.index.min() if not reached.empty else None), tamt


def _saved(df: pd.DataFrame, series: str) -> float | None:
    """The share of IMP's iterations `series` saves reaching IMP's best (FEWER's margin)."""
    found = _reached(df, series)
    return None if found is None or found[2] is None else float(1 - found[2] / found[0])


def fewer_iterations(df: pd.DataFrame, series: str, runs: pd.Series) -> Verdict:
    """Section 4.2.3: TAMT reaches IMP's best mean score in fewer iterations (the paper: 8.4x); the
    margin is the share of IMP's iterations it saves."""
    subject = f"mean over tasks, {series} vs IMP"
    found = _reached(df, series)
    if found is None:
        return FEWER.unmeasurable("all", subject, "runs missing: IMP's and its curve need two iteration counts or more")
    best_at, best, at, tamt = found
    measured = f"IMP's best {pct(best)} after {best_at:g} iterations"
    if at is None:
        return FEWER.judged("all", subject, False, None, values={"imp best": best},
                            measured=measured + f"; {series} never reaches it (its best {pct(tamt.max())})",
                            seeds=fewest(runs, [("IMP", best_at), (series, tamt.idxmax())]))
    margin = _saved(df, series)
    return FEWER.judged("all", subject, at < best_at, margin,
                        values={"imp best": best, "imp iterations": best_at, "tamt iterations": at},
                        measured=measured + f"; {series} reaches it after {at:g} ({best_at / at:.1f}x fewer)",
                        seeds=fewest(runs, [("IMP", best_at), (series, at)]),
                        seed_margins=seed_margins(df, lambda rows: _saved(rows, series)))


def _last(df: pd.DataFrame, series: str):
    """(the most iterations both curves reach, OMP's score there, random's), or None."""
    scores = overall(df)
    omp, rand = _series(scores, series), _series(scores, series + RANDOM)
    if omp.empty or rand.empty or omp.index.max() != rand.index.max():
        return None
    last = omp.index.max()
    return last, float(omp[last]), float(rand[last])


def omp_init(df: pd.DataFrame, series: str, runs: pd.Series) -> Verdict:
    """Section 4.2.4: from the OMP mask TAMT ends higher than from a random mask."""
    subject = f"mean over tasks, {series}: OMP vs random mask initialisation"
    found = _last(df, series)
    if found is None:
        return OMP_INIT.unmeasurable("all", subject)
    last, omp, rand = found

    def margin_of(rows):
        there = _last(rows, series)
        return None if there is None else there[1] - there[2] - GAIN

    margin = omp - rand - GAIN
    return OMP_INIT.judged("all", subject, margin > 0, margin, values={"omp init": omp, "random init": rand},
                           measured=f"after {last:g} iterations: from OMP {pct(omp)}, from random {pct(rand)}",
                           seeds=fewest(runs, [(series, last), (series + RANDOM, last)]),
                           seed_margins=seed_margins(df, margin_of))


SECTION = Iterations()
