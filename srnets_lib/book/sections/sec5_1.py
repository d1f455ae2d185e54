"""Section 5.1 (figure 7): when to start searching: mask training with PoE from the weights of
section 4.2's std fine-tuning run after t steps (the authors' mask_on_checkpoints scripts)."""

from __future__ import annotations

from srnets_lib.book import plots
from srnets_lib.book.sections.base import Section
from srnets_lib.book.sections.point import Point
from srnets_lib.book.sections.claims import EARLY, Claim
from srnets_lib.book.verdicts.verdict import Measures, Statement, Verdict, pct
from srnets_lib import methods

EARLY_START = Statement("early-start", "'competitive after ~55%'",
                        "ID >= EARLY[0] x 'ft to end''s and OOD >= its OOD - EARLY[1]",
                        {"EARLY[0]": EARLY[0], "EARLY[1]": EARLY[1]},
                        words="starting after about 55% of fine-tuning keeps at least {EARLY[0]} of the ID score of "
                              "starting at the end, with an OOD score at most {EARLY[1]} below it")
PT_WORSE = Statement("pt-start-worse", "'worse than from the end'", "ID and OOD below 'ft to end''s",
                     words="starting from the pre-trained model gives a lower ID score and a lower OOD score than "
                           "starting at the end of fine-tuning")
END = "ft to end"


class EarlyStart(Claim):
    """Mask training started after ~55% of fine-tuning is competitive with starting at the end
    (the checkpoint closest to `fraction` of it), and starting from the pre-trained model
    ("ft step=0") is worse than from the end."""

    def __init__(self, fraction: float = 0.55):
        self.fraction = fraction

    def reads(self):
        return END, "ft step=0"

    def judge(self, df, task):
        return [self._checkpoint(Measures(df, task)), self._pretrained(Measures(df, task))]

    def _checkpoint(self, m: Measures) -> Verdict:
        ends = m.values(END, "x")
        rows = m.rows[m.rows.series.str.startswith("ft step=") & (m.rows.x > 0)]
        steps = dict(zip(rows.x, rows.series))
        if ends.empty or not steps:
            return m.unmeasurable(EARLY_START, m.task, "runs missing" if ends.empty else "no intermediate checkpoint")
        end = float(ends.iloc[0])
        at = min(sorted(steps), key=lambda x: abs(x - self.fraction * end))
        end_id, end_ood = m.mean(END), m.mean(END, "ood")
        mid_id, mid_ood = m.mean(steps[at]), m.mean(steps[at], "ood")
        if None in (end_id, end_ood, mid_id, mid_ood):
            return m.unmeasurable(EARLY_START, m.task)
        holds = mid_id >= EARLY[0] * end_id and mid_ood >= end_ood - EARLY[1]
        return m.verdict(EARLY_START, m.task, holds, {"ID": mid_id - EARLY[0] * end_id, "OOD": mid_ood - (end_ood - EARLY[1])},
                         values={"step": at, "id": mid_id, "ood": mid_ood, "end id": end_id, "end ood": end_ood},
                         measured=f"from step {at:g} ({100 * at / end:.1f}% of fine-tuning) ID {pct(mid_id)}, OOD "
                                  f"{pct(mid_ood)}; from the end ID {pct(end_id)}, OOD {pct(end_ood)}")

    @staticmethod
    def _pretrained(m: Measures) -> Verdict:
        end_id, end_ood = m.mean(END), m.mean(END, "ood")
        zero_id, zero_ood = m.mean("ft step=0"), m.mean("ft step=0", "ood")
        if None in (end_id, end_ood, zero_id, zero_ood):
            return m.unmeasurable(PT_WORSE, m.task)
        return m.verdict(PT_WORSE, m.task, zero_id < end_id and zero_ood < end_ood,
                         {"ID": end_id - zero_id, "OOD": end_ood - zero_ood},
                         values={"id": zero_id, "ood": zero_ood, "end id": end_id, "end ood": end_ood},
                         measured=f"From the pre-trained model: ID {pct(zero_id)}, OOD {pct(zero_ood)}")


class WhenToStart(Section):
    """t = 0 is section 4.4's PoE mask on theta_pt and "ft to end" is section 4.2's (the same runs,
    asked to score OOD at every evaluation for the curves). x = fine-tuning steps."""

    name, number, title = "sec5_1", "5.1", "When to start searching: mask training from fine-tuning checkpoints"
    reproduces = "figure 7"
    x_name = "fine-tuning steps"  # where mask training starts
    figure_title = "Mask-training curves from fine-tuning checkpoints (cf. paper figure 7)"
    claims = (EarlyStart(),)

    def points(self, recipes, tasks, seeds, sparsities):
        points = []
        curves = recipes.p.execution.request(ood_every=True)  # figure 7's curves read OOD at every evaluation
        for task in tasks:
            s = recipes.p.sections.sec5_1.sparsity_of(task)
            for seed in seeds:
                end = methods.planned_schedule(recipes.full(task, "std", seed)).steps
                points.append(Point("ft step=0", task, seed, 0, recipes.prune_pt(task, "mask", "poe", s, seed),
                                    request=curves))
                for step in recipes.p.sections.sec5_1.steps:
                    if step >= end:
                        raise ValueError(f"sections.sec5_1.steps: step {step} is not before the end of the std "
                                         f"fine-tuning run of {task} ({end} steps)")
                    points.append(Point(f"ft step={step}", task, seed, step, recipes.prune_ft(
                        task, "mask", "poe", s, seed, init_step=step), request=curves))
                points.append(Point(END, task, seed, end, recipes.prune_ft(task, "mask", "poe", s, seed),
                                    request=curves))
        return points

    def figure(self, results):
        return [plots.curve_figure(results.curves(), self.figure_title, synthetic=results.synthetic)]


SECTION = WhenToStart()
