"""How sure one reported number is, from what the runs stored: the standard error of each reported
score (from its per-example predictions at the selected checkpoint) and how far selecting a
checkpoint on the ID dev set lifts dev's own score above the ID test score (the toy's test split,
which selection never reads).

- An ID split is a simple random sample of its distribution; an OOD set whose examples carry
  subset columns (the synthetic sets' members, HANS's heuristics) is taken as stratified by label
  and subset (the synthetic OOD sets are drawn so: each label's members equally often; for a set
  not drawn that way this is the post-stratified approximation).
- Accuracy: the exact formula, sqrt(p (1 - p) / n) for a random sample and
  sqrt(sum_h (n_h / n)^2 s_h^2 / n_h) for a stratified one (s_h^2: the within-stratum sample
  variance). Any other metric (the F1 scores of paraphrase identification): the bootstrap standard
  deviation of the metric over `RESAMPLES` resamples of the examples, drawn within each stratum.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from srnets_lib.metrics import METRICS
from srnets_lib.store.runs import Run
from srnets_lib.book.sections import gather
from srnets_lib.book.sections.point import Point
from srnets_lib import methods

RESAMPLES = 200
COLUMNS = ["key", "level", "split", "kind", "metric", "score", "se", "examples"]


def standard_error(metric: str, predicted: np.ndarray, labels: np.ndarray, strata: np.ndarray | None = None,
                   seed: int = 0) -> float:
    """The standard error of `metric` on these predictions: exact for accuracy, else bootstrapped;
    over a random sample (`strata` None) or a sample stratified by `strata` (one label per example;
    a stratum of one example adds no variance)."""
    predicted, labels = np.asarray(predicted), np.asarray(labels)
    groups = [np.arange(len(labels))] if strata is None else [np.flatnonzero(strata == s) for s in np.unique(strata)]
    if metric == "accuracy":
        correct, n = (predicted == labels).astype(float), len(labels)
        if strata is None:
            return float(np.sqrt(correct.mean() * (1 - correct.mean()) / n))
        return float(np.sqrt(sum((len(g) / n) ** 2 * correct[g].var(ddof=1) / len(g) for g in groups if len(g) > 1)))
    return bootstrap_error(metric, predicted, labels, groups, seed)


def bootstrap_error(metric: str, predicted: np.ndarray, labels: np.ndarray, groups: list[np.ndarray],
                    seed: int = 0) -> float:
    """The standard deviation of `metric` over `RESAMPLES` resamples of the examples, each group of
    indices (a stratum) resampled with replacement to its own size."""
    rng = np.random.default_rng(seed)
    scores = []
    for _ in range(RESAMPLES):
        drawn = np.concatenate([rng.choice(g, size=len(g)) for g in groups])
        scores.append(METRICS[metric](predicted[drawn], labels[drawn]))
    return float(np.std(scores, ddof=1))


def errors(points: list[Point], root=None) -> pd.DataFrame:
    """One row per reported score of the points' runs (each run and IMP level once): the ID split
    the result reports (test where the data have one, else dev) and each OOD set, with its
    standard error."""
    rows, seen = [], set()
    for p, name, split, data, predicted in gather.scored(points, root):
        key, ood, metric = (p.config.key(), p.level, name), name in data.ood, data.metric_of(name)
        if key in seen or not (ood or name == data.id_split):
            continue
        seen.add(key)
        strata = None
        if ood and split.subsets:
            strata = np.array(["|".join(map(str, v)) for v in zip(split.labels, *split.subsets.values())])
        rows.append({"key": key[0], "level": p.level, "split": name, "kind": "OOD" if ood else f"ID {name}",
                     "metric": metric, "score": METRICS[metric](predicted, split.labels),
                     "se": standard_error(metric, predicted, split.labels, strata), "examples": len(predicted)})
    return pd.DataFrame(rows, columns=COLUMNS)


def selection_gaps(points: list[Point], root=None) -> pd.Series:
    """Per run of `points` that selected its checkpoint among several on ID dev and reports ID test
    (each run once; IMP levels and task-agnostic runs select nothing), the selected checkpoint's ID
    dev score minus its ID test score, in points: what reporting dev's own score would add."""
    gaps, seen = {}, set()
    for p in points:
        run = Run(p.config, root)
        if p.level is not None or run.key in seen or not run.done:
            continue
        seen.add(run.key)
        final = run.result()
        if final.id_split == "test" and final.dev is not None and len(methods.planned_schedule(p.config).selectable) > 1:
            gaps[run.key] = 100 * (final.dev - final.id)
    return pd.Series(gaps, dtype=float)


def summary(errors_: pd.DataFrame, gaps: pd.Series) -> pd.DataFrame:
    """The scorecard's table: per kind of reported number and metric, how many, the median and the
    largest standard error and the share of at most 1 point (x 100); then the selection gap."""
    rows = []
    for (kind, metric), group in errors_.groupby(["kind", "metric"], sort=True):
        se = 100 * group.se
        rows.append({"number": f"{kind} ({metric}): standard error", "values": len(group),
                     "median": f"{se.median():.1f}", "largest": f"{se.max():.1f}",
                     "within 1 point": f"{(se <= 1.0).mean():.0%}",
                     "note": "examples per set: " + ", ".join(str(n) for n in sorted(group.examples.unique()))
                             + (_needed(group) if kind.startswith("ID") and metric == "accuracy" else "")})
    if len(gaps) > 1:
        rows.append({"number": "selected checkpoint: ID dev minus ID test", "values": len(gaps),
                     "median": f"{gaps.median():+.1f}", "largest": f"{gaps.max():+.1f}",
                     "within 1 point": f"{(gaps.abs() <= 1.0).mean():.0%}",
                     "note": f"mean {gaps.mean():+.1f} (standard error {gaps.std(ddof=1) / np.sqrt(len(gaps)):.2f}), "
                             f"sd {gaps.std(ddof=1):.1f}, smallest {gaps.min():+.1f}"})
    return pd.DataFrame(rows, columns=["number", "values", "median", "largest", "within 1 point", "note"])


def _needed(group: pd.DataFrame) -> str:
    """How many examples a random sample needs for a 1-point standard error at the median score."""
    p = float(group.score.median())
    return f"; at the median score ({100 * p:.1f}) 1 point needs {int(np.ceil(p * (1 - p) / 0.01 ** 2)):,}"
