"""Unlabelled text for the task-agnostic runs of TAMT (section 4.1): WikiText-103 at paper scale
(the hub's raw parquet or the original wiki.{train,valid}.raw), the toy's own language in the
embedded default; cut into contiguous blocks as the authors' TextDataset does.

A corpus is a TaskData whose splits hold lines of text (text_b empty, no labels; a blank line of the
file is an empty string), so loading, fingerprints and the run store treat it like a task; `blocks`
tokenises a split and cuts the token stream into [CLS] + (max_length - 2) tokens + [SEP] blocks, the
last partial one dropped (mask_training/hg_transformers/data/datasets/language_modeling.py of
llyx97/TAMT): the data of TAMT-MLM, MLM+KD and IMP. `paragraphs` makes the authors' TAMT-KD data
instead (kd.py). `train_size` and `dev_size` count blocks (or KD instances).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

from srnets_lib import paths
from srnets_lib.data import hub
from srnets_lib.data.encode import Encoded, cached_encoding, split_fingerprint
from srnets_lib.data.local import DataFileError, data_folder, decoded, required
from srnets_lib.data.splits import Split, TaskData
from srnets_lib.data.synthetic import make_task

WIKITEXT = ("Salesforce/wikitext", "wikitext-103-raw-v1")  # hub parquet: a "text" column of lines
WIKITEXT_FILES = {"train": "wikitext-103/wiki.train.raw", "dev": "wikitext-103/wiki.valid.raw"}
TOY_TASKS = ("nli", "paraphrase", "factcheck")


def hub_datasets(task: str = "corpus") -> list[tuple[str, str, tuple[str, ...]]]:
    """(hub id, config, the splits read) of WikiText-103 on the hub."""
    return [(*WIKITEXT, ("train", "validation"))]


def expected_files(task: str, folder) -> list[tuple[str, Path]]:
    """(dataset, path) of the files a local corpus run reads (WikiText-103), without reading them."""
    return [("WikiText-103", data_folder(folder) / name) for name in WIKITEXT_FILES.values()]


def load_corpus(data) -> TaskData:
    """The corpus `data` describes: synthetic (the toy's language) or WikiText-103 (hub, local)."""
    if data.source == "synthetic":
        train, dev = _toy_lines(data.train_size, data.data_seed, 0), _toy_lines(data.dev_size, data.data_seed, 1)
        description = f"synthetic corpus: the sentences of the three toy tasks, seed {data.data_seed}"
    elif data.source == "hub":
        loaded = hub._load_dataset(*WIKITEXT)
        train, dev = _lines(loaded["train"]["text"]), _lines(loaded["validation"]["text"])
        description = f"WikiText-103 (hub {WIKITEXT[0]}, {WIKITEXT[1]})"
    else:
        root = data_folder(data.path)
        train, dev = (_read_lines(required(root / WIKITEXT_FILES[s], "WikiText-103")) for s in ("train", "dev"))
        description = f"WikiText-103 ({root / 'wikitext-103'})"
    return TaskData(task="corpus", label_names=[], metric="mlm_loss", train=_split("train", train),
                    dev=_split("dev", dev), description=description)


def origin(data, split: str) -> str:
    """Where the corpus `data` describes reads split `split` from, in words: a file (with the
    data.path it is under), the hub, or the toy's generator."""
    if data.source == "local":
        return f"{data_folder(data.path) / WIKITEXT_FILES[split]}, under data.path {data.path}"
    if data.source == "hub":
        return f"hub {WIKITEXT[0]} {WIKITEXT[1]}"
    return f"the synthetic corpus, seed {data.data_seed}"


def _read_lines(path) -> list[str]:
    with decoded(path):
        return _lines(path.read_text(encoding="utf-8").splitlines())


def _lines(lines) -> list[str]:
    """The lines, a blank one as "" (it separates the documents of the authors' KD data)."""
    return [line if line.strip() else "" for line in lines]


def _split(name: str, lines: list[str]) -> Split:
    return Split(name, lines, [""] * len(lines), np.zeros(len(lines), dtype=np.int64), [])


def _toy_lines(blocks: int, seed: int, part: int) -> list[str]:
    """Sentences of the three toy tasks (their premises, questions, claims and evidence; never
    their labels), drawn apart from the tasks' own data (another seed): enough for `blocks` blocks
    of up to 64 tokens with room to spare (`blocks` cuts the stream to the length asked)."""
    per_task = max(8, blocks * 64 // 24)
    lines = []
    for task in TOY_TASKS:
        data = make_task(task, per_task, 1, 1, seed=10_000 + 2 * seed + part)
        lines += [text for pair in zip(data.train.text_a, data.train.text_b) for text in pair]
    order = np.random.default_rng([seed, part]).permutation(len(lines))
    return [lines[i] for i in order]


def blocks(split: Split, tokenizer, max_length: int, count: int | None, tokenizer_id: str,
           source: str = "") -> Encoded:
    """The first `count` (None: all) contiguous blocks of max_length tokens of `split`'s lines;
    cached beside the run store like the tokenised task splits. `source`: where the lines come
    from (`origin`), named when they are too few."""
    key = hashlib.sha256(f"blocks|{tokenizer_id}|{max_length}|{count}|{split_fingerprint(split)}".encode())
    path = paths.cache_dir("tokens") / f"{key.hexdigest()[:20]}.npz"
    cached = cached_encoding(path)
    if cached is not None:
        return cached
    width = max_length - 2
    stream = np.concatenate([np.asarray(ids, dtype=np.int32) for ids in
                             tokenizer(split.text_a, add_special_tokens=False)["input_ids"]] + [np.zeros(0, np.int32)])
    available = len(stream) // width
    count = available if count is None else count
    if available < count:
        size = {"train": "data.train_size", "dev": "data.dev_size"}.get(split.name, "its size")
        raise DataFileError(f"corpus {split.name}{f' ({source})' if source else ''}: {available} blocks of "
                            f"{max_length} tokens, {count} asked for by {size}; a longer text, or a smaller {size}")
    body = stream[: count * width].reshape(count, width)
    ids = np.concatenate([np.full((count, 1), tokenizer.cls_token_id), body,
                          np.full((count, 1), tokenizer.sep_token_id)], axis=1).astype(np.int32)
    encoded = Encoded(ids.reshape(-1), np.zeros(ids.size, dtype=np.int8),
                      np.arange(count + 1, dtype=np.int64) * max_length, np.zeros(count, dtype=np.int64))
    with paths.replacing(path) as tmp:
        np.savez(tmp, ids=encoded.ids, type_ids=encoded.type_ids, offsets=encoded.offsets, labels=encoded.labels)
    return encoded

