"""Evaluation metrics (appendix B.1): accuracy, the weighted average of per-class F1, and the
binary F1 of the positive class.

As in the authors' code, QQP dev is scored (and checkpoints selected) on the binary F1 of the
duplicate class (GLUE's QQP F1), while PAWS is scored with the weighted F1 the paper's appendix
B.1 describes; tasks.py says which metric each split uses. The same functions back the
evaluate-compatible modules in metrics/<name>/ (`evaluate.load(metric_path("f1"))`, offline).

The task-agnostic chapter's downstream tasks (TAMT section 4.1) add MRPC's acc_and_f1, the
correlations of CoLA and STS-B (correlation.py) and SQuAD's exact match and F1 (squad.py).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from srnets_lib.metrics.correlation import matthews_corrcoef, pearson, spearman
from srnets_lib.metrics.squad import squad_exact_match, squad_f1


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


def acc_and_f1(predictions, references) -> float:
    """(accuracy + F1) / 2, MRPC's acc_and_f1 in glue_compute_metrics of the authors'
    hg_transformers (imp_and_fine_tune/glue_trans.py of llyx97/TAMT)."""
    return (accuracy(predictions, references) + f1(predictions, references)) / 2


def max_acc_acc_and_f1(predictions, references) -> float:
    """The larger of accuracy and acc_and_f1 at one evaluation: the score the authors' glue_trans.py
    (line 425: every key holding 'acc') keeps and reports for MRPC."""
    return max(accuracy(predictions, references), acc_and_f1(predictions, references))


METRICS = {"accuracy": accuracy, "weighted_f1": weighted_f1, "f1": f1, "acc_and_f1": acc_and_f1,
           "max_acc_acc_and_f1": max_acc_acc_and_f1,
           "matthews_corrcoef": matthews_corrcoef, "pearson": pearson, "spearman": spearman,
           "squad_exact_match": squad_exact_match, "squad_f1": squad_f1}
# what a metric compares, when not class indices: real-valued scores, or a predicted answer text
# against the question's gold answer texts
INPUTS = {"pearson": "scores", "spearman": "scores", "squad_exact_match": "answers", "squad_f1": "answers"}


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
    inputs = INPUTS.get(name, "classes")
    value = datasets.Value("float64" if inputs == "scores" else "int64")
    features = ({"predictions": datasets.Value("string"), "references": datasets.Sequence(datasets.Value("string"))}
                if inputs == "answers" else {"predictions": value, "references": value})
    described = {"classes": "predictions, references: class indices", "scores": "predictions, references: scores",
                 "answers": "predictions: answer texts; references: each question's gold answer texts"}

    class Module(evaluate.Metric):
        def _info(self):
            return evaluate.MetricInfo(
                description=f"{name}, as srnets_lib.metrics.{name} computes it", citation="",
                inputs_description=described[inputs], features=datasets.Features(features))

        def _compute(self, predictions, references):
            return {name: function(predictions, references)}

    Module.__name__ = Module.__qualname__ = "".join(part.title() for part in name.split("_"))
    return Module


def metric_path(name: str) -> str:
    """Folder of the evaluate module for `name` (pass it to evaluate.load)."""
    if name not in METRICS:
        raise ValueError(f"unknown metric {name!r}; accepted: {sorted(METRICS)}")
    return str(Path(__file__).parent / name)
