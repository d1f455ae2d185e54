"""Correlation metrics of TAMT's GLUE tasks (section 4.1): Matthews correlation (CoLA) and the
Pearson and Spearman correlations of STS-B's scores, as glue_compute_metrics of the authors'
hg_transformers (imp_and_fine_tune/glue_trans.py of llyx97/TAMT) takes them from scikit-learn and scipy.

Where a correlation is undefined (a constant side), the value is 0.0, as scikit-learn's
matthews_corrcoef returns (scipy's pearsonr would give nan, which no best-score search can pick).
"""

from __future__ import annotations

import numpy as np


def matthews_corrcoef(predictions, references) -> float:
    """(c s - t.p) / sqrt((s^2 - p.p)(s^2 - t.t)) over the confusion matrix: c correct, s rows,
    t and p the per-class counts of references and predictions (scikit-learn's multiclass form)."""
    predictions, references = np.asarray(predictions), np.asarray(references)
    classes = np.union1d(predictions, references)
    true = np.array([np.sum(references == c) for c in classes], dtype=np.float64)
    predicted = np.array([np.sum(predictions == c) for c in classes], dtype=np.float64)
    correct, rows = float(np.sum(predictions == references)), float(len(references))
    denominator = np.sqrt((rows ** 2 - predicted @ predicted) * (rows ** 2 - true @ true))
    return float((correct * rows - true @ predicted) / denominator) if denominator else 0.0


def pearson(predictions, references) -> float:
    """Pearson's r of the predicted and gold scores."""
    x = np.asarray(predictions, dtype=np.float64) - np.mean(predictions)
    y = np.asarray(references, dtype=np.float64) - np.mean(references)
    denominator = np.sqrt((x @ x) * (y @ y))
    return float(np.clip(x @ y / denominator, -1.0, 1.0)) if denominator else 0.0


def _ranks(values) -> np.ndarray:
    """1-based ranks, ties given their average rank (scipy's rankdata)."""
    values = np.asarray(values, dtype=np.float64)
    order = np.argsort(values, kind="stable")
    ranks = np.empty(len(values))
    ranks[order] = np.arange(1, len(values) + 1)
    _, inverse = np.unique(values, return_inverse=True)
    return (np.bincount(inverse, weights=ranks) / np.bincount(inverse))[inverse]


def spearman(predictions, references) -> float:
    """Spearman's rho: Pearson's r of the ranks."""
    return pearson(_ranks(predictions), _ranks(references))
