"""Verdicts are computed from the numbers: each claim's decision, its margin, what is not
measurable, and a collapsed full model is never called robust nor used as the reference."""

import re

import pandas as pd
import pytest

from srnets_lib.book import columns
from srnets_lib.book.sections.appc1 import ConfregTradeoff, OtherLosses
from srnets_lib.book.sections.srnet_claims import FullModels, SubnetworkVsFull
from srnets_lib.book.sections.sec4_4 import CompetitiveWithoutFinetuning
from srnets_lib.book.sections.sec4_5 import OODUpperBound
from srnets_lib.book.sections.sec5_1 import EarlyStart
from srnets_lib.book.sections.sec5_2 import GradualVsFixed
from srnets_lib.book.verdicts import verdict_text


def render(verdicts) -> str:
    """The page's markdown without the outcome's coloured mark (HTML)."""
    return re.sub(r"<span [^>]*>[^<]*</span> ", "", verdict_text.render(verdicts))


def rows(task="nli", seeds=(1,), **series):
    """{series: [(x, id, ood), ...]} -> a frame like sections.gather.frame."""
    return pd.DataFrame([{"task": task, "series": name, "seed": seed, "x": x, "id": i, "ood:hans": o,
                          "reference": name.startswith("full"), "group": ""}
                         for name, points in series.items() for x, i, o in points for seed in seeds])


def full(std, poe, **more):
    return rows(**{"full bert (std)": [(0, *std)], "full bert (poe)": [(0, *poe)]}, **more)


def test_poe_that_improves_ood_and_keeps_id_is_confirmed():
    bias, poe = FullModels().evaluate(full((0.90, 0.50), (0.88, 0.60)))
    assert (bias.claim, bias.holds, bias.margin) == ("bias-exploited", True, pytest.approx(0.40 - 0.05))
    assert (poe.claim, poe.holds, poe.margin, poe.seeds) == ("poe-improves-ood", True, pytest.approx(0.09), 1)
    assert poe.values == {"std id": 0.90, "std ood": 0.50, "poe id": 0.88, "poe ood": 0.60}
    assert poe.thresholds == {"LEARNED": 0.8, "GAIN": 0.01}
    text = render([bias, poe])
    assert "gap +40.0 points" in text and text.count("\n") == 0  # one task: one line
    assert "'PoE improves OOD' is **confirmed** here" in text


def test_poe_that_did_not_learn_the_task_is_not_called_robust():
    _, poe = FullModels().evaluate(full((0.93, 0.47), (0.43, 0.53)))
    assert poe.holds is False and poe.margin == pytest.approx(0.43 - 0.8 * 0.93)  # decided by ID, not OOD
    assert "did not learn the task" in poe.notes[0]
    text = render([poe])
    assert ("**not confirmed** here (margin -31.4 points over its thresholds; standard error unknown: no stored "
            "predictions behind it, and one seed; its parts PoE learned -31.4 points, OOD gained +5.0 points; mean of "
            "1 seed). The PoE model did not learn") in text


def test_subnetwork_must_keep_95_percent_of_id_and_gain_ood():
    df = full((0.90, 0.50), (0.88, 0.60), **{"mask (poe)": [(0.5, 0.87, 0.58), (0.7, 0.80, 0.60)]})
    kept, lost = SubnetworkVsFull("mask (poe)").evaluate(df)
    assert kept.holds is True and kept.margin == pytest.approx(0.87 - 0.95 * 0.90)  # ID is the closer condition
    assert lost.holds is False and lost.margin == pytest.approx(0.80 - 0.95 * 0.90)
    assert kept.values["reference id"] == 0.90 and kept.subject == "nli, mask (poe) at sparsity 0.5"
    assert "ID 87.0 (96.7% of full bert (std)), OOD 58.0 (+8.0 points)" in render([kept])
    just_under = full((0.90, 0.50), (0.88, 0.60), **{"mask (poe)": [(0.5, 0.90, 0.505)]})
    assert SubnetworkVsFull("mask (poe)", xs=(0.5,)).evaluate(just_under)[0].holds is False  # half a point is not "more than 1"


def test_a_claim_holds_only_when_it_clears_its_thresholds_by_the_margin():
    """One pass rule: the mean must clear each threshold by at least 1 point. 95.6% retention with a
    large OOD gain clears the 95% threshold (85.5) by 0.5 points only: not confirmed, and said why."""
    df = full((0.90, 0.50), (0.88, 0.60), **{"mask (poe)": [(0.5, 0.86, 0.60)]})
    thin, = SubnetworkVsFull("mask (poe)", xs=(0.5,)).evaluate(df)
    assert thin.holds is False and thin.thin and thin.margin == pytest.approx(0.86 - 0.95 * 0.90)
    assert "(margin +0.5 points over its thresholds, under the 1-point margin the rule asks; standard error" in render([thin])


def test_a_verdict_says_how_many_seeds_clear_the_rule_alone():
    seeds = pd.concat([full((0.90, 0.50), (0.88, 0.60)).assign(seed=s) for s in (1, 2)])
    sub = pd.DataFrame([{"task": "nli", "series": "mask (poe)", "seed": s, "x": 0.5, "id": i, "ood:hans": 0.6,
                         "reference": False, "group": ""} for s, i in ((1, 0.89), (2, 0.85))])
    verdict, = SubnetworkVsFull("mask (poe)", xs=(0.5,)).evaluate(pd.concat([seeds, sub]))
    assert verdict.holds is True and verdict.margin == pytest.approx(0.87 - 0.95 * 0.90)  # the mean clears it
    assert verdict.seed_margins == pytest.approx((0.89 - 0.95 * 0.90, 0.85 - 0.95 * 0.90)) and verdict.seeds_clearing == 1
    assert "mean of 2 seeds; 1 of 2 seeds clear it alone (+3.5 points, -0.5 points)" in render([verdict])
    # the seeds' margins differ by 4 points: a standard error of 2.0 of the mean's +1.5, so within noise
    assert "standard error 2.0 points, from the 2 seeds" in render([verdict]) and verdict.outcome == "within noise"


def test_subnetworks_are_compared_with_the_std_model_when_the_poe_model_collapsed():
    df = full((0.90, 0.50), (0.43, 0.53), **{"mask (poe) + poe ft": [(0.5, 0.88, 0.56)]})
    verdict, = SubnetworkVsFull("mask (poe) + poe ft", reference="full bert (poe)", xs=(0.5,)).evaluate(df)
    assert verdict.holds is True and verdict.values["reference id"] == 0.90
    assert "full bert (poe) did not learn the task (ID 43.0" in verdict.notes[0]
    assert "(97.8% of full bert (std)), OOD 56.0 (+6.0 points)" in render([verdict])


def test_missing_runs_are_not_measurable_never_dropped():
    df = full((0.90, 0.50), (0.88, 0.60), **{"mask (poe)": [(0.5, 0.87, 0.58)]})
    present, missing = SubnetworkVsFull("mask (poe)").evaluate(df)
    assert present.holds is True
    assert (missing.holds, missing.margin, missing.reason, missing.seeds) == (None, None, "runs missing", 1)
    assert render([missing]) == "- nli, mask (poe) at sparsity 0.7: not measurable (runs missing)."
    empty = pd.DataFrame(columns=columns.COLUMNS)  # nothing gathered yet: every task still gets its verdicts
    claims = [FullModels(), SubnetworkVsFull("s"), CompetitiveWithoutFinetuning(), OODUpperBound(), EarlyStart(),
              GradualVsFixed({"nli": 3, "paraphrase": 5}), ConfregTradeoff()]
    verdicts = [v for claim in claims for v in claim.evaluate(empty, ["nli", "paraphrase"])]
    assert {v.task for v in verdicts} == {"nli", "paraphrase"} and all(v.holds is None for v in verdicts)
    assert render(FullModels().evaluate(empty, ["nli"])) == "- nli: not measurable (no finished full models)."


def test_gradual_vs_fixed_fails_where_neither_keeps_the_task_a_prerequisite_of_its_rule():
    """A prerequisite is a part of the rule: where neither subnetwork learned the task the rule fails
    by that part's margin (it is never set aside as not measurable)."""
    df = rows(**{"full bert (std)": [(0.0, 0.93, 0.47)], "fixed": [(3.0, 0.49, 0.53)],
                 "gradual 0.7->0.9": [(3.0, 0.54, 0.53)]})
    verdict, = GradualVsFixed({"nli": 3}).evaluate(df)
    assert verdict.holds is False and verdict.values["gradual id"] == 0.54
    assert verdict.margin == pytest.approx(0.54 - 0.8 * 0.93) and verdict.outcome == "not confirmed"
    assert "neither subnetwork keeps the task" in verdict.notes[0]
    df.loc[df.series == "gradual 0.7->0.9", "id"] = 0.85
    verdict, = GradualVsFixed({"nli": 3}).evaluate(df)
    assert verdict.holds is False and verdict.thin and verdict.margin == pytest.approx(0.0)  # OOD tied: no margin
    assert verdict.subject == "nli, 3 epochs"
    longer = pd.concat([df, rows(**{"fixed": [(5.0, 0.30, 0.53)], "gradual 0.7->0.9": [(5.0, 0.90, 0.60)]})])
    assert GradualVsFixed({"nli": 3}).evaluate(longer)[0].subject == "nli, 3 epochs"  # table 5's, not the longest


def test_gradual_vs_fixed_reads_within_noise_when_its_seeds_disagree():
    """No note of its own: the seeds' spread makes the verdict's outcome (verdict.py's rule)."""
    def frame(fixed_ids):
        return pd.concat([rows(**{"full bert (std)": [(0.0, 0.95, 0.7)]}),
                          rows(seeds=(1, 2), **{"gradual 0.7->0.9": [(5.0, 0.92, 0.97)]}),
                          pd.DataFrame([{"task": "nli", "series": "fixed", "seed": seed, "x": 5.0, "id": i,
                                         "ood:hans": 0.90, "reference": False, "group": ""}
                                        for seed, i in zip((1, 2), fixed_ids)])])
    noisy, = GradualVsFixed({"nli": 5}).evaluate(frame((0.90, 0.96)))  # fixed 93 +- 4.2, gradual 92 +- 0
    assert noisy.holds is False and not noisy.notes and noisy.seed_margins == pytest.approx((0.02, -0.04))
    assert noisy.outcome == "within noise"  # margin -1.0, standard error 3.0 from the seeds
    clear, = GradualVsFixed({"nli": 5}).evaluate(frame((0.85, 0.87)))  # fixed 86 +- 1: behind by 6 / 7 points
    assert clear.holds is True and clear.margin == pytest.approx(0.06) and clear.outcome == "confirmed"


def test_section_4_4_compares_each_pt_mask_with_the_full_model_of_its_loss():
    df = rows(**{"full bert (std)": [(0, 0.90, 0.50)], "full bert (poe)": [(0, 0.88, 0.62)],
                 "mask train (std), pt": [(0.2, 0.85, 0.5), (0.5, 0.83, 0.5)],
                 "mask train (poe), pt": [(0.2, 0.85, 0.61), (0.5, 0.78, 0.61)]})
    std, poe = CompetitiveWithoutFinetuning().evaluate(df)
    assert std.holds is True and std.margin == pytest.approx(0.83 - 0.9 * 0.90)
    assert poe.holds is False and poe.margin == pytest.approx(0.78 - 0.9 * 0.88)
    assert "0.5: ID 78.0 (88.6%)" in poe.measured and "full bert (poe): ID 88.0" in poe.measured


def test_section_4_5_needs_90_percent_ood_on_average():
    df = rows(**{"full bert (std)": [(0, 0.9, 0.5)], "bert-ft subnet": [(0.2, 0.9, 0.99), (0.5, 0.9, 0.95), (0.7, 0.9, 0.80)]})
    verdict, = OODUpperBound(("bert-ft subnet",)).evaluate(df)
    assert verdict.holds is True and verdict.margin == pytest.approx(0.9133 - 0.9, abs=1e-4)
    assert "(mean 91.3; full bert (std): 50.0): 'nearly 100% OOD' is **confirmed**" in render([verdict])


def test_section_5_1_compares_the_checkpoint_nearest_55_percent_with_the_end():
    df = rows(**{"ft step=0": [(0, 0.70, 0.50)], "ft step=20": [(20, 0.80, 0.60)], "ft step=50": [(50, 0.895, 0.595)],
                 "ft to end": [(100, 0.90, 0.60)]})
    early, pretrained = EarlyStart().evaluate(df)
    assert early.holds is True and early.values["step"] == 50 and early.margin == pytest.approx(0.895 - 0.98 * 0.90)
    assert pretrained.holds is True and pretrained.margin == pytest.approx(0.10)
    line = render([early, pretrained])
    assert "from step 50 (50.0% of fine-tuning)" in line and "after ~55%' is **confirmed**" in line
    assert "'worse than from the end' is **confirmed**" in line and line.count("- nli:") == 1
    without_end = df[df.series != "ft to end"]
    assert render(EarlyStart().evaluate(without_end)) == "- nli: not measurable (runs missing)."  # said once


def test_appendix_c1_confreg_keeps_more_id_but_gains_less_ood_than_poe():
    df = rows(**{"full bert (std)": [(0, 0.9, 0.5)], "mask train (poe)": [(0.5, 0.87, 0.62), (0.7, 0.87, 0.60)],
                 "mask train (reweight)": [(0.5, 0.87, 0.58), (0.7, 0.87, 0.57)],
                 "mask train (confreg)": [(0.5, 0.89, 0.55), (0.7, 0.88, 0.54)]})
    verdicts = [v for claim in OtherLosses.claims for v in claim.evaluate(df)]
    assert [v.holds for v in verdicts if v.claim == "srnet"] == [True] * 6
    tradeoff = verdicts[-1]
    assert tradeoff.claim == "confreg-tradeoff" and tradeoff.holds is True
    assert tradeoff.margin == pytest.approx(min(0.885 - 0.87, 0.61 - 0.545))


def test_render_heads_each_group_and_joins_a_subjects_verdicts():
    df = full((0.90, 0.50), (0.88, 0.60))
    verdicts = [v.__class__(**{**v.__dict__, "group": "BERT-large"}) for v in FullModels().evaluate(df)]
    text = render(verdicts)
    assert text.startswith("**BERT-large**\n\n- nli: std full model ID 90.0") and text.count("- nli:") == 1


def test_a_pages_summary_counts_its_cases_and_names_its_clearest_and_weakest():
    from srnets_lib.book.verdicts.verdict_text import summary

    df = full((0.90, 0.50), (0.88, 0.60), **{"mask (poe)": [(0.5, 0.87, 0.58), (0.7, 0.86, 0.60)]})
    verdicts = FullModels().evaluate(df) + SubnetworkVsFull("mask (poe)").evaluate(df)
    text = summary(verdicts, synthetic=True)
    assert text.startswith("**In short** (on synthetic data, not the paper's): of the 4 cases this page judges, "
                           "3 confirm the paper's claim, 1 is not confirmed (1 clearing the thresholds by less than "
                           "the rule's margin).")
    assert "The clearest: 'standard fine-tuning exploits the dataset bias' on nli (" in text
    assert "margin +35.0 points, confirmed)" in text
    assert text.endswith("The weakest: a sparse *and* robust subnetwork on nli, mask (poe) at sparsity 0.7 "
                         "(ID 86.0 (95.6% of full bert (std)), OOD 60.0 (+10.0 points); margin +0.5 points, not confirmed).")
    assert "none of the 2 cases" in summary(FullModels().evaluate(full((0.9, 0.5), (0.9, 0.6)), tasks=["qqp"]), synthetic=True)


def test_a_reference_scoring_zero_is_judged_without_dividing_by_it():
    """A full model that predicts one class scores a binary F1 of 0 (QQP's dev metric): 4.4's
    comparison states the share as n/a instead of failing the page."""
    df = rows(**{"full bert (std)": [(0, 0.0, 0.50)], "full bert (poe)": [(0, 0.0, 0.5)],
                 "mask train (std), pt": [(0.2, 0.1, 0.5), (0.5, 0.1, 0.5)],
                 "mask train (poe), pt": [(0.2, 0.1, 0.5), (0.5, 0.1, 0.5)]})
    std, poe = CompetitiveWithoutFinetuning().evaluate(df)
    assert "ID 10.0 (n/a), OOD 50.0" in std.measured


def test_tamt_fewer_iterations_reads_a_curve_never_one_borrowed_point():
    """The pace claim compares curves over pre-training iterations: with one iteration count (a
    run another page made, the opt-in page's own missing) it is not measurable, never 'not confirmed'."""
    from srnets_lib.book.sections.tamt import SERIES, runs_behind
    from srnets_lib.book.sections.tamt_iterations import fewer_iterations

    def frame(curves):
        return pd.DataFrame([{"task": "nli", "series": series, "seed": 1, "x": float(x), "id": score}
                             for series, curve in curves.items() for x, score in curve.items()])

    mlm = SERIES["mlm"]
    one = frame({"IMP": {48: 0.70}, mlm: {48: 0.65}})
    v = fewer_iterations(one, mlm, runs_behind(one))
    assert v.outcome == "not measurable" and "two iteration counts" in v.reason
    curve = frame({"IMP": {4: 0.60, 12: 0.70}, mlm: {4: 0.66, 8: 0.71, 12: 0.72}})
    v = fewer_iterations(curve, mlm, runs_behind(curve))
    assert v.holds and v.margin == pytest.approx(1 - 8 / 12) and v.unit == "share"
