"""The paper-scale path rehearsed on a CPU, as a user with the datasets follows the README: a checkout
whose data/ holds every file of both parts in its original format, laid out as the authors ship it
(the `data/` of github.com/llyx97/sparse-and-robust-PLM: MNLI/, MNLI/hans/, QQP/, QQP/paws_qqp/dev.tsv,
QQP/paws_wiki/, fever/, fever/sym1/, fever/sym2/) or under the names their distributions unpack to;
the authors' bias predictions in bias_model_preds/ beside data/, where their repository keeps them;
and, as the rehearsal has no internet, a copy of the hub datasets the runs read in hub/ (the hub
repositories' parquet layout, read through $SRNETS_HUB_MIRROR as on a GPU node without internet).
rehearsal.yaml is params/paper.yaml with only the backbone, the seeds, the sizes and the steps scaled
down: no path, bias model or data source is overridden. Texts come from the synthetic generators, so
the runs learn something.

    git clone . /tmp/rehearsal && cd /tmp/rehearsal
    python tests/paper_fixture.py .                  # data/, bias_model_preds/, hub/, rehearsal.yaml
    SRNETS_HUB_MIRROR=hub make book PARAMS=rehearsal.yaml
"""

from __future__ import annotations

import json
import pickle
import sys
from pathlib import Path

import numpy as np

MNLI_HEADER = ["index", "promptID", "pairID", "genre", "sentence1_binary_parse", "sentence2_binary_parse",
               "sentence1_parse", "sentence2_parse", "sentence1", "sentence2", "label1", "gold_label"]
HANS_HEADER = ["gold_label", "sentence1_binary_parse", "sentence2_binary_parse", "sentence1_parse",
               "sentence2_parse", "sentence1", "sentence2", "pairID", "heuristic", "subcase", "template"]
PAWS_HEADER = ["id", "sentence1", "sentence2", "label"]
QQP_HEADER = ["id", "qid1", "qid2", "question1", "question2", "is_duplicate"]

# Where each file of the paper's tasks lies under data/ (keys: this project's names, data/local.py):
# as the authors' data/ folder holds them (their run_glue.py reads <TASK>/<dataset name>/<split file>,
# PAWS-qqp's whole generated file as QQP/paws_qqp/dev.tsv), and as the distributions unpack (GLUE's
# MNLI.zip and QQP.zip, a clone of tommccoy1/hans, the PAWS generator's output/, paws_wiki's final/,
# the processed FEVER downloads, a clone of TalSchuster/FeverSymmetric)
LAYOUTS = {
    "authors": {
        "nli/train.tsv": "MNLI/train.tsv", "nli/dev_matched.tsv": "MNLI/dev_matched.tsv",
        "nli/heuristics_evaluation_set.txt": "MNLI/hans/heuristics_evaluation_set.txt",
        "nli/heuristics_train_set.txt": "MNLI/hans/heuristics_train_set.txt",
        "paraphrase/train.tsv": "QQP/train.tsv", "paraphrase/dev.tsv": "QQP/dev.tsv",
        "paraphrase/paws_qqp/dev_and_test.tsv": "QQP/paws_qqp/dev.tsv",
        "paraphrase/paws_qqp/train.tsv": "QQP/paws_qqp/train.tsv",
        "paraphrase/paws_wiki/test.tsv": "QQP/paws_wiki/test.tsv",
        "paraphrase/paws_wiki/train.tsv": "QQP/paws_wiki/train.tsv",
        "factcheck/fever.train.jsonl": "fever/fever.train.jsonl", "factcheck/fever.dev.jsonl": "fever/fever.dev.jsonl",
        "factcheck/symmetric_v0.1_fever_symmetric_generated.jsonl": "fever/sym1/test.jsonl",
        "factcheck/symmetric_v0.2_fever_symmetric_test.jsonl": "fever/sym2/test.jsonl",
        "factcheck/symmetric_v0.2_fever_symmetric_dev.jsonl": "fever/sym2/dev.jsonl"},
    "distributions": {
        "nli/train.tsv": "MNLI/train.tsv", "nli/dev_matched.tsv": "MNLI/dev_matched.tsv",
        "nli/heuristics_evaluation_set.txt": "hans/heuristics_evaluation_set.txt",
        "nli/heuristics_train_set.txt": "hans/heuristics_train_set.txt",
        "paraphrase/train.tsv": "QQP/train.tsv", "paraphrase/dev.tsv": "QQP/dev.tsv",
        "paraphrase/paws_qqp/dev_and_test.tsv": "paws_qqp/output/dev_and_test.tsv",
        "paraphrase/paws_qqp/train.tsv": "paws_qqp/output/train.tsv",
        "paraphrase/paws_wiki/test.tsv": "final/test.tsv", "paraphrase/paws_wiki/train.tsv": "final/train.tsv",
        "factcheck/fever.train.jsonl": "fever.train.jsonl", "factcheck/fever.dev.jsonl": "fever.dev.jsonl",
        "factcheck/symmetric_v0.1_fever_symmetric_generated.jsonl": "symmetric_v0.1/fever_symmetric_generated.jsonl",
        "factcheck/symmetric_v0.2_fever_symmetric_test.jsonl": "symmetric_v0.2/fever_symmetric_test.jsonl",
        "factcheck/symmetric_v0.2_fever_symmetric_dev.jsonl": "symmetric_v0.2/fever_symmetric_dev.jsonl"},
}
MNLI_NAMES = ["entailment", "neutral", "contradiction"]
FEVER_NAMES = ["SUPPORTS", "REFUTES", "NOT ENOUGH INFO"]


def _tsv(path: Path, header: list[str], rows: list[list]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\t".join(header) + "\n" + "".join("\t".join(map(str, r)) + "\n" for r in rows))


def _jsonl(path: Path, records: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))


def _log_probs(labels: np.ndarray, n_classes: int, rng) -> np.ndarray:
    """A confident-ish bias model: 0.6 on the gold class for 80% of the rows, else on a random one."""
    favoured = np.where(rng.random(len(labels)) < 0.8, labels, rng.integers(n_classes, size=len(labels)))
    probs = np.full((len(labels), n_classes), 0.4 / (n_classes - 1))
    probs[np.arange(len(labels)), favoured] = 0.6
    return np.log(probs)


def tasks(rows: int = 64) -> dict:
    """The synthetic splits every file is written from (the same for both layouts)."""
    from srnets_lib.data.synthetic import make_task

    return {task: make_task(task, rows, rows // 2, rows // 2, bias_strength=0.8, seed=1)
            for task in ("nli", "paraphrase", "factcheck")}


def write_data(checkout: Path, layout: str = "authors", rows: int = 64) -> Path:
    """<checkout>/data in `layout` (LAYOUTS) and <checkout>/bias_model_preds; returns the data folder."""
    data, where = checkout / "data", LAYOUTS[layout]
    made, rng = tasks(rows), np.random.default_rng(0)
    nli, qqp, fever = made["nli"], made["paraphrase"], made["factcheck"]
    for name, split in (("nli/train.tsv", nli.train), ("nli/dev_matched.tsv", nli.dev)):
        _tsv(data / where[name], MNLI_HEADER, [
            [i, i, f"{i}e", "fiction", "( x )", "( y )", "(ROOT x)", "(ROOT y)", a, b, MNLI_NAMES[y], MNLI_NAMES[y]]
            for i, (a, b, y) in enumerate(zip(split.text_a, split.text_b, split.labels))])
    hans = nli.ood["hans-like"]
    for name in ("nli/heuristics_evaluation_set.txt", "nli/heuristics_train_set.txt"):
        _tsv(data / where[name], HANS_HEADER, [
            [["entailment", "non-entailment"][y], "( x )", "( y )", "(ROOT x)", "(ROOT y)", a, b, f"ex{i}",
             "lexical_overlap", "ln_subject/object_swap", "temp1"]
            for i, (a, b, y) in enumerate(zip(hans.text_a, hans.text_b, hans.labels))])
    qqp_ids = 1000 + 7 * np.arange(rows)  # pair ids not in row order, as in GLUE's QQP
    for name, split, ids in (("paraphrase/train.tsv", qqp.train, qqp_ids),
                             ("paraphrase/dev.tsv", qqp.dev, 5000 + np.arange(len(qqp.dev)))):
        _tsv(data / where[name], QQP_HEADER,
             [[i, 2 * i, 2 * i + 1, a, b, y] for i, a, b, y in zip(ids, split.text_a, split.text_b, split.labels)])
    paws = qqp.ood["paws-like"]
    paws_rows = [[i, a, b, y] for i, (a, b, y) in enumerate(zip(paws.text_a, paws.text_b, paws.labels))]
    for name in ("paraphrase/paws_qqp/dev_and_test.tsv", "paraphrase/paws_qqp/train.tsv",
                 "paraphrase/paws_wiki/test.tsv", "paraphrase/paws_wiki/train.tsv"):
        _tsv(data / where[name], PAWS_HEADER, paws_rows)
    for name, split in (("factcheck/fever.train.jsonl", fever.train), ("factcheck/fever.dev.jsonl", fever.dev)):
        _jsonl(data / where[name], [{"claim": a, "evidence": b, "gold_label": FEVER_NAMES[y]}
                                    for a, b, y in zip(split.text_a, split.text_b, split.labels)])
    sym = fever.ood["symmetric-like"]
    _jsonl(data / where["factcheck/symmetric_v0.1_fever_symmetric_generated.jsonl"],
           [{"id": i, "claim": a, "evidence_sentence": b, "label": FEVER_NAMES[y]}
            for i, (a, b, y) in enumerate(zip(sym.text_a, sym.text_b, sym.labels))])
    for name in ("factcheck/symmetric_v0.2_fever_symmetric_test.jsonl", "factcheck/symmetric_v0.2_fever_symmetric_dev.jsonl"):
        _jsonl(data / where[name], [{"id": i, "claim": a, "evidence": b, "gold_label": FEVER_NAMES[y]}
                                    for i, (a, b, y) in enumerate(zip(sym.text_a, sym.text_b, sym.labels))])
    write_bias_predictions(checkout / "bias_model_preds", made, qqp_ids, rng)
    return data


def write_bias_predictions(folder: Path, made: dict, qqp_ids, rng) -> None:
    """The authors' bias_model_preds/: their label orders, keyed as their loader keys them (MNLI by
    the index column, QQP by pair id in a pickled dict, FEVER by row)."""
    (folder / "MNLI").mkdir(parents=True, exist_ok=True)
    ours = _log_probs(made["nli"].train.labels, 3, rng)  # [entailment, neutral, contradiction]
    np.save(folder / "MNLI" / "log_probs.npy", ours[:, [2, 0, 1]])  # theirs: [contradiction, entailment, neutral]
    (folder / "QQP").mkdir(exist_ok=True)
    qqp_log = _log_probs(made["paraphrase"].train.labels, 2, rng)
    with (folder / "QQP" / "log_probs.pkl").open("wb") as handle:  # one pair without a prediction
        pickle.dump({int(i): row for i, row in list(zip(qqp_ids, qqp_log))[1:]}, handle)
    (folder / "fever").mkdir(exist_ok=True)
    np.save(folder / "fever" / "log_probs.npy", _log_probs(made["factcheck"].train.labels, 3, rng))


def _parquet(folder: Path, split: str, columns: dict, features=None) -> None:
    from datasets import Dataset
    from datasets.utils.logging import disable_progress_bar

    disable_progress_bar()

    folder.mkdir(parents=True, exist_ok=True)
    Dataset.from_dict(columns, features=features).to_parquet(folder / f"{split}-00000-of-00001.parquet")


def write_hub(folder: Path, rows: int = 64) -> Path:
    """<folder>/<hub id>/<config>/<split>-00000-of-00001.parquet, the hub repositories' layout and
    columns, for every hub dataset params/paper.yaml reads: GLUE's MNLI (Part I) and TAMT's GLUE
    tasks, SQuAD v1.1 and WikiText-103 (Part II)."""
    from datasets import ClassLabel, Features, Sequence, Value

    from srnets_lib.data.corpus import _toy_lines

    made = tasks(rows)
    nli, qqp = made["nli"], made["paraphrase"]
    glue = folder / "nyu-mll" / "glue"
    for task, names, text in (("mnli", MNLI_NAMES, ["premise", "hypothesis"]), ("cola", ["unacceptable", "acceptable"], ["sentence"]),
                              ("sst2", ["negative", "positive"], ["sentence"]), ("rte", ["entailment", "not_entailment"], ["sentence1", "sentence2"]),
                              ("mrpc", ["not_equivalent", "equivalent"], ["sentence1", "sentence2"]), ("stsb", None, ["sentence1", "sentence2"])):
        source = nli if task in ("mnli", "rte") else qqp
        features = Features({**{c: Value("string") for c in text},
                             "label": Value("float32") if names is None else ClassLabel(names=names), "idx": Value("int32")})
        splits = ({"train": source.train, "validation_matched": source.dev, "validation_mismatched": source.dev}
                  if task == "mnli" else {"train": source.train, "validation": source.dev})
        for split, data in splits.items():
            labels = data.labels.tolist()
            labels = ([2.5 * y for y in labels] if names is None else [min(y, 1) for y in labels] if task == "rte"
                      else labels)
            texts = dict(zip(text, (data.text_a, data.text_b)))
            _parquet(glue / task, split, {**texts, "label": labels, "idx": list(range(len(data)))}, features)
    squad = Features({"id": Value("string"), "title": Value("string"), "context": Value("string"),
                      "question": Value("string"), "answers": Sequence({"text": Value("string"), "answer_start": Value("int32")})})
    for split, data in (("train", nli.train), ("validation", nli.dev)):
        contexts = [f"{a} {b}" for a, b in zip(data.text_a, data.text_b)]
        answers = [context.split()[-1] for context in contexts]
        _parquet(folder / "rajpurkar" / "squad" / "plain_text", split, {
            "id": [f"{split}{i}" for i in range(len(data))], "title": ["toy"] * len(data), "context": contexts,
            "question": [f"Which word ends: {context.split()[0]} ...?" for context in contexts],
            "answers": [{"text": [a], "answer_start": [c.rindex(a)]} for a, c in zip(answers, contexts)]}, squad)
    for split, part in (("train", 0), ("validation", 1)):
        lines = [" = Toy = \n"] + [line + "\n" for line in _toy_lines(16 if part else 64, 0, part)]
        _parquet(folder / "Salesforce" / "wikitext" / "wikitext-103-raw-v1", split, {"text": lines})
    return folder


def write_params(checkout: Path, seeds=(1,)) -> Path:
    """<checkout>/rehearsal.yaml: params/paper.yaml with the tiny random backbone, `seeds`, sizes that
    fit it (64 training examples or corpus blocks, files of any size, 64-token blocks, 96-token SQuAD
    windows), IMP on the corpus pruning every step (paper.yaml: every 2792) and section 5.1's steps
    within its 6-step std run."""
    path = checkout / "rehearsal.yaml"
    path.write_text(f"""base: params/paper.yaml
name: rehearsal
description: >
  params/paper.yaml with only the backbone (the tiny random BERT), the seeds, the sizes and the steps
  scaled down: the paper-scale path rehearsed on a CPU (tests/paper_fixture.py). Not the paper's results.
preset: {{seeds: {list(seeds)}}}
defaults: {{backbone: tiny, data: {{train_size: 64, check_sizes: false}}}}
overrides:
  - when: {{task: [corpus, cola, sst2, rte, mrpc, stsb, mnli, squad]}}
    set: {{data: {{train_size: 64, dev_size: 32}}}}
  - when: {{task: corpus}}
    set: {{max_length: 64}}
  - when: {{task: corpus, method: [imp, imp-rw]}}
    set: {{imp_interval: 1, eval_interval: 1}}   # paper.yaml's 2792 steps are 349 times the 8 the corpus gives
  - when: {{task: squad}}
    set: {{max_length: 96}}
sections:
  sec5_1: {{steps: [1, 2, 3, 4]}}
  appc5: {{backbones: [{{name: tiny (C.5 stand-in), backbone: tiny, max_length: 96}}]}}
tamt:
  mask_seeds: {list(seeds)}
  finetune_seeds: {list(seeds)}
  other_backbones: [{{name: tiny (figure 4 stand-in), backbone: tiny, sparsities: [0.2, 0.5, 0.9]}}]
""")
    return path


def rehearse(checkout: Path, layout: str = "authors", seeds=(1,)) -> Path:
    """Lay out every input of both parts in `checkout` and write its rehearsal.yaml (returned)."""
    write_data(checkout, layout)
    write_hub(checkout / "hub")
    return write_params(checkout, seeds)


if __name__ == "__main__":
    target = Path(sys.argv[1]).resolve()
    print(rehearse(target, sys.argv[2] if len(sys.argv) > 2 else "authors"))
