"""Evaluation metrics (appendix B.1): accuracy, the weighted average of per-class F1, and the
binary F1 of the positive class.

As in the authors' code, QQP dev is scored (and checkpoints selected) on the binary F1 of the
duplicate class (GLUE's QQP F1), while PAWS is scored with the weighted F1 the paper's appendix
B.1 describes; tasks.py says which metric each split uses. The same functions back the
evaluate-compatible modules in metrics/<name>/ (`evaluate.load(metric_path("f1"))`, offline).
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


def f1(predictions, references) -> float:
    """F1 of class 1 (duplicate): sklearn's f1_score with its default pos_label=1."""
    predictions, references = np.asarray(predictions), np.asarray(references)
    tp = np.sum((predictions == 1) & (references == 1))
    fp = np.sum((predictions == 1) & (references != 1))
    fn = np.sum((predictions != 1) & (references == 1))
    return float(2 * tp / (2 * tp + fp + fn)) if tp else 0.0


METRICS = {"accuracy": accuracy, "weighted_f1": weighted_f1, "f1": f1}


def split_metric(metric: str, split, predictions) -> float:
    """`metric` of the model's predicted classes on `split`, first mapped to the split's own
    classes when they differ (HANS: neutral and contradiction are non-entailment, section 4.1)."""
    predictions = np.asarray(predictions)
    if split.collapse is not None:
        predictions = np.asarray(split.collapse)[predictions]
    return METRICS[metric](predictions, split.labels)


def evaluate_module(name: str):
    """The evaluate.Metric class of metrics/<name>/<name>.py (evaluate imports it from there)."""
    import datasets
    import evaluate

    function = METRICS[name]

    class Module(evaluate.Metric):
        def _info(self):
            return evaluate.MetricInfo(
                description=f"{name} as in 'A Win-win Deal' (srnets_lib.metrics.{name})", citation="",
                inputs_description="predictions, references: class indices",
                features=datasets.Features({"predictions": datasets.Value("int64"),
                                            "references": datasets.Value("int64")}))

        def _compute(self, predictions, references):
            return {name: function(predictions, references)}

    Module.__name__ = Module.__qualname__ = "".join(part.title() for part in name.split("_"))
    return Module


def metric_path(name: str) -> str:
    """Folder of the evaluate module for `name` (pass it to evaluate.load)."""
    if name not in METRICS:
        raise ValueError(f"unknown metric {name!r}; accepted: {sorted(METRICS)}")
    return str(Path(__file__).parent / name)
