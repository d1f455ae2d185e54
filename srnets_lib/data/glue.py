"""The GLUE tasks TAMT fine-tunes its subnetworks on (section 4.1: CoLA, SST-2, RTE, MRPC, STS-B,
MNLI), from the hub (`nyu-mll/glue`, parquet) or from GLUE's distributed tsv files.

Local layout: `<data.path>/glue/<CoLA|SST-2|RTE|MRPC|STS-B>/train.tsv, dev.tsv` and
`<data.path>/glue/MNLI/train.tsv, dev_matched.tsv, dev_mismatched.tsv` (the folders GLUE's
download script writes; the authors read them from imp_and_fine_tune/glue/<TASK> of llyx97/TAMT).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from srnets_lib.data import hub, local
from srnets_lib.data.local import DataFileError, decoded
from srnets_lib.data.splits import Split, TaskData
from srnets_lib.data.tasks import spec

GLUE_FOLDERS = {"cola": "CoLA", "sst2": "SST-2", "rte": "RTE", "mrpc": "MRPC", "stsb": "STS-B", "mnli": "MNLI"}
# (the hub's text columns: the first and the second text, None for single-sentence tasks)
HUB_COLUMNS = {"cola": ("sentence", None), "sst2": ("sentence", None), "rte": ("sentence1", "sentence2"),
               "mrpc": ("sentence1", "sentence2"), "stsb": ("sentence1", "sentence2"),
               "mnli": ("premise", "hypothesis")}
# our evaluation split -> (its GLUE file, its hub split); MNLI keeps both dev sets, as the
# authors' evaluate() in imp_and_fine_tune/glue_trans.py scores mnli and mnli-mm: "dev" (selected on
# and reported) is the matched one, or with data.mnli_dev=mismatched the mismatched one (theirs), the
# other evaluated beside it
MNLI_DEV = {"matched": ("dev_matched.tsv", "validation_matched"),
            "mismatched": ("dev_mismatched.tsv", "validation_mismatched")}
DEV_ONLY = {"dev": ("dev.tsv", "validation")}
MNLI_ROWS = {"dev_matched.tsv": 9_815, "dev_mismatched.tsv": 9_832}  # GLUE's distribution


def eval_splits(task: str, mnli_dev: str = "matched") -> dict[str, tuple[str, str]]:
    """Our evaluation split -> (its GLUE file, its hub split): "dev" and, for MNLI, the other dev set
    ("dev_mismatched", or "dev_matched" where the mismatched one is the run's dev)."""
    if task != "mnli":
        return DEV_ONLY
    other = "matched" if mnli_dev == "mismatched" else "mismatched"
    return {"dev": MNLI_DEV[mnli_dev], f"dev_{other}": MNLI_DEV[other]}


@dataclass(frozen=True)
class TsvColumns:
    """Where a GLUE tsv holds the texts and the label: a header column's name, or a field's
    position (negative: from the end) where the file has no header or the header does not name it."""

    text_a: str | int
    text_b: str | int | None  # None: single-sentence task, text_b = ""
    label: str | int
    file_labels: tuple[str, ...]  # each class as the file writes it, in the task's order; (): a float score
    header: bool = True


# transformers' GLUE processors (glue.py of the authors' hg_transformers) read the same fields
TSV_COLUMNS = {
    "cola": TsvColumns(3, None, 1, ("0", "1"), header=False),  # source, label, original mark, sentence
    "sst2": TsvColumns("sentence", None, "label", ("0", "1")),
    "rte": TsvColumns("sentence1", "sentence2", "label", ("entailment", "not_entailment")),
    "mrpc": TsvColumns("#1 String", "#2 String", "Quality", ("0", "1")),
    "stsb": TsvColumns("sentence1", "sentence2", -1, ()),  # the score is the last column
}


def _glue_file(path: Path, task: str) -> Path:
    if not path.is_file():
        raise DataFileError(f"{spec(task).dataset}: {path} not found; get it from GLUE "
                            "(gluebenchmark.com/tasks), or use data.source=hub")
    return path


def published_rows(task: str, file: str) -> tuple[int, ...]:
    """The labelled rows of `task`'s GLUE file `file` in GLUE's distribution (data/tasks.py): train,
    dev, and MNLI's two dev sets."""
    task_spec = spec(task)
    return (MNLI_ROWS[file] if file in MNLI_ROWS else task_spec.train_rows if file == "train.tsv" else task_spec.dev_rows,)


def hub_datasets(task: str) -> list[tuple[str, str, tuple[str, ...]]]:
    """(hub id, config, the splits read) of `task`'s hub dataset."""
    return [(hub.GLUE, task, ("train", *(hub_split for _, hub_split in eval_splits(task).values())))]


def expected_files(task: str, folder) -> list[tuple[str, Path]]:
    """(dataset, path) of every file a local GLUE run of `task` reads, without reading them."""
    root = local.data_folder(folder) / "glue" / GLUE_FOLDERS[task]
    return [(spec(task).dataset, root / file) for file, _ in
            {"train": ("train.tsv", "train"), **eval_splits(task)}.values()]


def _position(header: list[str] | None, column: str | int, path: Path) -> int:
    if isinstance(column, int):
        return column
    if column not in header:
        raise DataFileError(f"{path}, line 1: missing column {column!r}; header has {header}")
    return header.index(column)


def _label(field: str, columns: TsvColumns, path: Path, line: int) -> float | int:
    field = field.strip()
    if not columns.file_labels:
        try:
            return float(field)
        except ValueError:
            raise DataFileError(f"{path}, line {line}: score {field!r} is not a number") from None
    if field not in columns.file_labels:
        raise DataFileError(f"{path}, line {line}: label {field!r} is not one of {list(columns.file_labels)}")
    return columns.file_labels.index(field)


def read_glue_tsv(path: Path, task: str, name: str) -> Split:
    """One GLUE tsv file of `task` (not MNLI: local.read_mnli reads it), in the task's classes."""
    columns = TSV_COLUMNS[task]
    text_a, text_b, labels = [], [], []
    # utf-8-sig: MRPC's header starts with a byte-order mark in some copies
    with decoded(path), path.open(newline="", encoding="utf-8-sig") as handle:
        reader = csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
        header = next(reader, None) if columns.header else None
        if columns.header and not header:
            raise DataFileError(f"{path}: empty file (expected a header)")
        where = [_position(header, c, path) for c in (columns.text_a, columns.text_b, columns.label)
                 if c is not None]
        width = len(header) if header else max(where) + 1
        for line, row in enumerate(reader, start=2 if header else 1):
            if len(row) < width:
                raise DataFileError(f"{path}, line {line}: {len(row)} fields, expected {width}")
            text_a.append(row[where[0]])
            text_b.append(row[where[1]] if columns.text_b is not None else "")
            labels.append(_label(row[where[-1]], columns, path, line))
    if not labels:
        raise DataFileError(f"{path}: no labelled rows")
    return Split(name, text_a, text_b, labels, list(spec(task).labels), float_labels=not columns.file_labels)


def _hub_split(loaded, hub_split: str, name: str, task: str) -> Split:
    """The labelled rows of `hub_split` of the DatasetDict `loaded` (GLUE marks unlabelled test
    rows with -1)."""
    where = f"{hub.GLUE} ({task}) {hub_split}"
    if hub_split not in loaded:
        raise DataFileError(f"{where}: no such split; the hub has {sorted(loaded)}")
    dataset = loaded[hub_split]
    a, b = HUB_COLUMNS[task]
    wanted = [c for c in (a, b, "label") if c is not None]
    missing = [c for c in wanted if c not in dataset.column_names]
    if missing:
        raise DataFileError(f"{where}: missing column(s) {missing}; it has {dataset.column_names}")
    columns = dataset.select_columns(wanted).to_dict()
    keep = [i for i, y in enumerate(columns["label"]) if y >= 0]
    regression = spec(task).kind == "regress"
    classes = len(spec(task).labels)
    bad = sorted({columns["label"][i] for i in keep if not regression and columns["label"][i] >= classes})
    if bad:
        raise DataFileError(f"{where}: label(s) {bad} outside the {classes} classes {list(spec(task).labels)}")
    return Split(name, [columns[a][i] for i in keep], [columns[b][i] if b else "" for i in keep],
                 [columns["label"][i] for i in keep], list(spec(task).labels), float_labels=regression)


def _read_local(task: str, root: Path, file: str, name: str) -> Split:
    return read_file(task, _glue_file(root / file, task), name)


def read_file(task: str, path: Path, name: str = "glue") -> Split:
    """One of `task`'s GLUE files, as load_glue reads it (MNLI's with the paper's MNLI reader)."""
    return local.read_mnli(path, name) if task == "mnli" else read_glue_tsv(path, task, name)


def load_glue(task: str, source: str, folder: str | Path | None = None, train_size: int | None = None,
              sizes: bool = False, mnli_dev: str = "matched") -> TaskData:
    """`task`'s train split (its first `train_size` rows) and dev split(s), from `source` "hub"
    or "local" (the files under `folder`, layout at the top of this module); with `sizes`, each
    checked against its published row count. Single-sentence tasks have text_b "" for every
    example; STS-B's labels are float scores. `mnli_dev`: MNLI's dev set that is "dev"."""
    if task not in GLUE_FOLDERS:
        raise ValueError(f"not a GLUE task: {task!r}; accepted: {sorted(GLUE_FOLDERS)}")
    wanted = {"train": ("train.tsv", "train"), **eval_splits(task, mnli_dev)}
    if source == "local":
        root = local.data_folder(folder) / "glue" / GLUE_FOLDERS[task]
        splits = {name: _read_local(task, root, file, name) for name, (file, _) in wanted.items()}
        described = f"local files in {root}"
    elif source == "hub":
        loaded = hub._load_dataset(hub.GLUE, task)
        splits = {name: _hub_split(loaded, hub_split, name, task) for name, (_, hub_split) in wanted.items()}
        described = f"hub {hub.GLUE} ({task})"
    else:
        raise ValueError(f"unknown GLUE source {source!r}; accepted: hub, local")
    for name, split in splits.items():
        where = root / wanted[name][0] if source == "local" else f"{hub.GLUE} ({task}) {wanted[name][1]}"
        local.check_rows(len(split), published_rows(task, wanted[name][0]), where, sizes)
    train, dev = splits.pop("train"), splits.pop("dev")
    return local.task_data(task, train.head(train_size), dev, splits, described)
