"""Section 4.4 (figure 5): subnetworks without fine-tuning: mask training on theta_pt with no
weight trained; section 4.2's PoE masks for reference."""

from __future__ import annotations

from srnets_lib.book.sections.base import Section
from srnets_lib.book.sections.point import Point
from srnets_lib.book.sections.claims import COMPETITIVE, EARLY, Claim, reference
from srnets_lib.book.verdicts.verdict import Measures, Statement, Verdict, pct, share
from srnets_lib.book.sections.series import POE, STD, full, mask

COMPETITIVE_PT = Statement("competitive-without-ft", "'competitive under 50% sparsity'",
                           "at every sparsity: ID >= COMPETITIVE x the full model's and OOD >= its OOD - EARLY[1]",
                           {"COMPETITIVE": COMPETITIVE, "EARLY[1]": EARLY[1]},
                           words="at every sparsity up to 50%, the mask keeps at least {COMPETITIVE} of the full "
                                 "model's ID score, and its OOD score is at most {EARLY[1]} below the full model's")


class CompetitiveWithoutFinetuning(Claim):
    """Under 50% sparsity, masks trained on theta_pt with CE are competitive with the CE
    fine-tuned full model, and with PoE with the PoE one, at every sparsity in `xs`. A reference
    that did not learn the task is replaced by the std model."""

    def __init__(self, xs=(0.2, 0.5)):
        self.xs = tuple(xs)

    def reads(self):
        return STD, *(name for loss in ("std", "poe") for name in (mask(loss, ", pt"), full(loss)))

    def judge(self, df, task):
        return [self._loss(Measures(df, task), loss) for loss in ("std", "poe")]

    def _loss(self, m: Measures, loss: str) -> Verdict:
        series = mask(loss, ", pt")
        subject = f"{m.task}, {series}"
        name, ref_id, ref_ood, notes = reference(m, full(loss), series)
        scores = [(m.mean(series, "id", x), m.mean(series, "ood", x)) for x in self.xs]
        if None in (ref_id, ref_ood) or any(v is None for pair in scores for v in pair):
            return m.unmeasurable(COMPETITIVE_PT, subject, notes=notes)
        holds = all(i >= COMPETITIVE * ref_id and o >= ref_ood - EARLY[1] for i, o in scores)
        margin = {part: value for x, (i, o) in zip(self.xs, scores)
                  for part, value in ((f"ID at {x}", i - COMPETITIVE * ref_id), (f"OOD at {x}", o - (ref_ood - EARLY[1])))}
        shown = "; ".join(f"{x}: ID {pct(i)} ({share(i, ref_id)}), OOD {pct(o)}" for x, (i, o) in zip(self.xs, scores))
        values = {f"{kind} at {x}": v for x, pair in zip(self.xs, scores) for kind, v in zip(("id", "ood"), pair)}
        return m.verdict(COMPETITIVE_PT, subject, holds, margin, notes=notes,
                         values={**values, "reference id": ref_id, "reference ood": ref_ood},
                         measured=f"{shown}; {name}: ID {pct(ref_id)}, OOD {pct(ref_ood)}")


class WithoutFinetuning(Section):
    name, number, title = "sec4_4", "4.4", "Subnetworks without fine-tuning"
    reproduces = "figure 5"
    figure_title = "Mask training on the pre-trained model (cf. paper figure 5)"
    claims = (CompetitiveWithoutFinetuning(),)
    subset_series = (STD, POE, mask("std", ", pt"), mask("poe", ", pt"),
                     mask("poe"))
    structure_against = mask("poe")

    def subnetworks(self, recipes, task, seed, sparsities):
        return [Point(series, task, seed, s, config) for s in sparsities for series, config in (
            (mask("std", ", pt"), recipes.prune_pt(task, "mask", "std", s, seed)),
            (mask("poe", ", pt"), recipes.prune_pt(task, "mask", "poe", s, seed)),
            (mask("poe"), recipes.prune_ft(task, "mask", "poe", s, seed)))]


SECTION = WithoutFinetuning()
