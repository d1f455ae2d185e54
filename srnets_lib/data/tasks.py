"""Task registry: labels, metric and evaluation sets of the paper's three tasks (table 1)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TaskSpec:
    name: str
    dataset: str  # ID training / dev data
    labels: tuple[str, ...]
    metric: str  # of the ID dev set, also the checkpoint-selection metric
    ood_metric: str  # of the OOD sets
    ood_sets: tuple[str, ...]  # real OOD evaluation sets
    ood_train: str  # section 4.5's OOD training data
    # published sizes (appendix table 1; QQP as the GLUE file has it): what `plan` counts steps
    # and evaluation cost from, without loading anything
    train_rows: int = 0
    ood_train_rows: int = 0  # added to train by section 4.5's mixture
    dev_rows: int = 0  # the ID dev set
    ood_rows: int = 0  # every OOD evaluation set


TASKS = {
    "nli": TaskSpec("nli", "MNLI", ("entailment", "neutral", "contradiction"), "accuracy", "accuracy",
                    ("hans",), "HANS train", 392_702, 30_000, 9_815, 30_000),
    # QQP dev: binary F1 of the duplicate class (the authors' selection metric); PAWS: weighted F1
    "paraphrase": TaskSpec("paraphrase", "QQP", ("not_duplicate", "duplicate"), "f1", "weighted_f1",
                           ("paws_qqp", "paws_wiki"), "PAWS-qqp and PAWS-wiki train",
                           363_846, 11_988 + 49_401, 40_430, 677 + 8_000),
    "factcheck": TaskSpec("factcheck", "FEVER", ("SUPPORTS", "REFUTES", "NOT ENOUGH INFO"),
                          "accuracy", "accuracy", ("symmetric_v1", "symmetric_v2"), "Symmetric v2 dev x10",
                          242_911, 10 * 708, 16_664, 717 + 712),
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
