"""The real datasets from the Hugging Face hub (needs internet, or a copy of the hub's dataset
repositories named by $SRNETS_HUB_MIRROR; tests replace `_load_dataset`).

On the hub as parquet (loadable by `datasets` >= 4, which runs no loading scripts): MNLI and
QQP (`nyu-mll/glue`, configs mnli and qqp) and PAWS-wiki (`google-research-datasets/paws`,
config labeled_final). Every other split the paper uses is read from the files under
`data.path` (default `data/`, layout in local.py): HANS (`hans` / `jhu-cogsci/hans` is a
loading script, so it no longer loads), PAWS-qqp (built by the user from QQP), and the
processed FEVER / FEVER-Symmetric files (the whole factcheck task).
"""

from __future__ import annotations

import os
from pathlib import Path

from srnets_lib.data import local
from srnets_lib.data.local import DataFileError
from srnets_lib.data.splits import Split, TaskData
from srnets_lib.data.tasks import spec

GLUE = "nyu-mll/glue"
PAWS = "google-research-datasets/paws"
# labelled rows of each hub split of the paper's tasks (appendix table 1; QQP as the hub holds it):
# checked as they load, as local.PUBLISHED_ROWS for files
HUB_ROWS = {(GLUE, "mnli", "train"): (392_702,), (GLUE, "mnli", "validation_matched"): (9_815,),
            (GLUE, "qqp", "train"): (363_846,), (GLUE, "qqp", "validation"): (40_430,),
            (PAWS, "labeled_final", "train"): (49_401,), (PAWS, "labeled_final", "test"): (8_000,)}


def task_datasets(task: str, ood_train: bool = False) -> list[tuple[str, str, tuple[str, ...]]]:
    """(hub id, config, the splits read) of each hub dataset a paper task reads with data.source: hub
    (the other splits are files: local.py)."""
    return {"nli": [(GLUE, "mnli", ("train", "validation_matched"))],
            "paraphrase": [(GLUE, "qqp", ("train", "validation")),
                           (PAWS, "labeled_final", ("test", "train") if ood_train else ("test",))]}.get(task, [])
MIRROR = "SRNETS_HUB_MIRROR"


def mirror_root() -> Path | None:
    """$SRNETS_HUB_MIRROR as a folder (a relative one: from the current directory where it exists
    there, else from the checkout), None where it is unset. One mirror serves the hub datasets
    (mirror_files) and the backbones (model/backbones.resolve), each under its hub id."""
    root = os.environ.get(MIRROR)
    if root is None:
        return None
    if not root.strip():
        raise DataFileError(f"${MIRROR} is set but empty: unset it (the hub is used) or name the folder holding "
                            "the copies of the hub's datasets and backbones")
    return local.data_folder(root)


def mirror_files(hub_id: str, config: str) -> dict[str, list[str]] | None:
    """With $SRNETS_HUB_MIRROR set (machines without internet): the parquet files of `hub_id`'s
    `config` by split, from a copy of the dataset's hub repository in that folder
    (`huggingface-cli download <hub_id> --repo-type dataset --local-dir $SRNETS_HUB_MIRROR/<hub_id>`),
    whose files are <config>/<split>-NNNNN-of-NNNNN.parquet. None where the variable is unset."""
    root = mirror_root()
    if root is None:
        return None
    folder = root / hub_id / config
    files = sorted(folder.glob("*.parquet"))
    if not files:
        raise DataFileError(f"{hub_id} ({config}): no parquet files in {folder} (${MIRROR}); copy it there with "
                            f"huggingface-cli download {hub_id} --repo-type dataset --local-dir {folder.parent}")
    splits: dict[str, list[str]] = {}
    for file in files:
        splits.setdefault(file.name.split("-")[0], []).append(str(file))
    return splits


def _load_dataset(hub_id: str, config: str):
    """The one call to the hub: a DatasetDict of `hub_id`'s `config` (from $SRNETS_HUB_MIRROR's copy
    where it is set: mirror_files). Failing (offline, no such dataset), a one-line error that says
    how to read local files instead."""
    from datasets import load_dataset

    mirrored = mirror_files(hub_id, config)
    if mirrored is not None:
        return load_dataset("parquet", data_files=mirrored)
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
                labels: list[str], ids: str | None = None, sizes: bool = False) -> dict[str, Split]:
    """`wanted`: our split name -> the hub's split name; with `sizes` each checked against HUB_ROWS."""
    loaded = _load_dataset(hub_id, config)
    out = {}
    for name, hub_split in wanted.items():
        if hub_split not in loaded:
            raise DataFileError(f"{hub_id} ({config}): no split {hub_split!r}; it has {sorted(loaded)}")
        where = f"{hub_id} ({config}) {hub_split}"
        out[name] = _split(loaded[hub_split], where, name, a, b, labels, ids)
        local.check_rows(len(out[name]), HUB_ROWS.get((hub_id, config, hub_split), ()), where, sizes)
    return out


def load_hub(task: str, folder: str | Path | None = None, ood_train: bool = False,
             train_size: int | None = None, sizes: bool = False) -> TaskData:
    """`task` with MNLI / QQP / PAWS-wiki from the hub and the other splits from `folder`.

    Example ids: MNLI's hub `idx` is its file's index column; QQP's hub `idx` is a row number,
    not the pair id, so the authors' QQP bias predictions need the GLUE file (data.source=local)."""
    root = local.data_folder(folder) / spec(task).name
    labels = list(spec(task).labels)
    if task == "factcheck":
        return local.load_factcheck(root, ood_train, train_size, sizes)
    notes: list[str] = [f"local files in {root}"]
    missing: dict[str, str] = {}
    if task == "nli":
        mnli = _hub_splits(GLUE, "mnli", {"train": "train", "dev": "validation_matched"},
                           "premise", "hypothesis", labels, ids="idx", sizes=sizes)
        train, dev = mnli["train"], mnli["dev"]
        ood = {"hans": local.hans(root, sizes)}
        extra = lambda: [local.hans_train(root, sizes)]  # noqa: E731
        source = f"hub {GLUE} (mnli)"
    else:
        qqp = _hub_splits(GLUE, "qqp", {"train": "train", "dev": "validation"},
                          "question1", "question2", labels, sizes=sizes)
        paws = _hub_splits(PAWS, "labeled_final", {"paws_wiki": "test", "paws_train": "train"}
                           if ood_train else {"paws_wiki": "test"}, "sentence1", "sentence2", labels, sizes=sizes)
        train, dev = qqp["train"], qqp["dev"]
        ood: dict[str, Split] = {}
        local.add_paws_qqp(ood, root, notes, missing, sizes)
        ood["paws_wiki"] = paws["paws_wiki"]
        extra = lambda: [local.paws_qqp_train(root, sizes), paws["paws_train"]]  # noqa: E731
        source = f"hub {GLUE} (qqp), {PAWS} (labeled_final)"
    train = local.mix(train, extra() if ood_train else [], train_size)
    return local.task_data(task, train, dev, ood, source, notes, missing)
