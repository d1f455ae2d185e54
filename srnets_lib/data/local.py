"""Loaders for the original files (GUIDE "Data formats"), with errors naming file and line.

Folder layout for `data.source: local` (`data.path` points at it):
  nli/        train.tsv, dev_matched.tsv (MNLI, GLUE), heuristics_evaluation_set.txt,
              heuristics_train_set.txt (HANS, only for ood_train)
  paraphrase/ train.tsv, dev.tsv (QQP, GLUE), paws_qqp/dev_and_test.tsv,
              paws_wiki/test.tsv, paws_wiki/train.tsv (PAWS, only for ood_train)
  factcheck/  fever.train.jsonl, fever.dev.jsonl (processed FEVER),
              symmetric_v0.1_fever_symmetric_generated.jsonl,
              symmetric_v0.2_fever_symmetric_test.jsonl, symmetric_v0.2_fever_symmetric_dev.jsonl
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

from .splits import Split, TaskData
from .tasks import HANS_COLLAPSE, HANS_LABELS, SYMMETRIC_COLLAPSE, SYMMETRIC_LABELS, spec

csv.field_size_limit(sys.maxsize)


class DataFileError(ValueError):
    """A data file is missing, empty or malformed; the message says where and what."""


def _rows_tsv(path: Path, required: list[str]):
    path = Path(path)
    if not path.is_file():
        raise DataFileError(f"{path}: file not found")
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
        header = next(reader, None)
        if not header:
            raise DataFileError(f"{path}: empty file (expected a header with {required})")
        missing = [c for c in required if c not in header]
        if missing:
            raise DataFileError(f"{path}, line 1: missing column(s) {missing}; header has {header}")
        index = {c: header.index(c) for c in required}
        for line, row in enumerate(reader, start=2):
            if len(row) < len(header):
                raise DataFileError(f"{path}, line {line}: {len(row)} fields, expected {len(header)}")
            yield line, {c: row[i] for c, i in index.items()}


def _rows_jsonl(path: Path, required: list[list[str]]):
    """`required`: per field, the accepted names (first found wins)."""
    path = Path(path)
    if not path.is_file():
        raise DataFileError(f"{path}: file not found")
    seen = False
    with path.open(encoding="utf-8") as handle:
        for line, text in enumerate(handle, start=1):
            if not text.strip():
                continue
            seen = True
            try:
                record = json.loads(text)
            except json.JSONDecodeError as err:
                raise DataFileError(f"{path}, line {line}: not valid JSON ({err.msg})") from None
            row = {}
            for names in required:
                found = next((n for n in names if n in record), None)
                if found is None:
                    raise DataFileError(f"{path}, line {line}: missing field {' or '.join(names)}")
                row[names[0]] = record[found]
            yield line, row
    if not seen:
        raise DataFileError(f"{path}: empty file")


def _to_split(name, path, rows, label_names, label_column, a, b, collapse=None, skip=()) -> Split:
    text_a, text_b, labels = [], [], []
    for line, row in rows:
        label = str(row[label_column]).strip()
        if label in skip:
            continue
        if label not in label_names:
            raise DataFileError(f"{path}, line {line}: label {label!r} is not one of {label_names}")
        text_a.append(row[a])
        text_b.append(row[b])
        labels.append(label_names.index(label))
    if not labels:
        raise DataFileError(f"{path}: no labelled rows")
    return Split(name, text_a, text_b, labels, list(label_names), collapse)


def read_mnli(path, name="mnli") -> Split:
    rows = _rows_tsv(path, ["sentence1", "sentence2", "gold_label"])
    # MNLI dev rows without annotator agreement have gold_label "-": the GLUE loaders drop them.
    return _to_split(name, path, rows, list(spec("nli").labels), "gold_label",
                     "sentence1", "sentence2", skip=("-",))


def read_hans(path, name="hans") -> Split:
    rows = _rows_tsv(path, ["gold_label", "sentence1", "sentence2"])
    return _to_split(name, path, rows, HANS_LABELS, "gold_label", "sentence1", "sentence2",
                     collapse=HANS_COLLAPSE)


def read_qqp(path, name="qqp") -> Split:
    rows = _rows_tsv(path, ["question1", "question2", "is_duplicate"])
    return _to_split(name, path, rows, ["0", "1"], "is_duplicate", "question1", "question2")


def read_paws(path, name="paws") -> Split:
    rows = _rows_tsv(path, ["sentence1", "sentence2", "label"])
    return _to_split(name, path, rows, ["0", "1"], "label", "sentence1", "sentence2")


def read_fever(path, name="fever") -> Split:
    """Processed FEVER (claim, evidence, gold_label); pairs are (evidence, claim)."""
    rows = _rows_jsonl(path, [["claim"], ["evidence", "evidence_sentence"], ["gold_label", "label"]])
    return _to_split(name, path, rows, list(spec("factcheck").labels), "gold_label",
                     "evidence", "claim")


def read_symmetric(path, name="symmetric") -> Split:
    """FEVER-Symmetric v0.1 (claim, evidence_sentence, label) or v0.2 (claim, evidence, gold_label)."""
    rows = _rows_jsonl(path, [["claim"], ["evidence", "evidence_sentence"], ["gold_label", "label"]])
    return _to_split(name, path, rows, SYMMETRIC_LABELS, "gold_label", "evidence", "claim",
                     collapse=SYMMETRIC_COLLAPSE)


def _relabel(split: Split, names: list[str]) -> Split:
    """Give a split the model's label names (binary QQP/PAWS files use "0"/"1")."""
    return Split(split.name, split.text_a, split.text_b, split.labels, names, split.collapse)


def load_local(task: str, folder: str | Path, ood_train: bool = False) -> TaskData:
    root = Path(folder) / task
    if not root.is_dir():
        raise DataFileError(f"{root}: folder not found (data.path must hold {task}/, see srnets_lib/data/local.py)")
    labels = list(spec(task).labels)
    if task == "nli":
        train, dev = read_mnli(root / "train.tsv", "train"), read_mnli(root / "dev_matched.tsv", "dev")
        ood = {"hans": read_hans(root / "heuristics_evaluation_set.txt")}
        extra = lambda: _hans_as_mnli(read_hans(root / "heuristics_train_set.txt"))  # noqa: E731
    elif task == "paraphrase":
        train = _relabel(read_qqp(root / "train.tsv", "train"), labels)
        dev = _relabel(read_qqp(root / "dev.tsv", "dev"), labels)
        ood = {"paws_qqp": _relabel(read_paws(root / "paws_qqp" / "dev_and_test.tsv", "paws_qqp"), labels),
               "paws_wiki": _relabel(read_paws(root / "paws_wiki" / "test.tsv", "paws_wiki"), labels)}
        extra = lambda: _relabel(read_paws(root / "paws_wiki" / "train.tsv"), labels)  # noqa: E731
    elif task == "factcheck":
        train, dev = read_fever(root / "fever.train.jsonl", "train"), read_fever(root / "fever.dev.jsonl", "dev")
        ood = {"symmetric_v1": read_symmetric(root / "symmetric_v0.1_fever_symmetric_generated.jsonl", "symmetric_v1"),
               "symmetric_v2": read_symmetric(root / "symmetric_v0.2_fever_symmetric_test.jsonl", "symmetric_v2")}
        extra = lambda: _symmetric_dev_x10(root / "symmetric_v0.2_fever_symmetric_dev.jsonl")  # noqa: E731
    else:
        raise ValueError(f"unknown task {task!r}")
    if ood_train:
        train = train.concat(extra(), "train+ood")
    return TaskData(task, labels, spec(task).metric, train, dev, ood, description=f"local files in {root}")


def _hans_as_mnli(split: Split) -> Split:
    """HANS train rows in MNLI's three-class space for section 4.5's mixture.

    The paper does not say how two-class HANS labels enter three-class training; we map
    non-entailment to contradiction (an assumption; evaluation collapses both anyway)."""
    labels = [0 if y == 0 else 2 for y in split.labels]
    return Split("hans_train", split.text_a, split.text_b, labels, list(spec("nli").labels))


def _symmetric_dev_x10(path: Path) -> Split:
    """Section 4.5 / appendix B.3.3: Symmetric v2 dev copied 10 times as OOD training data."""
    dev = read_symmetric(path, "symmetric_v2_dev")
    copies = Split("symmetric_v2_dev_x10", dev.text_a * 10, dev.text_b * 10,
                   list(dev.labels) * 10, list(spec("factcheck").labels))
    return copies
