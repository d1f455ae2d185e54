"""TAMT figures 1, 5, 12 and 13, and figure 8's masks at the end of their search: each task-agnostic
subnetwork's held-out pre-training losses (MLM and KD, with the pre-trained MLM head, as the authors'
eval_mlm.py and eval_kd.py; the KD loss as the run's kd_eval_loss measures it) against its downstream
score, and its mask's distance to the OMP mask (1 - Jaccard similarity, section 4.2.5).

Figure 1: OMP and random subnetworks against sparsity. Figure 5 (section 4.2.2): every subnetwork's
loss against its mean score over tamt.figure_tasks (the paper's CoLA, SST-2, MNLI, STS-B and SQuAD);
with make book-full also TAMT's masks along training (tamt.iteration_steps at
tamt.trajectory_sparsities, as shell_scripts/eval_{mlm,kd}/tamt_*.sh evaluate them), each one a
trajectory. Figures 12 and 13: the same per task. The verdicts read the default build's points only
(the scorecard's)."""

from __future__ import annotations

from srnets_lib.book.sections.point import Point
from srnets_lib.book.sections.tamt import PROBE_TASK, SERIES, TamtSection, judged_rows, subnetworks
from srnets_lib.book.sections.tamt_analyses import TRAJECTORY, analysis, distances
from srnets_lib.book.sections.tamt_analysis_claims import kd_closer, loss_correlates, own_loss_lowest
from srnets_lib.book.sections.tamt_analysis_figures import (final_distance_figure, loss_figure, per_task_figure,
                                                            similarity_figure)
from srnets_lib.book.sections.tamt_figures import oneshot_figure
from srnets_lib.book.sections.tamt_transfer import SECTION as TRANSFER
from srnets_lib.book.verdicts.verdict import Verdict, with_seed_margins

class PretrainingLoss(TamtSection):
    name, number, title = "tamt_pretraining", "TAMT 4.2.2, 4.2.5, A.1, A.3", "Pre-training loss, transfer and mask distance"
    reproduces = "TAMT figures 1, 5, 12, 13 and 17 (and figure 8's final masks)"
    figure_title = "Held-out pre-training loss vs mean downstream score (cf. TAMT figure 5)"

    def points(self, recipes, tasks, seeds, sparsities):
        """Each subnetwork on the corpus (OMP and random runs score their losses themselves; TAMT's
        masks and IMP's levels are probed with the pre-trained MLM head), then the transfer page's
        points of the same backbone (figures 1, 5 and 8 are BERT's)."""
        probes = [Point(n.series, PROBE_TASK, n.seed, n.sparsity,
                        n.run if n.series in ("OMP", "Rand") else recipes.probe(n.run, n.level))
                  for n in subnetworks(recipes, seeds, sparsities)]
        return probes + TRANSFER.of_backbone(recipes, tasks, seeds, sparsities)

    def opt_in_points(self, recipes, tasks, seeds, sparsities):
        """Figure 5's trajectories (make book-full): TAMT-MLM's and TAMT-KD's masks after each of
        tamt.iteration_steps at each of tamt.trajectory_sparsities, probed and fine-tuned on the figure's
        tasks (group "<steps> iterations"); IMP, OMP and Rand at those sparsities where the default
        points lack them."""
        tamt, figure = recipes.p.tamt, self.figure_tasks_of(recipes.p)
        extra = [s for s in tamt.trajectory_sparsities  # IMP's levels end at tamt.imp_target
                 if not any(abs(s - x) < 1e-9 for x in sparsities) and s <= tamt.imp_target + 1e-9]
        points = []
        for n in subnetworks(recipes, seeds, extra, asked=True) if extra else []:
            if n.series in ("IMP", "OMP", "Rand"):
                probe = n.run if n.series in ("OMP", "Rand") else recipes.probe(n.run, n.level)
                points.append(Point(n.series, PROBE_TASK, n.seed, n.sparsity, probe))
                points += [Point(n.series, task, ft, n.sparsity, recipes.transfer(task, n.run, ft, n.level))
                           for task in figure for ft in tamt.finetune_seeds]
        for s in tamt.trajectory_sparsities:
            for seed in seeds:
                for objective in ("mlm", "kd"):
                    for steps in tamt.iteration_steps:
                        mask, group = recipes.tamt(objective, s, seed, steps=steps), f"{steps}{TRAJECTORY}"
                        points.append(Point(SERIES[objective], PROBE_TASK, seed, s, recipes.probe(mask), group=group))
                        points += [Point(SERIES[objective], task, ft, s, recipes.transfer(task, mask, ft), group=group)
                                   for task in figure for ft in tamt.finetune_seeds]
        return points

    def figure_tasks_of(self, params) -> list[str]:
        return list(params.tamt.figure_tasks or params.tamt.tasks)

    def judge(self, results) -> list[Verdict]:
        """Figures 1/5 and 8's claims, judged on the analysis table of the page's default points (the
        scorecard's), and on each seed's alone."""
        def judged(table):
            return loss_correlates(table) + own_loss_lowest(table) + kd_closer(table)

        frame, masks = judged_rows(results), distances(results)
        tasks = [t for t in self.figure_tasks_of(results.params) if t in results.tasks] or None
        seeds = sorted(set(frame.seed)) if not frame.empty else []
        return with_seed_margins(judged(analysis(results, masks=masks, frame=frame, tasks=tasks)),
                                 [judged(analysis(results, s, masks, frame, tasks)) for s in seeds])

    def figure(self, results):
        tasks = self.figure_tasks_of(results.params)
        return [oneshot_figure(results), loss_figure(results, tasks, self.figure_title), per_task_figure(results, tasks),
                final_distance_figure(results), similarity_figure(results)]

    def table(self, results):
        return analysis(results).round(3).set_index(["series", "x", "group"])


SECTION = PretrainingLoss()
