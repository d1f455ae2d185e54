"""Verdict sentences are computed from the numbers, and a collapsed model is never called robust."""

import pandas as pd

from srnets_lib import report


def full(std, poe):
    rows = [("full bert (std)", *std), ("full bert (poe)", *poe)]
    return pd.DataFrame([{"task": "nli", "series": s, "seed": 1, "x": 0.0, "id": i, "ood:hans": o}
                         for s, i, o in rows])


def test_poe_that_improves_ood_and_keeps_id_is_confirmed():
    text = report.full_models(full((0.90, 0.50), (0.88, 0.60)))
    assert "gap +40.0 points" in text and "**confirmed**" in text


def test_poe_that_did_not_learn_the_task_is_not_called_robust():
    text = report.full_models(full((0.93, 0.47), (0.43, 0.53)))
    assert "not confirmed: the PoE model did not learn the task" in text


def test_subnetwork_must_keep_95_percent_of_id_and_gain_ood():
    df = pd.concat([full((0.90, 0.50), (0.88, 0.60)), pd.DataFrame([
        {"task": "nli", "series": "mask (poe)", "seed": 1, "x": 0.5, "id": 0.87, "ood:hans": 0.58},
        {"task": "nli", "series": "mask (poe)", "seed": 1, "x": 0.7, "id": 0.80, "ood:hans": 0.60}])])
    text = report.subnetworks_vs_full(df, "mask (poe)")
    assert "sparsity 0.5: ID 87.0 (97% of full bert (std)), OOD 58.0 (+8.0 points)" in text
    lines = text.splitlines()
    assert "**confirmed**" in lines[0] and "**not confirmed**" in lines[1]


def test_subnetworks_are_compared_with_the_std_model_when_the_poe_model_collapsed():
    df = pd.concat([full((0.90, 0.50), (0.43, 0.53)), pd.DataFrame([
        {"task": "nli", "series": "mask (poe) + poe ft", "seed": 1, "x": 0.5, "id": 0.88, "ood:hans": 0.56}])])
    text = report.subnetworks_vs_full(df, "mask (poe) + poe ft", reference="full bert (poe)", xs=(0.5,))
    first, second = text.splitlines()
    assert "full bert (poe) did not learn the task (ID 43.0" in first
    assert "(98% of full bert (std)), OOD 56.0 (+6.0 points)" in second and "**confirmed**" in second


def test_gradual_vs_fixed_is_not_measurable_when_neither_keeps_the_task():
    df = pd.DataFrame([
        {"task": "nli", "series": "full bert (std)", "seed": 1, "x": 0.0, "reference": True, "id": 0.93, "ood:hans": 0.47},
        {"task": "nli", "series": "fixed", "seed": 1, "x": 3.0, "reference": False, "id": 0.49, "ood:hans": 0.53},
        {"task": "nli", "series": "gradual 0.7->0.9", "seed": 1, "x": 3.0, "reference": False, "id": 0.54, "ood:hans": 0.53}])
    assert "**not measurable**" in report.gradual_vs_fixed(df)
    df.loc[df.series == "gradual 0.7->0.9", "id"] = 0.85
    assert "**confirmed**" in report.gradual_vs_fixed(df)
    assert "noise" not in report.gradual_vs_fixed(df)  # one seed: no spread to compare with


def test_gradual_vs_fixed_says_when_its_margin_is_within_the_seeds_spread():
    def frame(fixed_ids):
        return pd.DataFrame(
            [{"task": "nli", "series": "full bert (std)", "seed": 1, "x": 0.0, "id": 0.95, "ood:hans": 0.7}]
            + [{"task": "nli", "series": "fixed", "seed": seed, "x": 5.0, "id": i, "ood:hans": 0.90}
               for seed, i in zip((1, 2), fixed_ids)]
            + [{"task": "nli", "series": "gradual 0.7->0.9", "seed": seed, "x": 5.0, "id": 0.92, "ood:hans": 0.97}
               for seed in (1, 2)])
    noisy = report.gradual_vs_fixed(frame((0.90, 0.96)))  # fixed 93 +- 3, gradual 92 +- 0
    assert "**not confirmed**" in noisy and "margin (1.0 points) is within the seeds' spread (up to ±3.0)" in noisy
    clear = report.gradual_vs_fixed(frame((0.85, 0.87)))  # fixed 86 +- 1: ahead by 6 / 7 points
    assert "**confirmed**" in clear and "noise" not in clear


def rows(task="nli", **series):
    """{series: [(x, id, ood), ...]} -> a frame like recipes.frame."""
    return pd.DataFrame([{"task": task, "series": name, "seed": 1, "x": x, "id": i, "ood:hans": o,
                          "reference": name.startswith("full")}
                         for name, points in series.items() for x, i, o in points])


def test_section_4_4_compares_each_pt_mask_with_the_full_model_of_its_loss():
    df = rows(**{"full bert (std)": [(0, 0.90, 0.50)], "full bert (poe)": [(0, 0.88, 0.62)],
                 "mask train (std), pt": [(0.2, 0.85, 0.5), (0.5, 0.82, 0.5)],
                 "mask train (poe), pt": [(0.2, 0.85, 0.61), (0.5, 0.78, 0.61)]})
    first, second = report.competitive_without_finetuning(df).splitlines()
    assert "0.5: ID 82.0 (91%)" in first and "**confirmed**" in first
    assert "0.5: ID 78.0 (89%)" in second and "full bert (poe): ID 88.0" in second and "**not confirmed**" in second


def test_section_4_5_needs_90_percent_ood_on_average():
    df = rows(**{"full bert (std)": [(0, 0.9, 0.5)], "bert-ft subnet": [(0.2, 0.9, 0.99), (0.5, 0.9, 0.95), (0.7, 0.9, 0.80)]})
    assert "(mean 91.3; full bert (std): 50.0): 'nearly 100% OOD' is **confirmed**" in report.ood_upper_bound(df, ("bert-ft subnet",))


def test_section_5_1_compares_the_checkpoint_nearest_55_percent_with_the_end():
    df = rows(**{"ft step=0": [(0, 0.70, 0.50)], "ft step=20": [(20, 0.80, 0.60)], "ft step=50": [(50, 0.89, 0.59)],
                 "ft to end": [(100, 0.90, 0.60)]})
    text = report.early_start(df)
    assert "from step 50 (50% of fine-tuning)" in text and "after ~55%' is **confirmed**" in text
    assert "'worse than from the end' is **confirmed**" in text


def test_appendix_c1_confreg_keeps_more_id_but_gains_less_ood_than_poe():
    df = rows(**{"full bert (std)": [(0, 0.9, 0.5)], "mask train (poe)": [(0.5, 0.87, 0.62), (0.7, 0.86, 0.60)],
                 "mask train (reweight)": [(0.5, 0.86, 0.58), (0.7, 0.86, 0.57)],
                 "mask train (confreg)": [(0.5, 0.89, 0.55), (0.7, 0.88, 0.54)]})
    text = report.other_losses(df)
    assert "'confreg keeps more ID but gains less OOD' is **confirmed**" in text
    assert text.count("a sparse *and* robust subnetwork is **confirmed**") == 6
