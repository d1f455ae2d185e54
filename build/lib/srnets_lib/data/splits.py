"""The in-memory form of a task's data: text pairs with integer labels."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Split:
    """One evaluation or training split.

    `label_names` are this split's own classes. `collapse[c]` maps the model's class c to
    this split's class (-1: always wrong); None when the two label sets are the same. HANS
    uses it to count neutral and contradiction as non-entailment (section 4.1). `notes` say
    what the reader left out (e.g. QQP's short rows); `TaskData.description` repeats them.
    `ids` are the examples' ids in their source file (MNLI's index column, QQP's pair id,
    FEVER's line number), which the authors' bias predictions are keyed by; None if unknown.
    `float_labels`: the labels are real-valued scores (STS-B's similarity, a regression head),
    kept as float64 instead of class indices. `subsets`: per-example group names for breakdowns
    of a score (HANS's heuristic; the synthetic tasks' member of a rule class), not read by training.
    """

    name: str
    text_a: list[str]
    text_b: list[str]
    labels: np.ndarray
    label_names: list[str]
    collapse: list[int] | None = None
    notes: list[str] = field(default_factory=list)
    ids: np.ndarray | None = None
    float_labels: bool = False
    subsets: dict[str, np.ndarray] = field(default_factory=dict)

    def __post_init__(self):
        self.labels = np.asarray(self.labels, dtype=np.float64 if self.float_labels else np.int64)
        if self.ids is not None:
            self.ids = np.asarray(self.ids, dtype=np.int64)
        if not (len(self.text_a) == len(self.text_b) == len(self.labels)) or (
                self.ids is not None and len(self.ids) != len(self.labels)):
            raise ValueError(f"split {self.name}: text_a, text_b, labels (and ids) differ in length")
        self.subsets = {k: np.asarray(v) for k, v in self.subsets.items()}
        if any(len(v) != len(self.labels) for v in self.subsets.values()):
            raise ValueError(f"split {self.name}: a subsets column differs in length from the labels")

    def __len__(self) -> int:
        return len(self.labels)

    def head(self, n: int | None) -> "Split":
        if n is None or n >= len(self):
            return self
        return self.subset(np.arange(n))

    def subset(self, index: np.ndarray, note: str | None = None) -> "Split":
        """The examples at `index`, in that order (a note says why, if given)."""
        index = np.asarray(index, dtype=np.int64)
        return Split(self.name, [self.text_a[i] for i in index], [self.text_b[i] for i in index],
                     self.labels[index], self.label_names, self.collapse, self.notes + ([note] if note else []),
                     None if self.ids is None else self.ids[index], self.float_labels,
                     {k: v[index] for k, v in self.subsets.items()})

    def concat(self, other: "Split", name: str) -> "Split":
        """Both splits' examples; ids are kept only when both have them."""
        ids = None if self.ids is None or other.ids is None else np.concatenate([self.ids, other.ids])
        return Split(name, self.text_a + other.text_a, self.text_b + other.text_b,
                     np.concatenate([self.labels, other.labels]), self.label_names, self.collapse,
                     self.notes + other.notes, ids, self.float_labels,
                     {k: np.concatenate([v, other.subsets[k]]) for k, v in self.subsets.items() if k in other.subsets})


@dataclass
class TaskData:
    task: str
    label_names: list[str]  # the model's classes
    metric: str  # of the dev set (and checkpoint selection): "accuracy" | "f1" (tasks.py)
    train: Split
    dev: Split
    ood: dict[str, Split] = field(default_factory=dict)
    description: str = ""  # e.g. "synthetic" or the files used
    ood_metric: str = ""  # of the OOD sets: "accuracy" | "weighted_f1"; "" = metric
    ood_missing: dict[str, str] = field(default_factory=dict)  # OOD set -> why it is not evaluated
    # an ID test split (synthetic data): drawn as dev is, never read by selection; the reported ID
    # score is measured on it. None: the reported ID score is dev's (real data, the authors' protocol)
    test: Split | None = None

    def metric_of(self, split: str) -> str:
        return self.metric if split in ("dev", "test") else (self.ood_metric or self.metric)

    @property
    def id_split(self) -> str:
        """The split the reported ID score is measured on."""
        return "dev" if self.test is None else "test"

    @property
    def eval_splits(self) -> dict[str, Split]:
        return {"dev": self.dev, **({} if self.test is None else {"test": self.test}), **self.ood}
