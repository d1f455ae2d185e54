"""TAMT's downstream data (section 4.1) in miniature: a few rows of each GLUE task in GLUE's
distributed tsv formats, SQuAD v1.1 json files, and the same examples as the hub's parquet
datasets (`nyu-mll/glue`, `rajpurkar/squad`) with their column schemas, for the loaders' tests.

    python tests/transfer_fixture.py /tmp/transfer     # writes /tmp/transfer/glue/... and /tmp/transfer/squad/...
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from paper_fixture import MNLI_HEADER

# task -> our split -> (text_a, text_b or None, label: our class index, or STS-B's score)
GLUE_ROWS = {
    "cola": {"train": [("Our friends won't buy this analysis, let alone the next one we propose.", None, 1),
                       ("They drank the pub.", None, 0),
                       ("The more we study verbs, the crazier they get.", None, 1)],
             "dev": [("The sailors rode the breeze clear of the rocks.", None, 1),
                     ("Bill whistled past the house the.", None, 0)]},
    "sst2": {"train": [("hide new secretions from the parental units ", None, 0),
                       ("that loves its characters and communicates something rather beautiful ", None, 1)],
             "dev": [("it 's a charming and often affecting journey . ", None, 1)]},
    "rte": {"train": [("No weapons were found in the building.", "Weapons were found in the building.", 1),
                      ("The museum opened in 1990 in Lyon.", "The museum is in Lyon.", 0)],
            "dev": [("Ann sold her \"old\" car to Tom.", "Tom owns a car.", 0)]},
    "mrpc": {"train": [("The company posted a profit of $1.2 billion.", "Profit at the company was $1.2 billion.", 1),
                       ("Shares fell 3 percent on Monday.", "The storm hit the coast on Monday.", 0)],
             "dev": [("He said the vote would be held today.", "The vote will take place today, he said.", 1)]},
    "stsb": {"train": [("A plane is taking off.", "An air plane is taking off.", 5.0),
                       ("A man is playing a large flute.", "A man is playing a flute.", 3.8),
                       ("A cat sleeps.", "A car drives by.", 0.25)],
             "dev": [("A woman is slicing an onion.", "A woman is cutting an onion.", 4.2)]},
    "mnli": {"train": [("The cat sat on the mat.", "A cat sat.", 0), ("He left at noon.", "He stayed all day.", 2),
                       ("She reads every night.", "She reads novels.", 1)],
             "dev": [("The train was late.", "The train arrived after schedule.", 0)],
             "dev_mismatched": [("Prices rose in May.", "Prices fell in May.", 2),
                                ("The film was long.", "The film lasted three hours.", 1)]},
}
GLUE_FILES = {"dev": "dev.tsv", "train": "train.tsv"}
MNLI_FILES = {"train": "train.tsv", "dev": "dev_matched.tsv", "dev_mismatched": "dev_mismatched.tsv"}
LABELS = {"rte": ["entailment", "not_entailment"], "mnli": ["entailment", "neutral", "contradiction"]}
STSB_HEADER = ["index", "genre", "filename", "year", "old_index", "source1", "source2", "sentence1", "sentence2", "score"]


def glue_file_rows(task: str, rows: list[tuple]) -> list[list]:
    """`rows` in the fields of `task`'s GLUE tsv, header first (CoLA's files have none)."""
    if task == "cola":  # source, label, the original acceptability mark, sentence
        return [["gj04", y, "" if y else "*", a] for a, _, y in rows]
    if task == "sst2":
        return [["sentence", "label"]] + [[a, y] for a, _, y in rows]
    if task == "rte":
        return [["index", "sentence1", "sentence2", "label"]] + [[i, a, b, LABELS["rte"][y]]
                                                                  for i, (a, b, y) in enumerate(rows)]
    if task == "mrpc":  # the header starts with a byte-order mark, as in GLUE's copy of the MSR files
        return [["\ufeffQuality", "#1 ID", "#2 ID", "#1 String", "#2 String"]] + [
            [y, 700 + 2 * i, 701 + 2 * i, a, b] for i, (a, b, y) in enumerate(rows)]
    if task == "stsb":
        return [STSB_HEADER] + [[i, "main-captions", "MSRvid", "2012test", f"{i:04d}", "none", "none", a, b, f"{y:.3f}"]
                                for i, (a, b, y) in enumerate(rows)]
    return [MNLI_HEADER] + [[i, i, f"{i}e", "fiction", "( x )", "( y )", "(ROOT x)", "(ROOT y)", a, b,
                             LABELS["mnli"][y], LABELS["mnli"][y]] for i, (a, b, y) in enumerate(rows)]


def write_glue(folder: Path) -> Path:
    """<folder>/glue/<TASK>/*.tsv for every GLUE task TAMT uses; returns `folder`."""
    from srnets_lib.data.glue import GLUE_FOLDERS

    for task, splits in GLUE_ROWS.items():
        files = MNLI_FILES if task == "mnli" else GLUE_FILES
        for split, rows in splits.items():
            path = folder / "glue" / GLUE_FOLDERS[task] / files[split]
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text("".join("\t".join(map(str, r)) + "\n" for r in glue_file_rows(task, rows)), encoding="utf-8")
    return folder


def _marked(context: str, question: str, qid: str, *answers: str) -> dict:
    return {"id": qid, "question": question,
            "answers": [{"text": a, "answer_start": context.index(a)} for a in answers]}


RHINE = ("The Rhine rises in the Swiss Alps and flows to the North Sea. Its total length is about "
         "1,230 kilometres, and it passes Basel, Strasbourg, Cologne and Rotterdam.")
CURIE = "Marie Curie won the Nobel Prize in Physics in 1903 and the Nobel Prize in Chemistry in 1911."
FERRY = "The ferry leaves the harbour at seven o'clock and reaches the island an hour later."
# split -> [(title, context, [qa, ...])]: train questions have one answer, dev questions several
SQUAD_ARTICLES = {
    "train": [("Curie", CURIE, [_marked(CURIE, "When did Curie win the chemistry prize?", "t1", "1911"),
                                _marked(CURIE, "Which prize did Curie win in 1903?", "t2", "the Nobel Prize in Physics")]),
              ("Ferry", FERRY, [_marked(FERRY, "When does the ferry leave?", "t3", "at seven o'clock")])],
    "dev": [("Rhine", RHINE, [_marked(RHINE, "How long is the Rhine?", "d1", "about 1,230 kilometres",
                                      "1,230 kilometres", "1,230 kilometres"),
                              _marked(RHINE, "Where does the Rhine rise?", "d2", "in the Swiss Alps", "Swiss Alps")])],
}


def write_squad(folder: Path) -> Path:
    """<folder>/squad/train-v1.1.json and dev-v1.1.json (data/paragraphs/qas); returns `folder`."""
    for split, file in (("train", "train-v1.1.json"), ("dev", "dev-v1.1.json")):
        data = [{"title": title, "paragraphs": [{"context": context, "qas": qas}]}
                for title, context, qas in SQUAD_ARTICLES[split]]
        path = folder / "squad" / file
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"version": "1.1", "data": data}), encoding="utf-8")
    return folder


def _glue_hub_split(task: str, rows: list[tuple]):
    from datasets import ClassLabel, Dataset, Features, Value

    text = {"cola": ["sentence"], "sst2": ["sentence"],
            "mnli": ["premise", "hypothesis"]}.get(task, ["sentence1", "sentence2"])
    names = {"cola": ["unacceptable", "acceptable"], "sst2": ["negative", "positive"],
             "mrpc": ["not_equivalent", "equivalent"]}.get(task, LABELS.get(task))
    label = Value("float32") if task == "stsb" else ClassLabel(names=names)
    features = Features({**{c: Value("string") for c in text}, "label": label, "idx": Value("int32")})
    columns = {c: [row[k] for row in rows] for k, c in enumerate(text)}
    return Dataset.from_dict({**columns, "label": [row[2] for row in rows], "idx": list(range(len(rows)))},
                             features=features)


def glue_hub() -> dict:
    """(hub id, config) -> DatasetDict of each GLUE task, with an unlabelled test split (-1)."""
    from datasets import DatasetDict

    out = {}
    for task, splits in GLUE_ROWS.items():
        test = [("Unlabelled a.", "Unlabelled b.", -1)]
        names = ({"train": "train", "dev": "validation_matched", "dev_mismatched": "validation_mismatched"}
                 if task == "mnli" else {"train": "train", "dev": "validation"})
        hub_splits = {names[s]: _glue_hub_split(task, rows) for s, rows in splits.items()}
        hub_splits["test_matched" if task == "mnli" else "test"] = _glue_hub_split(task, test)
        out[("nyu-mll/glue", task)] = DatasetDict(hub_splits)
    return out


def squad_hub() -> dict:
    """("rajpurkar/squad", "plain_text") -> DatasetDict of train and validation, the hub's schema."""
    from datasets import Dataset, DatasetDict, Features, Sequence, Value

    features = Features({"id": Value("string"), "title": Value("string"), "context": Value("string"),
                         "question": Value("string"),
                         "answers": Sequence({"text": Value("string"), "answer_start": Value("int32")})})

    def rows(split):
        qas = [(title, context, qa) for title, context, qas in SQUAD_ARTICLES[split] for qa in qas]
        return Dataset.from_dict({
            "id": [qa["id"] for *_, qa in qas], "title": [t for t, *_ in qas], "context": [c for _, c, _ in qas],
            "question": [qa["question"] for *_, qa in qas],
            "answers": [{"text": [a["text"] for a in qa["answers"]],
                         "answer_start": [a["answer_start"] for a in qa["answers"]]} for *_, qa in qas]},
            features=features)

    return {("rajpurkar/squad", "plain_text"): DatasetDict(train=rows("train"), validation=rows("dev"))}


if __name__ == "__main__":
    target = Path(sys.argv[1]).resolve()
    write_squad(write_glue(target))
    print(target)
