"""Task registry: labels, metric and evaluation sets of the paper's three tasks (table 1)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TaskSpec:
    name: str
    dataset: str  # ID training / dev data
    labels: tuple[str, ...]
    metric: str
    ood_sets: tuple[str, ...]  # real OOD evaluation sets
    ood_train: str  # section 4.5's OOD training data


TASKS = {
    "nli": TaskSpec("nli", "MNLI", ("entailment", "neutral", "contradiction"), "accuracy",
                    ("hans",), "HANS train"),
    "paraphrase": TaskSpec("paraphrase", "QQP", ("not_duplicate", "duplicate"), "weighted_f1",
                           ("paws_qqp", "paws_wiki"), "PAWS train"),
    "factcheck": TaskSpec("factcheck", "FEVER", ("SUPPORTS", "REFUTES", "NOT ENOUGH INFO"),
                          "accuracy", ("symmetric_v1", "symmetric_v2"), "Symmetric v2 dev x10"),
}

HANS_LABELS = ["entailment", "non-entailment"]
# MNLI class -> HANS class: neutral and contradiction are both non-entailment.
HANS_COLLAPSE = [0, 1, 1]
SYMMETRIC_LABELS = ["SUPPORTS", "REFUTES"]
# FEVER class -> Symmetric class: NOT ENOUGH INFO is never correct there.
SYMMETRIC_COLLAPSE = [0, 1, -1]


def spec(task: str) -> TaskSpec:
    try:
        return TASKS[task]
    except KeyError:
        raise ValueError(f"unknown task {task!r}; accepted: {sorted(TASKS)}") from None
