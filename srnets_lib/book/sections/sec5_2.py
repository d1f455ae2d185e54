"""Section 5.2 (figure 8, appendix table 5): SRNets at high sparsity: fixed 90% sparsity vs a
gradual (cubic) increase to it, at several mask-training lengths; table 5's ablation of the mask
initialisation and the schedule's start."""

from __future__ import annotations

from srnets_lib.book import plots
from srnets_lib.book.sections import claims
from srnets_lib.book.sections.base import Section
from srnets_lib.book.sections.point import Point
from srnets_lib.book.sections.claims import LEARNED, Claim
from srnets_lib.book.verdicts.verdict import Measures, Statement, pct
from srnets_lib.book.sections.series import STD

FINAL = 0.9  # figure 8 and table 5: subnetworks at 90% sparsity
GRADUAL = "gradual 0.7->0.9"
GRADUAL_BEATS_FIXED = Statement("gradual-beats-fixed", "'gradual beats fixed'",
                                "at table 5's epochs (its caption's: the cells the paper prints), one of them keeps "
                                "LEARNED x the full model's ID, gradual's ID > fixed's and its OOD >= fixed's",
                                {"LEARNED": LEARNED},
                                words="at table 5's epochs, one of the two keeps {LEARNED} of the full model's ID score "
                                      "(a prerequisite: it fails where neither learned the task), and gradual 0.7->0.9 "
                                      "beats fixed 0.9 on the ID score and is no worse on the OOD score")


class GradualVsFixed(Claim):
    """Gradual 0.7 -> 0.9 beats fixed 0.9 on ID and OOD at table 5's mask-training epochs per task
    (`epochs`: sections.sec5_2.table5_epochs, where the paper prints both: appendix table 5), so the
    scorecard sets like beside like. Whether the difference is within noise is the verdict's outcome
    (verdict.py), as for every claim."""

    def __init__(self, epochs: dict, reference: str = STD):
        self.epochs, self.reference = epochs, reference

    def reads(self):
        return "fixed", GRADUAL, self.reference

    def judge(self, df, task):
        m = Measures(df, task)
        longest = self.epochs[task]
        fixed = (m.mean("fixed", "id", longest), m.mean("fixed", "ood", longest))
        grad = (m.mean(GRADUAL, "id", longest), m.mean(GRADUAL, "ood", longest))
        if None in fixed + grad:
            return [m.unmeasurable(GRADUAL_BEATS_FIXED, task)]
        subject = f"{task}, {longest:g} epochs"
        values = {"fixed id": fixed[0], "fixed ood": fixed[1], "gradual id": grad[0], "gradual ood": grad[1]}
        measured = (f"fixed 0.9 ID {pct(fixed[0])} / OOD {pct(fixed[1])}; "
                    f"gradual 0.7->0.9 ID {pct(grad[0])} / OOD {pct(grad[1])}")
        ref_id = m.mean(self.reference)
        if ref_id is None:
            return [m.unmeasurable(GRADUAL_BEATS_FIXED, subject, "the full model's run is missing")]
        parts = {"learned": max(fixed[0], grad[0]) - LEARNED * ref_id, "ID": grad[0] - fixed[0],
                 "OOD": grad[1] - fixed[1]}
        notes = () if parts["learned"] >= 0 else (
            f"At 90% sparsity neither subnetwork keeps the task (ID below {LEARNED:.0%} of the {self.reference} "
            f"model's {pct(ref_id)}): the rule fails there.",)
        holds = parts["learned"] >= 0 and parts["ID"] > 0 and parts["OOD"] >= 0
        return [m.verdict(GRADUAL_BEATS_FIXED, subject, holds, parts, values=values,
                          measured=measured, notes=notes)]


class GradualSparsity(Section):
    name, number, title = "sec5_2", "5.2", "SRNets at high sparsity: gradual sparsity increase"
    reproduces = "figure 8 and appendix table 5"
    figure_title = "Fixed vs gradual sparsity at 0.9 (cf. paper figure 8)"
    paper_table = "table5"
    x_name = "mask-training epochs"
    full_models = ("std",)

    def subnetworks(self, recipes, task, seed, sparsities):
        """Figure 8 at sections.sec5_2.epochs; table 5's variants at sections.sec5_2.table5_epochs (each
        run once where the two meet)."""
        budgets, epochs = recipes.p.sections.sec5_2.epochs[task], recipes.p.sections.sec5_2.table5_epochs[task]

        def fixed(at, **fields):
            return recipes.prune_ft(task, "mask", "poe", FINAL, seed, epochs=at, **fields)

        points = []
        for at in budgets:
            points += [Point("fixed", task, seed, at, fixed(at)),
                       Point(GRADUAL, task, seed, at, recipes.gradual(task, 0.7, FINAL, seed, at))]
        points.append(Point("fixed, soft init", task, seed, epochs, fixed(epochs, mask_init="soft")))
        points += [Point(f"gradual {start}->0.9", task, seed, epochs, recipes.gradual(task, start, FINAL, seed, epochs))
                   for start in recipes.p.sections.sec5_2.table5_inits if start != 0.7 or epochs not in budgets]
        return points + ([Point("fixed", task, seed, epochs, fixed(epochs))] if epochs not in budgets else [])

    def judge(self, results):
        """The claim at table 5's epochs (sections.sec5_2.table5_epochs)."""
        return claims.judge(results, self.claims_for(results.params))

    def judged_at(self, results) -> str:
        """The verdict reads table 5's epochs (the caption's), not figure 8's other budget."""
        chosen = results.params.sections.sec5_2
        per = "; ".join(f"{t} at {chosen.table5_epochs[t]:g} epochs (the figure draws "
                        f"{' and '.join(f'{e:g}' for e in chosen.epochs[t])})" for t in results.tasks)
        return (f"**Where the verdict is judged:** at table 5's epochs, those of its caption, where the paper "
                f"prints both fixed and gradual: {per}. The figure's other budget is drawn, not judged.")

    def claims_for(self, params) -> tuple:
        return (GradualVsFixed(params.sections.sec5_2.table5_epochs),)

    def figure(self, results):
        """Figure 8: fixed and gradual 0.7 -> 0.9 against the mask-training epochs, with the std full model."""
        df = results.frame
        shown = df[df.series.isin(["fixed", GRADUAL]) | df.reference.astype(bool)]
        if shown.empty:
            return []
        return [plots.sparsity_figure(shown, self.figure_title, xlabel=self.x_name, synthetic=results.synthetic)]

    def table(self, results):
        """Table 5's ablation: every variant at the caption's epochs (sections.sec5_2.table5_epochs)."""
        df, epochs = results.frame, results.params.sections.sec5_2.table5_epochs
        at_caption = [bool(r) or x == epochs[t] for r, x, t in zip(df.reference, df.x, df.task)]
        return plots.table(df[at_caption], index=("task", "series"))


SECTION = GradualSparsity()
