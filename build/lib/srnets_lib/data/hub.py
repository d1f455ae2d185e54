"""The real datasets from the Hugging Face hub (needs internet; tests replace `_load_dataset`).

On the hub as parquet (loadable by `datasets` >= 4, which runs no loading scripts): MNLI and
QQP (`nyu-mll/glue`, configs mnli and qqp) and PAWS-wiki (`google-research-datasets/paws`,
config labeled_final). Every other split the paper uses is read from the files under
`data.path` (default `data/`, layout in local.py): HANS (`hans` / `jhu-cogsci/hans` is a
loading script, so it no longer loads), PAWS-qqp (built by the user from QQP), and the
processed FEVER / FEVER-Symmetric files (the whole factcheck task).
"""

from __future__ import annotations

from pathlib import Path

from . import local
from .local import DataFileError
from .splits import Split, TaskData
from .tasks import spec

GLUE = "nyu-mll/glue"
PAWS = "google-research-datasets/paws"


def _load_dataset(hub_id: str, config: str):
    """The one call to the hub: a DatasetDict of `hub_id`'s `config`. Failing (offline, no such
    dataset), a one-line error that says how to read local files instead."""
    from datasets import load_dataset

    try:
        return load_dataset(hub_id, config)
    except Exception as err:  # ConnectionError, DatasetNotFoundError, ... with long chained tracebacks
        first = (str(err).strip().splitlines() or [type(err).__name__])[0]
        raise DataFileError(f"dataset {hub_id} ({config}) could not be loaded from the hub ({type(err).__name__}: "
                            f"{first}); offline, set data.source: local and put its files under data.path "
                            "(the README lists each task's files)") from None


def _split(dataset, where: str, name: str, a: str, b: str, labels: list[str], ids: str | None = None) -> Split:
    """Columns `a`, `b` and `label` (the task's class indices) of one hub split, without the
    unlabelled rows (GLUE marks them with -1); `ids`: the column of the examples' source ids."""
    wanted = [a, b, "label"] + ([ids] if ids else [])
    missing = [c for c in wanted if c not in dataset.column_names]
    if missing:
        raise DataFileError(f"{where}: missing column(s) {missing}; it has {dataset.column_names}")
    columns = dataset.select_columns(wanted).to_dict()
    keep = [i for i, y in enumerate(columns["label"]) if y >= 0]
    bad = sorted({columns["label"][i] for i in keep if columns["label"][i] >= len(labels)})
    if bad:
        raise DataFileError(f"{where}: label(s) {bad} outside the {len(labels)} classes {labels}")
    return Split(name, [columns[a][i] for i in keep], [columns[b][i] for i in keep],
                 [columns["label"][i] for i in keep], labels,
                 ids=[columns[ids][i] for i in keep] if ids else None)


def _hub_splits(hub_id: str, config: str, wanted: dict[str, str], a: str, b: str,
                labels: list[str], ids: str | None = None) -> dict[str, Split]:
    """`wanted`: our split name -> the hub's split name."""
    loaded = _load_dataset(hub_id, config)
    out = {}
    for name, hub_split in wanted.items():
        if hub_split not in loaded:
            raise DataFileError(f"{hub_id} ({config}): no split {hub_split!r}; it has {sorted(loaded)}")
        out[name] = _split(loaded[hub_split], f"{hub_id} ({config}) {hub_split}", name, a, b, labels, ids)
    return out


def load_hub(task: str, folder: str | Path | None = None, ood_train: bool = False,
             train_size: int | None = None) -> TaskData:
    """`task` with MNLI / QQP / PAWS-wiki from the hub and the other splits from `folder`.

    Example ids: MNLI's hub `idx` is its file's index column; QQP's hub `idx` is a row number,
    not the pair id, so the authors' QQP bias predictions need the GLUE file (data.source=local)."""
    root = local.data_folder(folder) / spec(task).name
    labels = list(spec(task).labels)
    if task == "factcheck":
        return local.load_factcheck(root, ood_train, train_size)
    notes: list[str] = [f"local files in {root}"]
    missing: dict[str, str] = {}
    if task == "nli":
        mnli = _hub_splits(GLUE, "mnli", {"train": "train", "dev": "validation_matched"},
                           "premise", "hypothesis", labels, ids="idx")
        train, dev = mnli["train"], mnli["dev"]
        ood = {"hans": local.hans(root)}
        extra = lambda: [local.hans_train(root)]  # noqa: E731
        source = f"hub {GLUE} (mnli)"
    else:
        qqp = _hub_splits(GLUE, "qqp", {"train": "train", "dev": "validation"},
                          "question1", "question2", labels)
        paws = _hub_splits(PAWS, "labeled_final", {"paws_wiki": "test", "paws_train": "train"}
                           if ood_train else {"paws_wiki": "test"}, "sentence1", "sentence2", labels)
        train, dev = qqp["train"], qqp["dev"]
        ood: dict[str, Split] = {}
        local.add_paws_qqp(ood, root, notes, missing)
        ood["paws_wiki"] = paws["paws_wiki"]
        extra = lambda: [local.paws_qqp_train(root), paws["paws_train"]]  # noqa: E731
        source = f"hub {GLUE} (qqp), {PAWS} (labeled_final)"
    train = local.mix(train, extra() if ood_train else [], train_size)
    return local.task_data(task, train, dev, ood, source, notes, missing)
