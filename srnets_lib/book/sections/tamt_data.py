"""TAMT figure 9 (opt-in: make book-full): 70% subnetworks fine-tuned on fewer and fewer training
examples of each task, TAMT against IMP, OMP and the full model."""

from __future__ import annotations

from srnets_lib.book import plots
from srnets_lib.book.sections.base import Point
from srnets_lib.book.sections.claims import GAIN
from srnets_lib.book.sections.tamt import FULL, SERIES, TamtSection, scores_only
from srnets_lib.book.sections.verdict import Measures, Statement, Verdict, pct

SHOWN = (SERIES["mlm"], SERIES["kd"], "IMP", "OMP")
ADVANTAGE = Statement("tamt-reduced-data", "'TAMT keeps its advantage over IMP with reduced fine-tuning data'",
                      "at each training-set size, TAMT's score > IMP's + GAIN", {"GAIN": GAIN})


class ReducedData(TamtSection):
    name, number, title = "tamt_data", "TAMT 4.2.6", "Fine-tuning with reduced data"
    figure_tasks = True
    reproduces = "TAMT figure 9"
    figure_title = "Downstream score vs fine-tuning examples at 70% sparsity (cf. TAMT figure 9)"
    opt_in = True

    def points(self, recipes, tasks, seeds, sparsities):
        """Per task of tamt.data_sizes, size, mask and fine-tuning seed: TAMT-MLM, TAMT-KD, IMP and
        OMP's 70% masks and the full model fine-tuned on the first `size` examples."""
        tamt, s = recipes.p.tamt, recipes.p.tamt.iteration_sparsity
        points = []
        for task in [t for t in tasks if t in tamt.data_sizes]:
            for size in tamt.data_sizes[task]:
                for ft in tamt.finetune_seeds:
                    points.append(Point(FULL, task, ft, size, recipes.transfer(task, None, ft, train_size=size)))
                    for seed in seeds:
                        masks = [(SERIES[o], recipes.tamt(o, s, seed), None) for o in ("mlm", "kd")]
                        masks.append(("IMP", recipes.tamt_imp(seed), s))  # its level at s
                        masks += [("OMP", recipes.oneshot("omp", s, seeds[0]), None)] if seed == seeds[0] else []
                        points += [Point(name, task, ft, size, recipes.transfer(task, mask, ft, level, train_size=size))
                                   for name, mask, level in masks]
        return points

    def figure(self, page):
        df = scores_only(page.frame)
        return [plots.sparsity_figure(df, self.figure_title, xlabel="fine-tuning examples", synthetic=page.synthetic)]

    def table(self, page):
        return plots.table(scores_only(page.frame), index=("task", "series", "x"))

    def judge(self, page) -> list[Verdict]:
        verdicts = []
        for task in page.tasks:
            m = Measures(page.frame, task)
            for size in page.params.tamt.data_sizes.get(task, []):  # a size without runs: not measurable
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
