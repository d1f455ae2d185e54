"""How far a verdict's margin could move with another draw of the evaluation examples: its standard
error from the predictions each run stored at its selected checkpoint (standard_errors.py gives the
standard error of one reported score; this is that of a margin, which combines several).

A score the verdicts read is a mean over seeds of one metric on one evaluation set. Each metric
here is a mean of per-example terms to first order (its influence, the delta method): accuracy is
the mean of whether each example is right; F1 = 2 TP / (2 TP + FP + FN) is a ratio of two means,
whose influence on example i is (2 tp_i - F1 (2 tp_i + fp_i + fn_i)) / mean(2 tp + fp + fn); the
weighted F1 of appendix B.1 is the support-weighted sum of each class's. A margin is a linear
combination of such scores minus a threshold (the claims' rules: claims.py and the section
modules), so on each evaluation set it has a per-example influence too, the models scored on the
same examples paired, and its standard error is exact for that set's sampling: a simple random
sample (an ID split) or one stratified by label and subset (an OOD set whose examples carry subset
columns: the synthetic sets' members, HANS's heuristics; standard_errors.py says why). Scores on
different sets add their variances. A score whose run stored no predictions, or whose metric has
no influence here, leaves the margin's standard error unknown (None).
"""

from __future__ import annotations

import math

import numpy as np

from srnets_lib.book import columns
from srnets_lib.data.load import current_fingerprints


def influence(metric: str, predicted: np.ndarray, labels: np.ndarray) -> np.ndarray | None:
    """Each example's first-order term of `metric` (its mean is the metric, up to a constant);
    None for a metric without one here."""
    predicted, labels = np.asarray(predicted), np.asarray(labels)
    if metric == "accuracy":
        return (predicted == labels).astype(float)
    if metric == "f1":
        return _f1_influence(predicted, labels, 1)
    if metric == "weighted_f1":
        return sum(np.mean(labels == c) * _f1_influence(predicted, labels, c) for c in np.unique(labels))
    return None


def _f1_influence(predicted: np.ndarray, labels: np.ndarray, positive) -> np.ndarray:
    """The influence of each example on the F1 of class `positive` (a ratio of two means)."""
    tp = ((predicted == positive) & (labels == positive)).astype(float)
    wrong = ((predicted == positive) != (labels == positive)).astype(float)  # a false positive or negative
    numerator, denominator = 2 * tp, 2 * tp + wrong
    if denominator.sum() == 0:
        return np.zeros(len(labels))
    f1 = numerator.sum() / denominator.sum()
    return (numerator - f1 * denominator) / denominator.mean()


def variance(terms: np.ndarray, strata: np.ndarray | None) -> float:
    """The sampling variance of the mean of `terms`: over a simple random sample (strata None), or
    over one stratified by `strata`, sum_h (n_h / n)^2 s_h^2 / n_h (a stratum of one adds nothing)."""
    n = len(terms)
    if n < 2:
        return 0.0
    if strata is None:
        return float(terms.var(ddof=1) / n)
    total = 0.0
    for value in np.unique(strata):
        group = terms[strata == value]
        if len(group) > 1:
            total += (len(group) / n) ** 2 * float(group.var(ddof=1)) / len(group)
    return total


class Score(float):
    """A score or a margin with what its sampling noise is made of: per evaluation set (by its
    fingerprint) the per-example influence and the strata; `known` False where some score behind
    it has no stored predictions. Sums, differences and scalings carry them; anything else reads
    it as a plain float."""

    def __new__(cls, value: float, terms: dict | None = None, known: bool = True):
        score = super().__new__(cls, value)
        score.terms, score.known = dict(terms or {}), known
        return score

    @property
    def se(self) -> float | None:
        """Its standard error from the evaluation sets' sampling; None where unknown."""
        if not self.known or not self.terms:
            return None
        return math.sqrt(sum(variance(t, strata) for t, strata in self.terms.values()))

    def _plus(self, other, sign: float) -> "Score | float":
        if isinstance(other, Score):
            terms = dict(self.terms)
            for key, (t, strata) in other.terms.items():
                terms[key] = (terms[key][0] + sign * t, strata) if key in terms else (sign * t, strata)
            return Score(float(self) + sign * float(other), terms, self.known and other.known)
        if isinstance(other, (int, float)):
            return Score(float(self) + sign * other, self.terms, self.known)
        return NotImplemented

    def __add__(self, other):
        return self._plus(other, 1.0)

    __radd__ = __add__  # sum() starts from 0

    def __sub__(self, other):
        return self._plus(other, -1.0)

    def __rsub__(self, other):
        return (-self)._plus(other, 1.0)

    def __mul__(self, factor):
        if isinstance(factor, Score) or not isinstance(factor, (int, float)):
            return float(self) * float(factor)
        return Score(float(self) * factor, {k: (t * factor, s) for k, (t, s) in self.terms.items()}, self.known)

    __rmul__ = __mul__

    def __truediv__(self, divisor):
        if isinstance(divisor, Score) or not isinstance(divisor, (int, float)):
            return float(self) / float(divisor)  # a ratio of two scores: a plain number
        return self * (1.0 / divisor)

    def __neg__(self):
        return self * -1.0


def same_terms(a: Score, b: Score) -> bool:
    """Whether two scores were read from predictions right and wrong on the very same examples of
    the same evaluation sets (their per-example terms equal): their difference has no sampling noise."""
    if not (isinstance(a, Score) and isinstance(b, Score) and a.known and b.known and a.terms):
        return False
    return a.terms.keys() == b.terms.keys() and all(np.array_equal(a.terms[k][0], b.terms[k][0]) for k in a.terms)


def mean(scores: list[Score]) -> Score:
    """The mean over seeds: the influences averaged per evaluation set (seeds scored on the same
    examples are paired)."""
    return sum(scores) / len(scores)


class Predictions:
    """The stored predictions behind a results frame's rows (the frame's attrs["predictions"], set
    by sections.gather.frame): read from the store when a verdict first asks for a (run, IMP level),
    then kept. `scored` is gather.scored (the predictions of points, per evaluation split)."""

    def __init__(self, points, scored, root=None):
        self.points = {(p.config.key(), p.level): p for p in points}
        self.scored, self.root = scored, root
        self.read: dict[tuple, dict] = {}
        self.tasks: dict[tuple, object] = {}  # load_task by (task, data): gather.scored's cache

    def __deepcopy__(self, memo):  # pandas copies a frame's attrs with each filter: share this
        return self

    def score(self, row, column: str) -> Score:
        """The frame row's score in `column` ("id" or an "ood:<set>" column) with its influence."""
        key = (row["key"], None if _missing(row.get("level")) else float(row["level"]))
        if key not in self.read:
            self.read[key] = self._load(*key)
        value = float(row[column])
        found = self.read[key].get(column)
        return Score(value, {found[0]: found[1:]}, True) if found else Score(value, known=False)

    def _load(self, key: str, level) -> dict:
        point = self.points.get((key, level))
        found = {}
        if point is None:
            return found
        for _, name, split, data, predicted in self.scored([point], self.root, self.tasks):
            ood = name in data.ood
            if not (ood or name == data.id_split):
                continue
            terms = influence(data.metric_of(name), predicted, split.labels)
            if terms is None:
                continue
            strata = (np.array(["|".join(map(str, v)) for v in zip(split.labels, *split.subsets.values())])
                      if ood and split.subsets else None)
            fingerprint = current_fingerprints(point.config.task, point.config.data).get(name, name)
            found[columns.ood(name) if ood else "id"] = ((point.config.task, name, fingerprint), terms, strata)
        return found


def _missing(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def scores(df, column: str) -> list[Score]:
    """The rows' scores in `column`, each with its influence where the frame carries its
    predictions (attrs["predictions"]); plain Scores (unknown noise) where it does not."""
    source = df.attrs.get("predictions")
    if source is None or "key" not in df:
        return [Score(float(v), known=False) for v in df[column]]
    return [source.score(row, column) for _, row in df.iterrows()]
