"""A paper-scale dry run on CPU: a small data folder in the original file formats (GLUE MNLI
and QQP tsv, HANS txt, PAWS tsv, processed FEVER and FEVER-Symmetric jsonl) with the authors'
bias-prediction files, and a params file that is params/paper.yaml with the tiny backbone and
that folder. Its texts come from the synthetic generators, so the runs learn something.

    python tests/paper_fixture.py /tmp/dry      # writes /tmp/dry/data and /tmp/dry/paper-dry-run.yaml
    make book PARAMS=/tmp/dry/paper-dry-run.yaml SRNETS_RUNS=/tmp/dry/runs BUILD=/tmp/dry/_build
"""

from __future__ import annotations

import json
import pickle
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
MNLI_HEADER = ["index", "promptID", "pairID", "genre", "sentence1_binary_parse", "sentence2_binary_parse",
               "sentence1_parse", "sentence2_parse", "sentence1", "sentence2", "label1", "gold_label"]
HANS_HEADER = ["gold_label", "sentence1_binary_parse", "sentence2_binary_parse", "sentence1_parse",
               "sentence2_parse", "sentence1", "sentence2", "pairID", "heuristic", "subcase", "template"]


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


def write_data(folder: Path, rows: int = 64) -> Path:
    from srnets_lib.data.synthetic import make_task

    rng = np.random.default_rng(0)
    data = folder / "data"
    # NLI: MNLI (GLUE tsv with its index column), HANS evaluation and train sets
    nli = make_task("nli", rows, rows // 2, rows // 2, bias_strength=0.8, seed=1, ood_train=False)
    mnli_names = ["entailment", "neutral", "contradiction"]
    for name, split in (("train.tsv", nli.train), ("dev_matched.tsv", nli.dev)):
        _tsv(data / "nli" / name, MNLI_HEADER, [
            [i, i, f"{i}e", "fiction", "( x )", "( y )", "(ROOT x)", "(ROOT y)", a, b, mnli_names[y], mnli_names[y]]
            for i, (a, b, y) in enumerate(zip(split.text_a, split.text_b, split.labels))])
    hans = nli.ood["hans-like"]
    for name in ("heuristics_evaluation_set.txt", "heuristics_train_set.txt"):
        _tsv(data / "nli" / name, HANS_HEADER, [
            [["entailment", "non-entailment"][y], "( x )", "( y )", "(ROOT x)", "(ROOT y)", a, b, f"ex{i}",
             "lexical_overlap", "ln_subject/object_swap", "temp1"]
            for i, (a, b, y) in enumerate(zip(hans.text_a, hans.text_b, hans.labels))])
    # paraphrase: QQP (GLUE tsv, pair ids not in row order), PAWS-qqp and PAWS-wiki
    qqp = make_task("paraphrase", rows, rows // 2, rows // 2, bias_strength=0.8, seed=1)
    qqp_ids = 1000 + 7 * np.arange(rows)
    for name, split, ids in (("train.tsv", qqp.train, qqp_ids), ("dev.tsv", qqp.dev, 5000 + np.arange(len(qqp.dev)))):
        _tsv(data / "paraphrase" / name, ["id", "qid1", "qid2", "question1", "question2", "is_duplicate"],
             [[i, 2 * i, 2 * i + 1, a, b, y] for i, a, b, y in zip(ids, split.text_a, split.text_b, split.labels)])
    paws = qqp.ood["paws-like"]
    paws_rows = [[i, a, b, y] for i, (a, b, y) in enumerate(zip(paws.text_a, paws.text_b, paws.labels))]
    for name in ("paws_qqp/dev_and_test.tsv", "paws_qqp/train.tsv", "paws_wiki/test.tsv", "paws_wiki/train.tsv"):
        _tsv(data / "paraphrase" / name, ["id", "sentence1", "sentence2", "label"], paws_rows)
    # fact verification: processed FEVER and FEVER-Symmetric v0.1 / v0.2
    fever = make_task("factcheck", rows, rows // 2, rows // 2, bias_strength=0.8, seed=1)
    names = ["SUPPORTS", "REFUTES", "NOT ENOUGH INFO"]
    for name, split in (("fever.train.jsonl", fever.train), ("fever.dev.jsonl", fever.dev)):
        _jsonl(data / "factcheck" / name, [{"claim": a, "evidence": b, "gold_label": names[y]}
                                           for a, b, y in zip(split.text_a, split.text_b, split.labels)])
    sym = fever.ood["symmetric-like"]
    _jsonl(data / "factcheck" / "symmetric_v0.1_fever_symmetric_generated.jsonl",
           [{"id": i, "claim": a, "evidence_sentence": b, "label": names[y]}
            for i, (a, b, y) in enumerate(zip(sym.text_a, sym.text_b, sym.labels))])
    for name in ("symmetric_v0.2_fever_symmetric_test.jsonl", "symmetric_v0.2_fever_symmetric_dev.jsonl"):
        _jsonl(data / "factcheck" / name, [{"id": i, "claim": a, "evidence": b, "gold_label": names[y]}
                                           for i, (a, b, y) in enumerate(zip(sym.text_a, sym.text_b, sym.labels))])
    # the authors' bias predictions: their label orders, keyed as their loader keys them
    preds = data / "bias_model_preds"
    (preds / "MNLI").mkdir(parents=True, exist_ok=True)
    ours = _log_probs(nli.train.labels, 3, rng)  # [entailment, neutral, contradiction]
    np.save(preds / "MNLI" / "log_probs.npy", ours[:, [2, 0, 1]])  # theirs: [contradiction, entailment, neutral]
    (preds / "QQP").mkdir(exist_ok=True)
    qqp_log = _log_probs(qqp.train.labels, 2, rng)
    with (preds / "QQP" / "log_probs.pkl").open("wb") as handle:  # one pair without a prediction
        pickle.dump({int(i): row for i, row in list(zip(qqp_ids, qqp_log))[1:]}, handle)
    (preds / "fever").mkdir(exist_ok=True)
    np.save(preds / "fever" / "log_probs.npy", _log_probs(fever.train.labels, 3, rng))
    return data


def write_params(folder: Path, data: Path, seeds=(1,)) -> Path:
    """params/paper.yaml on the tiny backbone and `data`; section 5.1's steps scaled to it."""
    path = folder / "paper-dry-run.yaml"
    path.write_text(f"""base: {ROOT / 'params' / 'paper.yaml'}
name: paper-dry-run
description: params/paper.yaml on the tiny random backbone and a small local data folder in the original formats
preset: {{seeds: {list(seeds)}}}
execution: {{eval_batch_size: 64}}
forced: {{backbone: tiny, bias_path: {data / "bias_model_preds"},
         data: {{source: local, path: {data}, train_size: 64}}}}
sections:
  sec5_1_steps: [1, 2, 3, 4]
  appc5_backbones: [{{name: tiny (C.5 stand-in), backbone: tiny, max_length: 96}}]
""")
    return path


if __name__ == "__main__":
    target = Path(sys.argv[1]).resolve()
    print(write_params(target, write_data(target)))
