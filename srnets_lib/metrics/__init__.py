"""Evaluation metrics (appendix B.1): accuracy, and the weighted average of per-class F1.

The same functions back the evaluate-compatible modules in metrics/accuracy and
metrics/weighted_f1 (`evaluate.load(metric_path("accuracy"))`, offline).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np


def accuracy(predictions, references) -> float:
    predictions, references = np.asarray(predictions), np.asarray(references)
    return float((predictions == references).mean())


def weighted_f1(predictions, references) -> float:
    """Sum over gold classes c of support(c) / n * F1(c); predictions outside the gold classes
    (e.g. -1) only count as errors."""
    predictions, references = np.asarray(predictions), np.asarray(references)
    total = 0.0
    for c in np.unique(references):
        tp = np.sum((predictions == c) & (references == c))
        fp = np.sum((predictions == c) & (references != c))
        fn = np.sum((predictions != c) & (references == c))
        f1 = 2 * tp / (2 * tp + fp + fn) if tp else 0.0
        total += f1 * np.mean(references == c)
    return float(total)


METRICS = {"accuracy": accuracy, "weighted_f1": weighted_f1}


def split_metric(metric: str, split, predictions) -> float:
    """`metric` of the model's predicted classes on `split`, first mapped to the split's own
    classes when they differ (HANS: neutral and contradiction are non-entailment, section 4.1)."""
    predictions = np.asarray(predictions)
    if split.collapse is not None:
        predictions = np.asarray(split.collapse)[predictions]
    return METRICS[metric](predictions, split.labels)


def metric_path(name: str) -> str:
    """Folder of the evaluate module for `name` (pass it to evaluate.load)."""
    if name not in METRICS:
        raise ValueError(f"unknown metric {name!r}; accepted: {sorted(METRICS)}")
    return str(Path(__file__).parent / name)
