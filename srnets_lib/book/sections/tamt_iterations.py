"""TAMT figures 6 and 7 (opt-in: make book-full): the downstream score of 70% subnetworks against
the pre-training iterations spent finding them: TAMT's masks after more and more steps, from the
OMP mask or from a random one (figure 7, whose step 0 is each initial mask itself: a search run
stopped after 0 updates), against IMP pruning more or less often (figure 6)."""

from __future__ import annotations

import pandas as pd

from srnets_lib import methods
from srnets_lib.book import plots
from srnets_lib.book.sections.point import Point
from srnets_lib.book.sections.tamt import (FULL, OBJECTIVES, PROBE_TASK, RANDOM, SERIES, TamtSection, runs_behind,
                                           scores_only)
from srnets_lib.book.sections.tamt_analysis_figures import trajectory_distance_figure
from srnets_lib.book.sections.tamt_figures import score_figure
from srnets_lib.book.sections.tamt_score_claims import fewer_iterations, omp_init
from srnets_lib.book.verdicts.verdict import Verdict

def imp_iterations(recipes, config, sparsity: float) -> int:
    """The iterations IMP spends before its mask reaches `sparsity` (it prunes to it then)."""
    steps = methods.planned_schedule(config).sparsity_steps
    return next(step for step, level in steps.items() if abs(level - sparsity) < 1e-9)


class Iterations(TamtSection):
    name, number, title = "tamt_iterations", "TAMT 4.2.3, 4.2.4", "Pre-training iterations and mask initialisation"
    figure_tasks = True
    reproduces = "TAMT figures 6, 7, 8 and 14-16"
    x_name = "pre-training iterations"
    figure_title = "Downstream score vs pre-training iterations at 70% sparsity (cf. TAMT figures 6, 7)"
    opt_in = True

    def points(self, recipes, tasks, seeds, sparsities):
        """Each mask at tamt.iteration_sparsity (group "") and at each other of tamt.iteration_sparsities
        (group "<s> sparsity": figures 14-16): a TAMT run stopped after 0 steps (its initial mask) and
        after each of tamt.iteration_steps, from OMP or random; IMP pruning every tamt.imp_intervals
        steps, at its level s), fine-tuned on each task and seed; and figure 8's IMP masks at
        tamt.distance_imp_intervals, probed on the corpus only."""
        tamt = recipes.p.tamt
        chosen = [tamt.iteration_sparsity] + [s for s in tamt.iteration_sparsities  # IMP's levels end at imp_target
                                              if abs(s - tamt.iteration_sparsity) > 1e-9 and s <= tamt.imp_target + 1e-9]
        points = []
        for s in chosen:
            group = "" if s == tamt.iteration_sparsity else f"{s:.0%} sparsity"
            masks = []
            for seed in seeds:
                for o in OBJECTIVES:
                    masks += [(SERIES[o] + suffix, n, recipes.tamt(o, s, seed, init, steps=n), None)
                              for n in (0, *tamt.iteration_steps) for suffix, init in (("", "hard"), (RANDOM, "random"))]
                for interval in tamt.imp_intervals:
                    imp = recipes.tamt_imp(seed, interval)
                    masks.append(("IMP", imp_iterations(recipes, imp, s), imp, s))
                for interval in [n for n in tamt.distance_imp_intervals if n not in tamt.imp_intervals]:
                    imp = recipes.tamt_imp(seed, interval)  # figure 8 only: its mask, probed on the corpus
                    points.append(Point("IMP", PROBE_TASK, seed, imp_iterations(recipes, imp, s),
                                        recipes.probe(imp, s), group=group))
            for task in tasks:
                for ft in tamt.finetune_seeds:
                    if not group:
                        points.append(Point(FULL, task, ft, 0.0, recipes.full(task, "std", ft), reference=True))
                    points += [Point(series, task, ft, n, recipes.transfer(task, mask, ft, level), group=group)
                               for series, n, mask, level in masks]
        return points

    def figure(self, results):
        """Figures 6 and 7 at tamt.iteration_sparsity, then figures 14-16's other sparsities (the full
        model beside each)."""
        frame, full = results.frame, results.frame[results.frame.series == FULL]
        distance = trajectory_distance_figure(results, results.params.tamt.iteration_sparsity)
        return [score_figure(results, self.figure_title if not group else
                             f"Downstream score vs pre-training iterations at {group} (cf. TAMT figures 14-16)",
                             "pre-training iterations",
                             frame[frame.group == group] if not group else pd.concat([frame[frame.group == group], full]))
                for group in dict.fromkeys(frame.group)] + ([distance] if distance is not None else [])

    def table(self, results):
        index = ("group", "task", "series", "x") if results.frame.group.nunique() > 1 else ("task", "series", "x")
        frame = results.frame[results.frame.task != PROBE_TASK] if not results.frame.empty else results.frame
        return plots.table(scores_only(frame), index=index)

    def judge(self, results) -> list[Verdict]:
        """Sections 4.2.3 and 4.2.4's claims at tamt.iteration_sparsity (figures 6 and 7)."""
        frame = results.frame[results.frame.group == ""] if not results.frame.empty else results.frame
        runs = runs_behind(frame) if not frame.empty else pd.Series(dtype=int)
        return [v for o in OBJECTIVES for v in (fewer_iterations(frame, SERIES[o], runs), omp_init(frame, SERIES[o], runs))]


SECTION = Iterations()
