"""Appendix B.1 metrics, cross-checked against scikit-learn and loaded through evaluate offline."""

import evaluate
import numpy as np
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
