"""Task registry: labels, metric and evaluation sets of the paper's three tasks (table 1), and the
downstream tasks the task-agnostic chapter (TAMT, Liu et al. NAACL 2022, section 4.1) transfers to."""

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
    # what a run trains (engine/kinds): "classify" (a class), "regress" (a score), "span" (SQuAD's
    # answer), "corpus" (unlabelled text: the pre-training objectives)
    kind: str = "classify"
    family: str = "paper"  # whose loader reads it (data/__init__.py): paper, glue, squad, corpus
    metrics: tuple[str, ...] = ()  # every metric recorded for the task; () means (metric,)


TASKS = {
    "nli": TaskSpec("nli", "MNLI", ("entailment", "neutral", "contradiction"), "accuracy", "accuracy",
                    ("hans",), "HANS train", 392_702, 30_000, 9_815, 30_000),
    # QQP dev: binary F1 of the duplicate class (the authors' selection metric), accuracy and the
    # weighted F1 the paper's text names recorded beside it at every evaluation; PAWS: weighted F1
    "paraphrase": TaskSpec("paraphrase", "QQP", ("not_duplicate", "duplicate"), "f1", "weighted_f1",
                           ("paws_qqp", "paws_wiki"), "PAWS-qqp and PAWS-wiki train",
                           363_846, 11_988 + 49_401, 40_430, 677 + 8_000, metrics=("f1", "accuracy", "weighted_f1")),
    "factcheck": TaskSpec("factcheck", "FEVER", ("SUPPORTS", "REFUTES", "NOT ENOUGH INFO"),
                          "accuracy", "accuracy", ("symmetric_v1", "symmetric_v2"), "Symmetric v2 dev x10",
                          242_911, 10 * 708, 16_664, 717 + 712),
}

# TAMT's downstream tasks (section 4.1) with the GLUE / SQuAD v1.1 distributions' sizes. The
# authors report the best dev score over all evaluations (imp_and_fine_tune/glue_trans.py of
# llyx97/TAMT, line 425: keys holding 'acc', 'mcc' or 'pearson'; squad_trans.py: 'f1').
TRANSFER_TASKS = {
    "cola": TaskSpec("cola", "CoLA", ("unacceptable", "acceptable"), "matthews_corrcoef",
                     "matthews_corrcoef", (), "", 8_551, 0, 1_043, family="glue"),
    "sst2": TaskSpec("sst2", "SST-2", ("negative", "positive"), "accuracy", "accuracy", (), "", 67_349, 0, 872, family="glue"),
    "rte": TaskSpec("rte", "RTE", ("entailment", "not_entailment"), "accuracy", "accuracy", (), "", 2_490, 0, 277, family="glue"),
    # acc_and_f1 = (acc + F1) / 2 (ours); the authors' best runs over acc and acc_and_f1 at each evaluation
    # (max_acc_acc_and_f1, RunConfig.dev_metric): the same unless a model's F1 falls below its accuracy
    "mrpc": TaskSpec("mrpc", "MRPC", ("not_equivalent", "equivalent"), "acc_and_f1", "acc_and_f1", (), "",
                     3_668, 0, 408, metrics=("accuracy", "f1", "acc_and_f1", "max_acc_acc_and_f1"), family="glue"),
    "stsb": TaskSpec("stsb", "STS-B", ("score",), "pearson", "pearson", (), "", 5_749, 0, 1_500,
                     kind="regress", metrics=("pearson", "spearman"), family="glue"),
    # dev = matched; the mismatched dev set, whose accuracy the authors' code ends up tracking, is
    # evaluated beside it as "dev_mismatched"
    "mnli": TaskSpec("mnli", "MNLI", ("entailment", "neutral", "contradiction"), "accuracy", "accuracy",
                     ("dev_mismatched",), "", 392_702, 0, 9_815, 9_832, family="glue"),
    # rows are questions; training runs over their 384-token windows (slightly more)
    "squad": TaskSpec("squad", "SQuAD v1.1", (), "squad_f1", "squad_f1", (), "", 87_599, 0, 10_570,
                      kind="span", metrics=("squad_exact_match", "squad_f1"), family="squad"),
}
TASKS.update(TRANSFER_TASKS)
# The corpus of TAMT's task-agnostic runs, counted in 512-token blocks: 2 epochs are 27,920 iterations
# at batch 16 (TAMT appendix B.2), so 223,360 blocks; the held-out blocks of wiki.valid.raw estimated
# from its ~0.25M word pieces (not published)
TASKS["corpus"] = TaskSpec("corpus", "WikiText-103", (), "mlm_loss", "mlm_loss", (), "", 223_360, 0, 480,
                           kind="corpus", family="corpus")

HANS_LABELS = ["entailment", "non-entailment"]
# MNLI class -> HANS class: neutral and contradiction are both non-entailment.
HANS_COLLAPSE = [0, 1, 1]
SYMMETRIC_LABELS = ["SUPPORTS", "REFUTES"]
# FEVER class -> Symmetric class: NOT ENOUGH INFO is never correct there.
SYMMETRIC_COLLAPSE = [0, 1, -1]


def planned_train_rows(task: str, data) -> int:
    """Training examples of a run of `task` on `data` (a DataConfig) without loading them: the
    configured size, else the published one (appendix table 1), plus section 4.5's OOD mixture."""
    if data.source == "synthetic":
        rows = data.train_size + (data.train_size // 4 if data.ood_train else 0)
        return rows if data.subset_size is None else min(data.subset_size, rows)
    published = spec(task)
    rows = min(data.train_size or published.train_rows, published.train_rows)
    extra = min(data.train_size or published.ood_train_rows, published.ood_train_rows) if data.ood_train else 0
    return rows + extra if data.subset_size is None else min(data.subset_size, rows + extra)


def planned_eval_rows(task: str, data) -> tuple[int, int]:
    """(ID dev rows, rows scored only where a result reads them: the OOD sets and the ID test split)
    of one evaluation, without loading them."""
    if data.source == "synthetic":
        return data.dev_size, data.ood_size + (data.test_size or 0)
    return spec(task).dev_rows, spec(task).ood_rows


def spec(task: str) -> TaskSpec:
    try:
        return TASKS[task]
    except KeyError:
        raise ValueError(f"unknown task {task!r}; accepted: {sorted(TASKS)}") from None
