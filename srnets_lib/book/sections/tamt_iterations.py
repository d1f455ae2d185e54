"""TAMT figures 6 and 7 (opt-in: make book-full): the downstream score of 70% subnetworks against
the pre-training iterations spent finding them: TAMT's masks after more and more steps, from the
OMP mask or from a random one (figure 7), against IMP pruning more or less often (figure 6)."""

from __future__ import annotations

import pandas as pd

from srnets_lib.book import plots
from srnets_lib.book.sections.base import Point
from srnets_lib.book.sections.claims import GAIN
from srnets_lib.book.sections.tamt import FULL, SERIES, TamtSection, fewest, mean_over_tasks, runs_behind, score_figure, scores_only
from srnets_lib.book.sections.verdict import Statement, Verdict, pct
from srnets_lib import methods

OBJECTIVES = ("mlm", "kd")  # figures 6 and 7 show TAMT-MLM and TAMT-KD
RANDOM = " (Rand_init)"
FEWER = Statement("tamt-fewer-iterations", "'TAMT reaches IMP's best score with fewer iterations' (8.4x fewer)",
                  "the fewest iterations at which TAMT's mean score >= IMP's best < the iterations of IMP's best")
OMP_INIT = Statement("tamt-omp-init", "'OMP initialisation beats random initialisation'",
                     "at the most iterations, mean score from the OMP mask > from a random mask + GAIN", {"GAIN": GAIN})


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
        empty = page.frame.empty
        scores = mean_over_tasks(page.frame).set_index(["series", "x"]).score if not empty else pd.Series(dtype=float)
        runs = runs_behind(page.frame) if not empty else pd.Series(dtype=int)
        return [v for o in OBJECTIVES for v in (fewer_iterations(scores, SERIES[o], runs), omp_init(scores, SERIES[o], runs))]


def _series(scores: pd.Series, series: str) -> pd.Series:
    """x -> mean score of one series (finished points only)."""
    if scores.empty or series not in scores.index.get_level_values(0):
        return pd.Series(dtype=float)
    return scores.xs(series).dropna().sort_index()


def fewer_iterations(scores: pd.Series, series: str, runs: pd.Series) -> Verdict:
    """Section 4.2.3: TAMT reaches IMP's best mean score in fewer iterations (the paper: 8.4x)."""
    imp, tamt = _series(scores, "IMP"), _series(scores, series)
    subject = f"mean over tasks, {series} vs IMP"
    if imp.empty or tamt.empty:
        return Verdict(FEWER.id, FEWER.text, "all", subject, FEWER.rule, {}, None, reason="runs missing")
    best_at, best = imp.idxmax(), imp.max()
    reached = tamt[tamt >= best]
    measured = f"IMP's best {pct(best)} after {best_at:g} iterations"
    if reached.empty:
        return Verdict(FEWER.id, FEWER.text, "all", subject, FEWER.rule, {}, False, None, {"imp best": best},
                       measured + f"; {series} never reaches it (its best {pct(tamt.max())})",
                       seeds=fewest(runs, [("IMP", best_at), (series, tamt.idxmax())]))
    at = reached.index.min()
    return Verdict(FEWER.id, FEWER.text, "all", subject, FEWER.rule, {}, at < best_at, float(best_at / at),
                   {"imp best": best, "imp iterations": best_at, "tamt iterations": at},
                   measured + f"; {series} reaches it after {at:g} ({best_at / at:.1f}x fewer)",
                   seeds=fewest(runs, [("IMP", best_at), (series, at)]))


def omp_init(scores: pd.Series, series: str, runs: pd.Series) -> Verdict:
    """Section 4.2.4: from the OMP mask TAMT ends higher than from a random mask."""
    omp, rand = _series(scores, series), _series(scores, series + RANDOM)
    subject = f"mean over tasks, {series}: OMP vs random mask initialisation"
    if omp.empty or rand.empty or omp.index.max() != rand.index.max():
        return Verdict(OMP_INIT.id, OMP_INIT.text, "all", subject, OMP_INIT.rule, OMP_INIT.thresholds, None,
                       reason="runs missing")
    last = omp.index.max()
    margin = float(omp[last] - rand[last] - GAIN)
    return Verdict(OMP_INIT.id, OMP_INIT.text, "all", subject, OMP_INIT.rule, OMP_INIT.thresholds, margin > 0, margin,
                   {"omp init": omp[last], "random init": rand[last]},
                   f"after {last:g} iterations: from OMP {pct(omp[last])}, from random {pct(rand[last])}",
                   seeds=fewest(runs, [(series, last), (series + RANDOM, last)]))


SECTION = Iterations()
