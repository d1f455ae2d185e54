"""TAMT figure 9 (opt-in: make book-full): 70% subnetworks fine-tuned on fewer and fewer training
examples of each task, TAMT against IMP, OMP and the full model, as the authors' few-shot scripts
(imp_and_fine_tune/shell_scripts/run_glue/few_shot/ of llyx97/TAMT) run them: each point a random
subset of that many training examples (SQuAD: windows) drawn with the fine-tuning seed, the epochs and
seeds of its script (params tamt.reduced_data)."""

from __future__ import annotations

from srnets_lib.book import plots
from srnets_lib.book.sections.claims import GAIN
from srnets_lib.book.sections.point import Point
from srnets_lib.book.sections.tamt import FULL, SERIES, TamtSection, scores_only
from srnets_lib.book.verdicts.verdict import Measures, Statement, Verdict, pct

SHOWN = (SERIES["mlm"], SERIES["kd"], "IMP", "OMP")
ADVANTAGE = Statement("tamt-reduced-data", "'TAMT keeps its advantage over IMP with reduced fine-tuning data'",
                      "at each training-set size, TAMT's score > IMP's + GAIN", {"GAIN": GAIN})


class ReducedData(TamtSection):
    name, number, title = "tamt_data", "TAMT 4.2.6", "Fine-tuning with reduced data"
    figure_tasks = True
    reproduces = "TAMT figure 9"
    x_name = "fine-tuning examples"
    figure_title = "Downstream score vs fine-tuning examples at 70% sparsity (cf. TAMT figure 9)"
    opt_in = True

    def points(self, recipes, tasks, seeds, sparsities):
        """Per task of tamt.reduced_data.sizes, size and series: its masks at tamt.iteration_sparsity
        (TAMT-MLM's, TAMT-KD's and IMP's level of each mask seed, OMP's one) and the full model, each
        fine-tuned with its cell's seeds on `size` examples for its cell's epochs (ReducedData.cell)."""
        s, reduced = recipes.p.tamt.iteration_sparsity, recipes.p.tamt.reduced_data
        points = []
        for task in [t for t in tasks if t in reduced.sizes]:
            for size in reduced.sizes[task]:
                for name, masks in self.masks(recipes, seeds, s):
                    epochs, finetune_seeds = reduced.cell(task, size, name)
                    points += [Point(name, task, ft, size, recipes.reduced(task, mask, ft, level, size, epochs))
                               for ft in finetune_seeds for mask, level in masks]
        return points

    @staticmethod
    def masks(recipes, seeds, s) -> list[tuple[str, list]]:
        """(series, its (mask run, IMP level) per mask seed; the full model: no mask)."""
        return [(FULL, [(None, None)]),
                *[(SERIES[o], [(recipes.tamt(o, s, seed), None) for seed in seeds]) for o in ("mlm", "kd")],
                ("IMP", [(recipes.tamt_imp(seed), s) for seed in seeds]),
                ("OMP", [(recipes.oneshot("omp", s, seeds[0]), None)])]

    def figure(self, results):
        df = scores_only(results.frame)
        return [plots.sparsity_figure(df, self.figure_title, xlabel=self.x_name, synthetic=results.synthetic)]

    def table(self, results):
        return plots.table(scores_only(results.frame), index=("task", "series", "x"))

    def judge(self, results) -> list[Verdict]:
        verdicts = []
        for task in results.tasks:
            m = Measures(results.frame, task)
            for size in results.params.tamt.reduced_data.sizes.get(task, []):  # a size without runs: not measurable
                for series in SHOWN[:2]:
                    verdicts.append(_advantage(m, series, size))
        return verdicts


def _advantage(m: Measures, series: str, size: float) -> Verdict:
    subject = f"{m.task}, {series} on {size:g} examples"
    tamt, imp = m.mean(series, "id", size), m.mean("IMP", "id", size)
    if tamt is None or imp is None:
        return m.unmeasurable(ADVANTAGE, subject)
    margin = tamt - imp - GAIN
    return m.verdict(ADVANTAGE, subject, margin > 0, margin, values={"tamt": tamt, "imp": imp},
                     measured=f"{series} {pct(tamt)}, IMP {pct(imp)}")


SECTION = ReducedData()
