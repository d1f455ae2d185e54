"""The original files' formats, read with errors naming the file and the line: GLUE's MNLI and QQP
tsv, HANS txt, PAWS tsv, processed FEVER and FEVER-Symmetric jsonl. local.py finds the files."""

from __future__ import annotations

import csv
import json
import sys
from contextlib import contextmanager
from pathlib import Path

from srnets_lib.data.splits import Split
from srnets_lib.data.tasks import HANS_COLLAPSE, HANS_LABELS, SYMMETRIC_COLLAPSE, SYMMETRIC_LABELS, spec

csv.field_size_limit(sys.maxsize)


class DataFileError(ValueError):
    """A data file is missing, empty or malformed; the message says where and what."""


@contextmanager
def decoded(path: Path):
    """Reading `path` as text: bytes that are not UTF-8 raise one line naming the file."""
    try:
        yield
    except UnicodeDecodeError as err:
        raise DataFileError(f"{path}: not UTF-8 text ({err.reason}: bytes {err.object[err.start:err.end]!r}); "
                            "save it as UTF-8") from None


def _rows_tsv(path: Path, required: list[str], short_rows: list[int] | None = None):
    """Rows of a tab-separated file with a header. Rows with fewer fields than the header
    raise, or, when `short_rows` is a list, are skipped and their line numbers appended."""
    path = Path(path)
    if not path.is_file():
        raise DataFileError(f"{path}: file not found")
    with decoded(path), path.open(newline="", encoding="utf-8") as handle:
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
                if short_rows is None:
                    raise DataFileError(f"{path}, line {line}: {len(row)} fields, expected {len(header)}")
                short_rows.append(line)
                continue
            yield line, {c: row[i] for c, i in index.items()}


def _rows_jsonl(path: Path, required: list[list[str]]):
    """`required`: per field, the accepted names (first found wins)."""
    path = Path(path)
    if not path.is_file():
        raise DataFileError(f"{path}: file not found")
    seen = False
    with decoded(path), path.open(encoding="utf-8") as handle:
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


def _to_split(name, path, rows, label_names, label_column, a, b, collapse=None, skip=(), ids=None,
              subsets=()) -> Split:
    """`ids`: None, a column holding each example's integer id, or "line": its 0-based row
    number (FEVER's jsonl, as the authors' processor numbers it). `subsets`: columns kept for
    breakdowns (Split.subsets)."""
    text_a, text_b, labels, keys = [], [], [], []
    groups: dict[str, list] = {column: [] for column in subsets}
    for number, (line, row) in enumerate(rows):
        label = str(row[label_column]).strip()
        if label in skip:
            continue
        if label not in label_names:
            raise DataFileError(f"{path}, line {line}: label {label!r} is not one of {label_names}")
        text_a.append(row[a])
        text_b.append(row[b])
        labels.append(label_names.index(label))
        for column in subsets:
            groups[column].append(row[column])
        if ids == "line":
            keys.append(number)
        elif ids is not None:
            try:
                keys.append(int(row[ids]))
            except ValueError:
                raise DataFileError(f"{path}, line {line}: {ids} {row[ids]!r} is not an integer id") from None
    if not labels:
        raise DataFileError(f"{path}: no labelled rows")
    return Split(name, text_a, text_b, labels, list(label_names), collapse, ids=keys if ids else None, subsets=groups)


def read_mnli(path, name="mnli") -> Split:
    rows = _rows_tsv(path, ["index", "sentence1", "sentence2", "gold_label"])
    # MNLI dev rows without annotator agreement have gold_label "-": the GLUE loaders drop them.
    return _to_split(name, path, rows, list(spec("nli").labels), "gold_label",
                     "sentence1", "sentence2", skip=("-",), ids="index")


def read_hans(path, name="hans") -> Split:
    rows = _rows_tsv(path, ["gold_label", "sentence1", "sentence2", "heuristic"])
    return _to_split(name, path, rows, HANS_LABELS, "gold_label", "sentence1", "sentence2",
                     collapse=HANS_COLLAPSE, subsets=("heuristic",))


def read_qqp(path, name="qqp") -> Split:
    """GLUE QQP. Its train/dev files hold a few rows with fewer fields than the header; the
    authors' processor (transformers' QqpProcessor) skips them, so we do, and say how many."""
    short: list[int] = []
    rows = _rows_tsv(path, ["id", "question1", "question2", "is_duplicate"], short_rows=short)
    split = _to_split(name, path, rows, ["0", "1"], "is_duplicate", "question1", "question2", ids="id")
    if short:
        split.notes.append(f"skipped {len(short)} short rows in {Path(path).name} "
                           f"(lines {', '.join(map(str, short[:5]))}{', ...' if len(short) > 5 else ''})")
    return split


def read_paws(path, name="paws") -> Split:
    rows = _rows_tsv(path, ["sentence1", "sentence2", "label"])
    return _to_split(name, path, rows, ["0", "1"], "label", "sentence1", "sentence2")


def read_fever(path, name="fever") -> Split:
    """Processed FEVER (claim, evidence, gold_label); pairs are (claim, evidence), the authors'
    order (their FeverProcessor); ids are row numbers."""
    rows = _rows_jsonl(path, [["claim"], ["evidence", "evidence_sentence"], ["gold_label", "label"]])
    return _to_split(name, path, rows, list(spec("factcheck").labels), "gold_label",
                     "claim", "evidence", ids="line")


def read_symmetric(path, name="symmetric") -> Split:
    """FEVER-Symmetric v0.1 (claim, evidence_sentence, label) or v0.2 (claim, evidence, gold_label);
    pairs are (claim, evidence) as for FEVER."""
    rows = _rows_jsonl(path, [["claim"], ["evidence", "evidence_sentence"], ["gold_label", "label"]])
    return _to_split(name, path, rows, SYMMETRIC_LABELS, "gold_label", "claim", "evidence",
                     collapse=SYMMETRIC_COLLAPSE)
