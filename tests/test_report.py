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
