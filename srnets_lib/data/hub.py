"""Loading the real datasets from the Hugging Face hub (needs internet; never used offline).

Hub identifiers (GUIDE): glue/mnli, hans, glue/qqp, paws/labeled_final. PAWS-qqp and the
processed FEVER / FEVER-Symmetric files are not on the hub in the paper's form: use
`data.source: local` for them (see local.py).
"""

from __future__ import annotations

from .splits import Split, TaskData
from .tasks import HANS_COLLAPSE, HANS_LABELS, spec


def _split(dataset, name, a, b, label_names, collapse=None) -> Split:
    rows = [r for r in dataset if r["label"] >= 0]  # GLUE marks unlabelled rows with -1
    return Split(name, [r[a] for r in rows], [r[b] for r in rows], [r["label"] for r in rows],
                 label_names, collapse)


def load_hub(task: str, ood_train: bool = False) -> TaskData:
    from datasets import load_dataset

    labels = list(spec(task).labels)
    if task == "nli":
        mnli = load_dataset("glue", "mnli")
        hans = load_dataset("hans")
        train = _split(mnli["train"], "train", "premise", "hypothesis", labels)
        dev = _split(mnli["validation_matched"], "dev", "premise", "hypothesis", labels)
        ood = {"hans": _split(hans["validation"], "hans", "premise", "hypothesis", HANS_LABELS, HANS_COLLAPSE)}
        if ood_train:
            extra = _split(hans["train"], "hans_train", "premise", "hypothesis", HANS_LABELS)
            extra.labels = (extra.labels * 2)  # non-entailment -> contradiction (see local.py)
            extra.label_names = labels
            train = train.concat(extra, "train+ood")
    elif task == "paraphrase":
        qqp = load_dataset("glue", "qqp")
        paws = load_dataset("paws", "labeled_final")
        train = _split(qqp["train"], "train", "question1", "question2", labels)
        dev = _split(qqp["validation"], "dev", "question1", "question2", labels)
        ood = {"paws_wiki": _split(paws["test"], "paws_wiki", "sentence1", "sentence2", labels)}
        if ood_train:
            train = train.concat(_split(paws["train"], "paws_train", "sentence1", "sentence2", labels), "train+ood")
    else:
        raise ValueError("factcheck: the processed FEVER and FEVER-Symmetric files are not on the hub; "
                         "download them (github.com/TalSchuster/FeverSymmetric) and use data.source=local")
    return TaskData(task, labels, spec(task).metric, train, dev, ood, description="hub datasets")
