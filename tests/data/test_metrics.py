"""Appendix B.1 metrics and TAMT's downstream ones (MCC, Pearson, Spearman, acc_and_f1, SQuAD EM
and F1), cross-checked against scikit-learn / scipy or hand values and loaded through evaluate offline."""

import evaluate
import numpy as np
import pytest
from sklearn.metrics import accuracy_score, f1_score

from srnets_lib.metrics import accuracy, f1, metric_path, weighted_f1


def test_against_sklearn():
    rng = np.random.default_rng(0)
    refs, preds = rng.integers(3, size=200), rng.integers(3, size=200)
    assert accuracy(preds, refs) == accuracy_score(refs, preds)
    assert abs(weighted_f1(preds, refs) - f1_score(refs, preds, average="weighted")) < 1e-12
    binary_refs, binary_preds = refs % 2, preds % 2
    assert abs(f1(binary_preds, binary_refs) - f1_score(binary_refs, binary_preds)) < 1e-12


def test_evaluate_modules_load_from_the_package_offline():
    refs, preds = [0, 1, 1, 0, 1], [0, 1, 0, 0, 0]
    acc = evaluate.load(metric_path("accuracy")).compute(predictions=preds, references=refs)
    f1 = evaluate.load(metric_path("weighted_f1")).compute(predictions=preds, references=refs)
    assert acc == {"accuracy": 0.6}
    assert abs(f1["weighted_f1"] - f1_score(refs, preds, average="weighted")) < 1e-12
    binary = evaluate.load(metric_path("f1")).compute(predictions=preds, references=refs)
    assert abs(binary["f1"] - f1_score(refs, preds)) < 1e-12


# --- TAMT's downstream metrics (section 4.1) ------------------------------------------------

def test_correlations_against_sklearn_and_scipy():
    from sklearn.metrics import matthews_corrcoef as sk_mcc

    from srnets_lib.metrics import matthews_corrcoef, pearson, spearman

    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(1)
    refs, preds = rng.integers(2, size=300), rng.integers(2, size=300)
    preds[:200] = refs[:200]
    assert abs(matthews_corrcoef(preds, refs) - sk_mcc(refs, preds)) < 1e-12
    three = rng.integers(3, size=300)
    assert abs(matthews_corrcoef(three, refs) - sk_mcc(refs, three)) < 1e-12  # multiclass form
    assert matthews_corrcoef(np.ones(5), refs[:5]) == sk_mcc(refs[:5], np.ones(5)) == 0.0
    gold = rng.uniform(0, 5, size=200).round(1)  # STS-B-like scores with ties
    guess = gold + rng.normal(0, 1, size=200)
    assert abs(pearson(guess, gold) - stats.pearsonr(guess, gold)[0]) < 1e-12
    assert abs(spearman(guess.round(0), gold) - stats.spearmanr(guess.round(0), gold)[0]) < 1e-12
    assert pearson(np.full(4, 2.0), [1.0, 2.0, 3.0, 4.0]) == 0.0  # undefined: 0, not nan


def test_acc_and_f1_is_the_mean_of_accuracy_and_binary_f1():
    from srnets_lib.metrics import acc_and_f1

    refs, preds = [1, 1, 0, 0, 1], [1, 0, 0, 1, 1]
    assert acc_and_f1(preds, refs) == pytest.approx((accuracy_score(refs, preds) + f1_score(refs, preds)) / 2)
    assert acc_and_f1(preds, refs) == pytest.approx((0.6 + 2 / 3) / 2)


def test_squad_scores_normalise_and_take_the_best_gold_answer():
    from srnets_lib.metrics import squad_exact_match, squad_f1

    assert squad_exact_match(["The Eiffel  Tower!"], [["eiffel tower"]]) == 1.0  # case, article, punctuation, spaces
    assert squad_exact_match(["an apple"], [["apple", "a pear"]]) == 1.0
    assert squad_exact_match(["theatre"], [["atre"]]) == 0.0  # only whole-word articles go
    assert squad_f1(["Denver Broncos team"], [["Denver Broncos"]]) == pytest.approx(0.8)  # P 2/3, R 1
    # the best gold answer counts; the mean runs over questions
    assert squad_f1(["1,230 km", "Paris"], [["about 1230 kilometres", "1230 km"], ["London"]]) == pytest.approx(0.5)
    assert squad_exact_match(["1,230 km", "Paris"], [["1230 km"], ["paris."]]) == 1.0
    assert squad_f1(["the"], [["a"]]) == 0.0  # both normalise to nothing: 0 in the v1.1 script


@pytest.mark.parametrize("name, preds, refs", [
    ("matthews_corrcoef", [0, 1, 1, 0], [0, 1, 0, 0]), ("acc_and_f1", [0, 1, 1, 0], [0, 1, 0, 0]),
    ("max_acc_acc_and_f1", [0, 0, 1, 0], [1, 1, 1, 0]),
    ("pearson", [0.5, 2.5, 3.0], [0.0, 2.2, 4.0]), ("spearman", [0.5, 2.5, 3.0], [0.0, 4.0, 2.2]),
    ("squad_exact_match", ["the Paris", "x"], [["Paris"], ["y", "z"]]),
    ("squad_f1", ["the Paris", "x y"], [["Paris"], ["y", "z"]]),
])
def test_new_evaluate_modules_load_offline_and_agree(name, preds, refs):
    from srnets_lib.metrics import METRICS

    result = evaluate.load(metric_path(name)).compute(predictions=preds, references=refs)
    assert result == {name: pytest.approx(METRICS[name](preds, refs))}
