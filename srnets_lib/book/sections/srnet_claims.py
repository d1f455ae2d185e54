"""The claims of Part I that several sections judge (sections 4.2, 4.3, C.1, C.5): the full models'
(standard fine-tuning exploits the bias; PoE improves OOD) and a sparse and robust subnetwork's
against a full model (claims.py: the Claim they are, and the thresholds)."""

from __future__ import annotations

from srnets_lib.book.sections.claims import EXPLOITED, GAIN, LEARNED, RETAINED, Claim, reference
from srnets_lib.book.sections.series import POE, STD
from srnets_lib.book.verdicts.verdict import Measures, Statement, Verdict, pct


BIAS = Statement("bias-exploited", "'standard fine-tuning exploits the dataset bias'",
                 "std full model: ID - OOD > EXPLOITED", {"EXPLOITED": EXPLOITED},
                 words="the std full model's ID score above its OOD score by more than {EXPLOITED}")


POE_IMPROVES = Statement("poe-improves-ood", "the paper's 'PoE improves OOD'",
                "PoE full model: ID >= LEARNED x std's and OOD > std's OOD + GAIN", {"LEARNED": LEARNED, "GAIN": GAIN},
                words="the PoE full model keeps at least {LEARNED} of the std model's ID score and beats its OOD "
                      "score by more than {GAIN}")


class FullModels(Claim):
    """Sections 4.2 (figures 2, 3) and C.5: the std model's ID-OOD gap is the dataset bias; the
    PoE full model improves OOD over it, unless it did not learn the task."""

    def reads(self):
        return STD, POE

    def judge(self, df, task):
        m = Measures(df, task)
        std_id, std_ood = m.mean(STD), m.mean(STD, "ood")
        if None in (std_id, std_ood):
            return [m.unmeasurable(s, task, "no finished full models") for s in (BIAS, POE_IMPROVES)]
        gap = std_id - std_ood
        verdicts = [m.verdict(BIAS, task, gap > EXPLOITED, gap - EXPLOITED, values={"std id": std_id, "std ood": std_ood},
                              measured=f"std full model ID {pct(std_id)} vs OOD {pct(std_ood)} ({m.ood_name}): "
                                       f"gap {100 * gap:+.1f} points")]
        poe_id, poe_ood = m.mean(POE), m.mean(POE, "ood")
        if None in (poe_id, poe_ood):
            return verdicts + [m.unmeasurable(POE_IMPROVES, task)]
        values = {"std id": std_id, "std ood": std_ood, "poe id": poe_id, "poe ood": poe_ood}
        measured = f"PoE full model: ID {pct(poe_id)}, OOD {pct(poe_ood)}"
        parts = {"PoE learned": poe_id - LEARNED * std_id, "OOD gained": poe_ood - (std_ood + GAIN)}
        notes = () if poe_id >= LEARNED * std_id else (
            f"The PoE model did not learn the task (ID below {LEARNED:.0%} of the std model's), so its OOD score is "
            "that of a near-constant predictor.",)
        return verdicts + [m.verdict(POE_IMPROVES, task, min(parts.values()) > 0, parts, values=values,
                                     measured=measured, notes=notes)]


SRNET = Statement("srnet", "a sparse *and* robust subnetwork",
                  "ID >= RETAINED x the full model's and OOD > its OOD + GAIN", {"RETAINED": RETAINED, "GAIN": GAIN},
                  words="the subnetwork keeps at least {RETAINED} of the full model's ID score and beats its OOD "
                        "score by more than {GAIN}")


class SubnetworkVsFull(Claim):
    """Sections 4.2, 4.3, C.1, C.5: a subnetwork series keeps the full model's ID and gains OOD
    (an SRNet) at each sparsity of `xs`. A reference that did not learn the task is replaced by
    the std full model."""

    per_sparsity = True

    def __init__(self, series: str, reference: str = STD, xs=(0.5, 0.7), names: dict | None = None):
        """`names`: how the verdict's text names a reference series (C.5: "full model (std)")."""
        self.series, self.reference, self.xs, self.names = series, reference, tuple(xs), dict(names or {})

    def reads(self):
        return self.series, self.reference, STD

    def judge(self, df, task):
        return [self._at(Measures(df, task), x) for x in self.xs]

    def _at(self, m: Measures, x: float) -> Verdict:
        name, ref_id, ref_ood, notes = reference(m, self.reference, self.series)
        subject = f"{m.task}, {self.series} at sparsity {x}"
        sub_id, sub_ood = m.mean(self.series, "id", x), m.mean(self.series, "ood", x)
        if None in (ref_id, ref_ood, sub_id, sub_ood):
            return m.unmeasurable(SRNET, subject, notes=notes)
        retained = sub_id / ref_id if ref_id else float("nan")
        gained = sub_ood - ref_ood
        margin = {"ID kept": sub_id - RETAINED * ref_id, "OOD gained": gained - GAIN}  # both in points of the score
        return m.verdict(SRNET, subject, retained >= RETAINED and gained > GAIN, margin, notes=notes,
                         values={"id": sub_id, "ood": sub_ood, "reference id": ref_id, "reference ood": ref_ood},
                         measured=f"ID {pct(sub_id)} ({100 * retained:.1f}% of {self.names.get(name, name)}), OOD {pct(sub_ood)} "
                                  f"({100 * gained:+.1f} points)")
