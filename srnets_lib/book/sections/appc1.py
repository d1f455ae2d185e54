"""Appendix C.1 (appendix figure 1): example reweighting and confidence regularisation (teacher:
the std full model) as the loss of mask training on the std fine-tuned model, beside std and PoE."""

from __future__ import annotations

from srnets_lib.book.sections.base import Section
from srnets_lib.book.sections.point import Point
from srnets_lib.book.sections.claims import Claim
from srnets_lib.book.sections.srnet_claims import SubnetworkVsFull
from srnets_lib.book.verdicts.verdict import Measures, Statement, pct
from srnets_lib.book.sections.series import POE, STD, full, mask

LOSSES = ("std", "poe", "reweight", "confreg")
CONFREG_TRADEOFF = Statement("confreg-tradeoff", "'confreg keeps more ID but gains less OOD'",
                             "over the sparsities, confreg's mean ID >= poe's and its mean OOD <= poe's",
                             words="over the sparsities, mask training with confreg keeps a mean ID score at least "
                                   "PoE's, and a mean OOD score at most PoE's")


class ConfregTradeoff(Claim):
    """Confidence regularisation keeps more ID but gains less OOD than PoE (means over `xs`)."""

    def __init__(self, xs=(0.5, 0.7)):
        self.xs = tuple(xs)

    def reads(self):
        return mask("poe"), mask("confreg")

    def judge(self, df, task):
        m = Measures(df, task)

        def mean(series, column):
            values = [m.mean(series, column, x) for x in self.xs]
            return None if None in values else sum(values) / len(values)

        poe = (mean(mask("poe"), "id"), mean(mask("poe"), "ood"))
        conf = (mean(mask("confreg"), "id"), mean(mask("confreg"), "ood"))
        subject = f"{task}, confreg vs poe"
        if None in poe + conf:
            return [m.unmeasurable(CONFREG_TRADEOFF, subject)]
        return [m.verdict(CONFREG_TRADEOFF, subject, conf[0] >= poe[0] and conf[1] <= poe[1],
                          {"ID": conf[0] - poe[0], "OOD": poe[1] - conf[1]},
                          values={"confreg id": conf[0], "confreg ood": conf[1], "poe id": poe[0], "poe ood": poe[1]},
                          measured=f"confreg ID {pct(conf[0])} / OOD {pct(conf[1])}, poe ID {pct(poe[0])} / OOD "
                                   f"{pct(poe[1])}")]


class OtherLosses(Section):
    name, number, title = "appc1", "C.1", "Other debiasing losses in pruning"
    reproduces = "appendix figure 1"
    figure_title = "Debiasing losses as pruning losses (cf. appendix figure 1)"
    claims = (*(SubnetworkVsFull(mask(loss)) for loss in ("poe", "reweight", "confreg")),
              ConfregTradeoff())

    full_models = LOSSES
    # beyond the paper: which members of the OOD set each loss moves off the cue, as a full model
    # and as the loss of mask training on the std model
    subset_series = (STD, full("reweight"), mask("reweight"), full("confreg"),
                     mask("confreg"), POE, mask("poe"))

    def subnetworks(self, recipes, task, seed, sparsities):
        return [Point(mask(loss), task, seed, s, recipes.prune_ft(task, "mask", loss, s, seed))
                for s in sparsities for loss in LOSSES]


SECTION = OtherLosses()
