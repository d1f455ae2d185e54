"""Section 4.5 (figure 6, appendix figure 2): sparse and unbiased subnetworks: mask training
(std loss) with ID+OOD training data, the upper bound of SRNets."""

from __future__ import annotations

from srnets_lib.book.sections.base import Section
from srnets_lib.book.sections.point import Point
from srnets_lib.book.sections.claims import NEARLY_ALL, Claim
from srnets_lib.book.verdicts.verdict import Measures, Statement, Verdict, pct
from srnets_lib.book.sections.series import STD

NEARLY_ALL_OOD = Statement("nearly-all-ood", "'nearly 100% OOD'", "mean OOD over the sparsities >= NEARLY_ALL",
                           {"NEARLY_ALL": NEARLY_ALL},
                           words="the mean OOD score over the sparsities is at least {NEARLY_ALL}")


class OODUpperBound(Claim):
    """With OOD training data, subnetworks at 20-70% sparsity reach nearly 100% OOD (mean over
    `xs` >= NEARLY_ALL), in all three paradigms."""

    def reads(self):
        return (*self.series, STD)

    def __init__(self, series=("bert-ft subnet", "bert-pt subnet", "bert-pt subnet + ft"), xs=(0.2, 0.5, 0.7)):
        self.series, self.xs = tuple(series), tuple(xs)

    def judge(self, df, task):
        return [self._series(Measures(df, task), name) for name in self.series]

    def _series(self, m: Measures, name: str) -> Verdict:
        scores = [m.mean(name, "ood", x) for x in self.xs]
        if None in scores:
            return m.unmeasurable(NEARLY_ALL_OOD, f"{m.task}, {name}")
        mean_ood, std_ood = sum(scores) / len(scores), m.mean(STD, "ood")
        return m.verdict(NEARLY_ALL_OOD, f"{m.task}, {name}", mean_ood >= NEARLY_ALL, mean_ood - NEARLY_ALL,
                         values={**{f"ood at {x}": v for x, v in zip(self.xs, scores)}, "mean ood": mean_ood},
                         measured=f"OOD {', '.join(pct(v) for v in scores)} at {', '.join(map(str, self.xs))} "
                                  f"(mean {pct(mean_ood)}; {STD}: {pct(std_ood)})")


class WithOODData(Section):
    """Wired as the authors' scripts (scripts/mask_train/mask_on_plm_ft/plm_std_ft/ood and
    scripts/mask_train/mask_on_plm_pt/ood): "bert-ft subnet" trains masks
    with ID+OOD data on the ID-only std model, "bert-pt subnet" on theta_pt; "+ ft" fine-tunes the
    bert-ft masks in isolation on ID data only (their ood/*/retrain)."""

    name, number, title = "sec4_5", "4.5", "Sparse and unbiased subnetworks (OOD training data)"
    reproduces = "figure 6"
    figure_title = "Subnetworks found with OOD training data (cf. paper figure 6)"
    claims = (OODUpperBound(),)
    full_models = ("std",)
    # beyond the paper: which members of the OOD set each paradigm's subnetworks still follow the cue on
    subset_series = (STD, "bert-ft subnet", "bert-pt subnet", "bert-pt subnet + ft")

    def subnetworks(self, recipes, task, seed, sparsities):
        points = []
        for s in sparsities:
            ft_subnet = recipes.prune_ft(task, "mask", "std", s, seed, ood=True)
            points += [Point("bert-ft subnet", task, seed, s, ft_subnet),
                       Point("bert-pt subnet", task, seed, s, recipes.prune_pt(task, "mask", "std", s, seed, ood=True)),
                       Point("bert-pt subnet + ft", task, seed, s, recipes.isolate(task, ft_subnet, "std", seed))]
        return points


SECTION = WithOODData()
