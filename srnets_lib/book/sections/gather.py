"""A section's results gathered from the run store (final.json, metrics.jsonl, masks, predictions)
into DataFrames, and the points the store lacks and why: the book reads runs here, never computes
them (book/runs.py computes a page's points)."""

from __future__ import annotations


import numpy as np
import pandas as pd

from srnets_lib import paths
from srnets_lib.data.load import load_task
from srnets_lib.store.runs import Run, failure
from srnets_lib.book import columns
from srnets_lib.book.columns import COLUMNS
from srnets_lib.book.sections.point import Point
from srnets_lib.book.verdicts.noise import Predictions


def missing(points: list[Point], root=None) -> list[Point]:
    """The points whose run has not finished (no final.json, or one that cannot be read, or a
    damaged file), or whose IMP level it did not score (a run asked for other levels)."""
    return [p for p in points if _scored(p, Run(p.config, root).served()) is None]


def _scored(p: Point, final):
    """The result a point shows: its run's, or that of its IMP level; None if there is none."""
    if final is None or p.level is None:
        return final
    return final.level(p.level)


def why_missing(config, root=None) -> str | None:
    """Why a run shows no result, where something says: a damaged final.json or file of its own,
    its own last attempt's record (failed.json), or a run it starts from that failed; None if it
    is merely not computed yet."""
    run = Run(config, root)
    damage = run.why_not() if run.done else None
    if damage:
        said = damage if damage.startswith("stale: ") else f"damaged: {damage.split('; ')[0]}"
        return f"{said}; the next sweep computes it again"
    record = failure(run)
    if record is not None:
        return f"failed ({record['at']}, {record['host']}): {record['error']}"
    for dependency in config.dependencies():
        if not Run(dependency, root).done and why_missing(dependency, root) is not None:
            return f"not computed: a run it starts from ({dependency.key()}) failed"
    return None


def frame(points: list[Point], root=None) -> pd.DataFrame:
    """One row per finished point: `COLUMNS`, each OOD set's score ("ood:<set>") and its other
    scores ("score:<name>": a corpus run's held-out MLM and KD losses). Its attrs["predictions"]
    reads the points' stored predictions when a verdict asks how noisy a score is (noise.py)."""
    rows = []
    for p in points:
        run = Run(p.config, root)
        final = run.served()
        result = _scored(p, final)
        if result is None:
            continue
        row = {"series": p.series, "task": p.task, "seed": p.seed, "x": p.x, "reference": p.reference, "group": p.group,
               "level": p.level, "id": result.id, "id_split": final.id_split, "sparsity": result.sparsity, "key": run.key,
               "metric": final.metric,
               "ood_metric": final.ood_metric}
        row.update({columns.ood(k): v for k, v in result.ood.items()})
        if p.level is None:  # a corpus run's held-out losses (IMP's levels are probed by runs of their own)
            row.update({columns.score(k): v for k, v in final.scores.items()})
        rows.append(row)
    df = pd.DataFrame(rows) if rows else pd.DataFrame(columns=COLUMNS)
    df.attrs["predictions"] = Predictions(points, scored, root)
    return df


def curves(points: list[Point], root=None) -> pd.DataFrame:
    """Every evaluation (metrics.jsonl) of each point's run: for training-curve figures."""
    rows = []
    for p in points:
        for r in Run(p.config, root).metrics():
            rows.append({"series": p.series, "task": p.task, "seed": p.seed, "x": p.x, **r})
    return pd.DataFrame(rows)


def _last_level(p: Point) -> bool:
    """Whether the point is its run's end (not an earlier IMP level): what the run's mask and
    predictions files hold."""
    return p.level is None or abs(p.level - p.config.sparsity) < 1e-9


def masks(points: list[Point], sparsity: float, root=None) -> dict[tuple, dict]:
    """{(task, seed, series): mask} of the finished subnetwork points at `sparsity` whose mask the
    store holds (an IMP run keeps each level's)."""
    found = {}
    for p in points:
        run = Run(p.config, root)
        if p.reference or abs(p.x - sparsity) > 1e-9 or run.served() is None:
            continue
        last = _last_level(p)
        if run.file(paths.MASK if last else paths.level_mask(p.level)).is_file():
            found[(p.task, p.seed, p.series)] = run.masks(None if last else p.level)
    return found


def subsets(points: list[Point], root=None) -> pd.DataFrame:
    """Per finished point whose run stored its predictions (an IMP point: those at the end of
    its level, which its level's scores were read from), per evaluation split and per subset of
    it (each label; each value of the split's subset columns: HANS's heuristic, the synthetic
    tasks' members): the accuracy, how many examples, and the label most of them carry."""
    rows = []
    for p, name, split, _, predicted in scored(points, root):
        correct = predicted == split.labels
        labels = np.asarray(split.label_names)[split.labels]
        for kind, values in {"label": labels, **split.subsets}.items():
            for value in dict.fromkeys(values.tolist()):
                chosen = values == value
                names, counts = np.unique(labels[chosen], return_counts=True)
                rows.append({"series": p.series, "task": p.task, "seed": p.seed, "x": p.x, "split": name,
                             "subset": kind, "value": value, "label": str(names[counts.argmax()]),
                             "accuracy": float(correct[chosen].mean()), "examples": int(chosen.sum())})
    return pd.DataFrame(rows, columns=["series", "task", "seed", "x", "split", "subset", "value", "label", "accuracy",
                                       "examples"])


def scored(points: list[Point], root=None, tasks: dict | None = None):
    """(point, split name, split, the task's data, the predicted classes) for every evaluation
    split with class labels that each finished point's run stored predictions on (an IMP point:
    those at the end of its level). HANS's three labels collapse to two as its score does.
    `tasks`: the loaded tasks by (task, data), kept by a caller that asks again."""
    tasks = {} if tasks is None else tasks
    for p in points:
        run = Run(p.config, root)
        predictions = run.predictions(None if _last_level(p) else p.level) if run.served() else None
        if predictions is None:
            continue
        where = (p.config.task, p.config.data.model_dump_json())
        if where not in tasks:
            tasks[where] = load_task(p.config.task, p.config.data)
        data = tasks[where]
        for name, split in data.eval_splits.items():
            if name not in predictions or split.float_labels:
                continue
            guess = predictions[name].astype(np.int64)
            yield p, name, split, data, np.asarray(split.collapse)[guess] if split.collapse else guess
