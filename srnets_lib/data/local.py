"""Loaders for the original files in the formats their datasets distribute (GLUE tsv, HANS txt,
PAWS tsv, FEVER and FEVER-Symmetric jsonl), with errors naming file and line.

Folder layout under `data.path` (relative paths resolve against the project root; with
`data.source: hub` the folder defaults to `data/` and holds only the starred files, the
splits the hub does not have in the paper's form):
  nli/        train.tsv, dev_matched.tsv (MNLI, GLUE), *heuristics_evaluation_set.txt,
              *heuristics_train_set.txt (HANS; the train set only for ood_train)
  paraphrase/ train.tsv, dev.tsv (QQP, GLUE), *paws_qqp/dev_and_test.tsv (PAWS-qqp's evaluation
              file, the whole generated file: also found as dev.tsv), *paws_qqp/train.tsv (ood_train),
              paws_wiki/test.tsv, paws_wiki/train.tsv (ood_train)
  factcheck/  *fever.train.jsonl, *fever.dev.jsonl (processed FEVER),
              *symmetric_v0.1_fever_symmetric_generated.jsonl,
              *symmetric_v0.2_fever_symmetric_test.jsonl, *symmetric_v0.2_fever_symmetric_dev.jsonl
Each file is also found under its distribution's name or in the authors' data/ layout (ALIASES),
and each is checked against its published row count as it is read (PUBLISHED_ROWS; the loaders'
`sizes` flag, DataConfig.check_sizes).
"""

from __future__ import annotations

from pathlib import Path

from srnets_lib import paths
from srnets_lib.data.formats import (DataFileError, decoded, read_fever, read_hans, read_mnli, read_paws,  # noqa: F401
                                     read_qqp, read_symmetric)
from srnets_lib.data.splits import Split, TaskData
from srnets_lib.data.tasks import spec

DEFAULT_FOLDER = "data"  # data.path when data.source=hub leaves it unset
# Where each dataset comes from: the hint in a missing file's error. HUB_HINTS: the datasets the
# hub also serves (data.source: hub), suggested only where that serves the run (hint())
SOURCES = {
    "MNLI": "GLUE (gluebenchmark.com/tasks)",
    "HANS": "github.com/tommccoy1/hans (MIT licence)",
    "QQP": "GLUE (gluebenchmark.com/tasks)",
    "PAWS-qqp": "github.com/google-research-datasets/paws: its qqp_generate_data.py (python2.7) "
                "builds it from Quora's quora_duplicate_questions.tsv",
    "PAWS-wiki": "github.com/google-research-datasets/paws (labeled_final)",
    "FEVER": "github.com/TalSchuster/FeverSymmetric (processed FEVER train/dev)",
    "FEVER-Symmetric": "github.com/TalSchuster/FeverSymmetric",
    "WikiText-103": "the raw WikiText-103 (wikitext-103-raw-v1.zip)",
}
HUB_HINTS = {"MNLI": "nyu-mll/glue", "QQP": "nyu-mll/glue", "PAWS-wiki": "google-research-datasets/paws",
             "WikiText-103": "Salesforce/wikitext"}


def hint(dataset: str, hub: bool = True) -> str:
    """Where to get `dataset`; with `hub`, also that the hub serves it (data.source: hub). The
    paraphrase task's hint never offers the hub where the run reads the authors' bias predictions:
    they are keyed by QQP's pair ids, which only GLUE's tsv holds."""
    also = f", or use data.source=hub ({HUB_HINTS[dataset]})" if hub and dataset in HUB_HINTS else ""
    return SOURCES[dataset] + also


def data_folder(path: str | Path | None) -> Path:
    """`data.path` as an absolute folder: a relative path is taken from the current directory
    if it exists there, else from the project root (notebooks run in book/, Ray workers
    anywhere), which is also where a missing folder is expected."""
    folder = paths.project_file(path or DEFAULT_FOLDER)
    if folder.is_absolute():
        return folder
    return folder.resolve() if folder.exists() else paths.PROJECT_ROOT / folder


# The same files under the names their distributions give them, or in the authors' data/ folder
# (github.com/llyx97/sparse-and-robust-PLM, its README's layout: MNLI/, QQP/, fever/, sym1/, sym2/),
# relative to the data folder; ours (<task>/<file>) is looked for first. PAWS-qqp's evaluation file is
# the whole generated dev_and_test.tsv, 677 pairs (appendix table 1: PAWS-qqp dev 677, no test set;
# table 2's 28.2% is 191/677): the authors keep it as QQP/paws_qqp/dev.tsv and score it with
# mode='dev' (run_glue.py). Under either name a file of another size (a split of it, or a file the
# generator leaves behind when it fails) is refused by the size check (PUBLISHED_ROWS).
ALIASES = {
    "nli/train.tsv": ["MNLI/train.tsv"],
    "nli/dev_matched.tsv": ["MNLI/dev_matched.tsv"],
    "nli/heuristics_evaluation_set.txt": ["heuristics_evaluation_set.txt", "hans/heuristics_evaluation_set.txt",
                                          "MNLI/hans/heuristics_evaluation_set.txt"],
    "nli/heuristics_train_set.txt": ["heuristics_train_set.txt", "hans/heuristics_train_set.txt",
                                     "MNLI/hans/heuristics_train_set.txt"],
    "paraphrase/train.tsv": ["QQP/train.tsv"],
    "paraphrase/dev.tsv": ["QQP/dev.tsv"],
    "paraphrase/paws_qqp/dev_and_test.tsv": ["paraphrase/paws_qqp/dev.tsv", "QQP/paws_qqp/dev.tsv",
                                             "QQP/paws_qqp/dev_and_test.tsv", "paws_qqp/output/dev_and_test.tsv",
                                             "paws_qqp/dev_and_test.tsv", "paws_qqp/dev.tsv"],
    "paraphrase/paws_qqp/train.tsv": ["paws_qqp/output/train.tsv", "paws_qqp/train.tsv", "QQP/paws_qqp/train.tsv"],
    "paraphrase/paws_wiki/test.tsv": ["final/test.tsv", "paws_wiki/test.tsv", "QQP/paws_wiki/test.tsv"],
    "paraphrase/paws_wiki/train.tsv": ["final/train.tsv", "paws_wiki/train.tsv", "QQP/paws_wiki/train.tsv"],
    "factcheck/fever.train.jsonl": ["fever.train.jsonl", "fever/fever.train.jsonl"],
    "factcheck/fever.dev.jsonl": ["fever.dev.jsonl", "fever.dev.json", "fever/fever.dev.jsonl"],
    "factcheck/symmetric_v0.1_fever_symmetric_generated.jsonl": [
        "symmetric_v0.1/fever_symmetric_generated.jsonl", "factcheck/symmetric_v0.1/fever_symmetric_generated.jsonl",
        "fever/sym1/test.jsonl"],
    "factcheck/symmetric_v0.2_fever_symmetric_test.jsonl": [
        "symmetric_v0.2/fever_symmetric_test.jsonl", "factcheck/symmetric_v0.2/fever_symmetric_test.jsonl",
        "fever/sym2/test.jsonl"],
    "factcheck/symmetric_v0.2_fever_symmetric_dev.jsonl": [
        "symmetric_v0.2/fever_symmetric_dev.jsonl", "factcheck/symmetric_v0.2/fever_symmetric_dev.jsonl",
        "fever/sym2/dev.jsonl"],
}


PAPER_TASKS = ("nli", "paraphrase", "factcheck")  # the folders (and tasks) ALIASES and expected_files cover

# Each file's labelled rows as published (appendix table 1), keyed by its name under the data folder:
# a file of another count is refused as it is read (check_rows), so a split, truncated or wrong file
# is never taken for the paper's. QQP: the rows of GLUE's tsv as the authors' processor reads them
# (rows with too few fields skipped) and as the hub's copy holds them, 363,846 and 40,430; the
# table prints 363,849 and 40,432. data.check_sizes: false reads a file of any size.
PUBLISHED_ROWS = {
    "nli/train.tsv": (392_702,), "nli/dev_matched.tsv": (9_815,),
    "nli/heuristics_evaluation_set.txt": (30_000,), "nli/heuristics_train_set.txt": (30_000,),
    "paraphrase/train.tsv": (363_846, 363_849), "paraphrase/dev.tsv": (40_430, 40_432),
    "paraphrase/paws_qqp/dev_and_test.tsv": (677,), "paraphrase/paws_qqp/train.tsv": (11_988,),
    "paraphrase/paws_wiki/test.tsv": (8_000,), "paraphrase/paws_wiki/train.tsv": (49_401,),
    "factcheck/fever.train.jsonl": (242_911,), "factcheck/fever.dev.jsonl": (16_664,),
    "factcheck/symmetric_v0.1_fever_symmetric_generated.jsonl": (717,),
    "factcheck/symmetric_v0.2_fever_symmetric_test.jsonl": (712,),
    "factcheck/symmetric_v0.2_fever_symmetric_dev.jsonl": (708,),
}


# The reader of each file, as its loader reads it: the pre-start check counts the labelled rows a
# run would count (data/inputs.py), one pass per file.
READERS = {
    "nli/train.tsv": read_mnli, "nli/dev_matched.tsv": read_mnli,
    "nli/heuristics_evaluation_set.txt": read_hans, "nli/heuristics_train_set.txt": read_hans,
    "paraphrase/train.tsv": read_qqp, "paraphrase/dev.tsv": read_qqp,
    "paraphrase/paws_qqp/dev_and_test.tsv": read_paws, "paraphrase/paws_qqp/train.tsv": read_paws,
    "paraphrase/paws_wiki/test.tsv": read_paws, "paraphrase/paws_wiki/train.tsv": read_paws,
    "factcheck/fever.train.jsonl": read_fever, "factcheck/fever.dev.jsonl": read_fever,
    "factcheck/symmetric_v0.1_fever_symmetric_generated.jsonl": read_symmetric,
    "factcheck/symmetric_v0.2_fever_symmetric_test.jsonl": read_symmetric,
    "factcheck/symmetric_v0.2_fever_symmetric_dev.jsonl": read_symmetric,
}


def check_rows(found_rows: int, expected: tuple[int, ...], where, check: bool = True) -> None:
    """Refuse a file or hub split whose labelled rows are not its published count (`expected`),
    naming it, both counts and the switch that reads it anyway."""
    if check and expected and found_rows not in expected:
        published = " or ".join(f"{n:,}" for n in expected)
        raise DataFileError(f"{where}: {found_rows:,} labelled rows, the published file has {published}; "
                            "is it the whole file? (data.check_sizes: false reads it all the same)")


def candidates(path: Path) -> list[Path]:
    """`path` (<data folder>/<task>/[paws_qqp|paws_wiki/]<file>) and where else the same file
    may be (ALIASES, under the data folder)."""
    task = next((p for p in path.parents if p.name in PAPER_TASKS), None)
    if task is None:  # another dataset's folder (WikiText-103, GLUE tasks of Part II): no aliases
        return [path]
    return [path, *(task.parent / alias for alias in ALIASES.get(path.relative_to(task.parent).as_posix(), []))]


def found(path: Path) -> Path | None:
    """The first of `path` and its aliases that exists."""
    return next((p for p in candidates(path) if p.is_file()), None)


def required(path: Path, dataset: str) -> Path:
    """`path` or an alias of it (ALIASES), or one line naming the dataset, the paths looked at
    and where to get it."""
    hit = found(path)
    if hit is None:
        raise DataFileError(not_found(dataset, path))
    return hit


def not_found(dataset: str, path: Path, hub: bool = False) -> str:
    """One line: the dataset, the paths looked at and where to get it (hint: `hub` says whether the
    hub would serve the run)."""
    others = [str(p) for p in candidates(path)[1:]]
    also = f" (nor {', '.join(others)})" if others else ""
    return f"{dataset}: {path} not found{also}; get it from {hint(dataset, hub)}"


def _relabel(split: Split, names: list[str]) -> Split:
    """Give a split the model's label names (binary QQP/PAWS files use "0"/"1")."""
    return Split(split.name, split.text_a, split.text_b, split.labels, names, split.collapse, split.notes,
                 split.ids)


def read(root: Path, file: str, dataset: str, reader, name: str, sizes: bool = False) -> Split:
    """<root>/<file> (root: <data folder>/<task>; or an alias of it) read by `reader` as the split
    `name`; with `sizes`, refused unless it holds its published rows (PUBLISHED_ROWS)."""
    path = root / file
    hit = required(path, dataset)
    split = reader(hit, name)
    check_rows(len(split), PUBLISHED_ROWS.get(path.relative_to(root.parent).as_posix(), ()), hit, sizes)
    return split


def _paws(root: Path, file: str, dataset: str, name: str, sizes: bool) -> Split:
    return _relabel(read(root, file, dataset, read_paws, name, sizes), list(spec("paraphrase").labels))


# The splits both sources take from files (the hub lacks them in the paper's form).

def hans(root: Path, sizes: bool = False) -> Split:
    """HANS evaluation set (section 4.1), `root` = <data.path>/nli."""
    return read(root, "heuristics_evaluation_set.txt", "HANS", read_hans, "hans", sizes)


def hans_train(root: Path, sizes: bool = False) -> Split:
    """HANS train rows in MNLI's three-class space for section 4.5's mixture.

    The paper does not say how two-class HANS labels enter three-class training; we map
    non-entailment to contradiction (an assumption; evaluation collapses both anyway)."""
    split = read(root, "heuristics_train_set.txt", "HANS", read_hans, "hans_train", sizes)
    labels = [0 if y == 0 else 2 for y in split.labels]
    return Split("hans_train", split.text_a, split.text_b, labels, list(spec("nli").labels))


def paws_qqp_train(root: Path, sizes: bool = False) -> Split:
    """PAWS-qqp train, part of section 4.5's QQP mixture (the authors' ood/qqp scripts mix
    QQP, PAWS-qqp and PAWS-wiki train), `root` = <data.path>/paraphrase."""
    return _paws(root, "paws_qqp/train.tsv", "PAWS-qqp", "paws_qqp_train", sizes)


# One file a run reads from the data folder, named before it is read: the pre-start check's unit
# (data/inputs.py). `ood`: the OOD set it is, or None.
Expected = tuple[str, str, "str | None"]


def expected_files(task: str, source: str, ood_train: bool = False) -> list[Expected]:
    """The files a run of `task` reads from the data folder (source local or hub), without
    reading them: (dataset, path under the data folder, the OOD set it is or None)."""
    local = source == "local"
    files = {
        "nli": [("MNLI", "nli/train.tsv", None), ("MNLI", "nli/dev_matched.tsv", None)] * local
        + [("HANS", "nli/heuristics_evaluation_set.txt", "hans")]
        + [("HANS", "nli/heuristics_train_set.txt", None)] * ood_train,
        "paraphrase": [("QQP", "paraphrase/train.tsv", None), ("QQP", "paraphrase/dev.tsv", None),
                       ("PAWS-wiki", "paraphrase/paws_wiki/test.tsv", "paws_wiki")] * local
        + [("PAWS-qqp", "paraphrase/paws_qqp/dev_and_test.tsv", "paws_qqp")]
        + [("PAWS-qqp", "paraphrase/paws_qqp/train.tsv", None)] * ood_train
        + [("PAWS-wiki", "paraphrase/paws_wiki/train.tsv", None)] * (ood_train and local),
        "factcheck": [("FEVER", "factcheck/fever.train.jsonl", None), ("FEVER", "factcheck/fever.dev.jsonl", None),
                      ("FEVER-Symmetric", "factcheck/symmetric_v0.1_fever_symmetric_generated.jsonl", "symmetric_v1"),
                      ("FEVER-Symmetric", "factcheck/symmetric_v0.2_fever_symmetric_test.jsonl", "symmetric_v2")]
        + [("FEVER-Symmetric", "factcheck/symmetric_v0.2_fever_symmetric_dev.jsonl", None)] * ood_train,
    }
    return files.get(task, [])


# OOD sets a run may go without (the user must generate them): PAWS-qqp
OPTIONAL_OOD = ("paws_qqp",)


def mix(train: Split, extra: list[Split], train_size: int | None = None) -> Split:
    """The ID training set (its first `train_size` rows) followed by section 4.5's OOD training
    data (each part capped at `train_size` too)."""
    mixed = train.head(train_size)
    for part in extra:
        mixed = mixed.concat(part.head(train_size), "train+ood")
    return mixed


def add_paws_qqp(ood: dict[str, Split], root: Path, notes: list[str], missing: dict[str, str],
                 sizes: bool = False) -> None:
    """PAWS-qqp (section 4.1) into `ood` when its file exists, else `missing` says why: the user
    has to generate it from QQP, so a sweep starts without it only when told to skip it
    (execution.skip_ood: data/inputs.py), and `python -m srnets_lib evaluate` adds it later."""
    path = root / "paws_qqp" / "dev_and_test.tsv"
    if found(path) is not None:
        ood["paws_qqp"] = _paws(root, "paws_qqp/dev_and_test.tsv", "PAWS-qqp", "paws_qqp", sizes)
    else:
        missing["paws_qqp"] = f"{path} not found ({SOURCES['PAWS-qqp']})"
        notes.append(f"PAWS-qqp skipped: {missing['paws_qqp']}")


def load_factcheck(root: Path, ood_train: bool = False, train_size: int | None = None, sizes: bool = False) -> TaskData:
    """FEVER and FEVER-Symmetric v1/v2, all from files (`root` = <data.path>/factcheck)."""
    train = read(root, "fever.train.jsonl", "FEVER", read_fever, "train", sizes)
    dev = read(root, "fever.dev.jsonl", "FEVER", read_fever, "dev", sizes)
    ood = {name: read(root, file, "FEVER-Symmetric", read_symmetric, name, sizes) for name, file in
           (("symmetric_v1", "symmetric_v0.1_fever_symmetric_generated.jsonl"),
            ("symmetric_v2", "symmetric_v0.2_fever_symmetric_test.jsonl"))}
    extra = []
    if ood_train:  # section 4.5 / appendix B.3.3: Symmetric v2 dev copied 10 times
        sym = read(root, "symmetric_v0.2_fever_symmetric_dev.jsonl", "FEVER-Symmetric", read_symmetric,
                   "symmetric_v2_dev", sizes)
        extra = [Split("symmetric_v2_dev_x10", sym.text_a * 10, sym.text_b * 10, list(sym.labels) * 10,
                       list(spec("factcheck").labels))]
    return task_data("factcheck", mix(train, extra, train_size), dev, ood, f"local files in {root}")


def task_data(task: str, train: Split, dev: Split, ood: dict[str, Split], source: str,
              notes: list[str] = (), missing: dict[str, str] | None = None) -> TaskData:
    """TaskData whose description names the source and every note (skipped rows or sets)."""
    all_notes = [n for s in (train, dev, *ood.values()) for n in s.notes] + list(notes)
    return TaskData(task, list(spec(task).labels), spec(task).metric, train, dev, ood,
                    description="; ".join([source, *all_notes]), ood_metric=spec(task).ood_metric,
                    ood_missing=dict(missing or {}))


def load_local(task: str, folder: str | Path | None, ood_train: bool = False,
               train_size: int | None = None, sizes: bool = False) -> TaskData:
    """Every split of `task` from the files under `folder` (layout at the top of this module);
    with `sizes`, each file checked against its published row count."""
    root = data_folder(folder) / spec(task).name
    labels = list(spec(task).labels)
    notes: list[str] = []
    missing: dict[str, str] = {}
    if task == "factcheck":
        return load_factcheck(root, ood_train, train_size, sizes)
    if task == "nli":
        train = read(root, "train.tsv", "MNLI", read_mnli, "train", sizes)
        dev = read(root, "dev_matched.tsv", "MNLI", read_mnli, "dev", sizes)
        ood = {"hans": hans(root, sizes)}
        extra = lambda: [hans_train(root, sizes)]  # noqa: E731
    else:
        train = _relabel(read(root, "train.tsv", "QQP", read_qqp, "train", sizes), labels)
        dev = _relabel(read(root, "dev.tsv", "QQP", read_qqp, "dev", sizes), labels)
        ood: dict[str, Split] = {}
        add_paws_qqp(ood, root, notes, missing, sizes)
        ood["paws_wiki"] = _paws(root, "paws_wiki/test.tsv", "PAWS-wiki", "paws_wiki", sizes)
        extra = lambda: [paws_qqp_train(root, sizes), _paws(root, "paws_wiki/train.tsv", "PAWS-wiki",  # noqa: E731
                                                            "paws_train", sizes)]
    train = mix(train, extra() if ood_train else [], train_size)
    return task_data(task, train, dev, ood, f"local files in {root}", notes, missing)
