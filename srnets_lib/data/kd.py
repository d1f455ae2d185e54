"""TAMT-KD's data as the authors make it (mask_training/pregenerate_training_data.py of
llyx97/TAMT, run by shell_scripts/generate_kd_data_{bert,roberta}.sh with --one_seq
--max_seq_len 512 --epochs_to_generate 1, on wiki.train.raw and on wiki.valid.raw for eval_kd.py):

- A document is a run of non-blank lines (a blank line ends it): in WikiText a section's
  paragraphs. It is kept if its first line, as word pieces, has at least MIN_FIRST_LINE tokens and
  no "=" token (a heading); the file's last document, when no blank line follows it, is kept
  unchecked, as theirs.
- Per document, a target length (max_length minus the special tokens: 509 for BERT), shorter with
  probability SHORT_SEQ_PROB (uniform in 2..509); lines are gathered until they reach it or the
  document ends, and each gathering becomes one instance: its lines split at a random line into A
  and B ([CLS] A [SEP] B [SEP]; [CLS] A [SEP] for a single line), the longer of the two cut one token
  at a time from the front or the back at random until they fit. Tokens past the fit are dropped,
  not carried over.
- One token per instance is altered (masked_lm_prob 0.0, yet max(1, ...) predictions): a position
  not reading the literal "[CLS]" or "[SEP]" token, 80% the literal "[MASK]", 10% itself, 10% a
  random vocabulary entry. Only one epoch is generated: both training epochs read the same instances.
- Instances are padded to max_length at batch time (engine/kinds/corpus.py), with an attention mask.

Their generator draws from Python's unseeded `random`; here from a generator seeded with the run's
data seed, so every run reads the same instances. A run counts its instances; `plan`, which loads
no data, counts PLANNED_INSTANCES.
"""

from __future__ import annotations

import hashlib

import numpy as np

from srnets_lib import paths
from srnets_lib.data.encode import Encoded, cached_encoding, split_fingerprint
from srnets_lib.data.local import DataFileError
from srnets_lib.data.splits import Split

MIN_FIRST_LINE = 20
SHORT_SEQ_PROB = 0.1
# not published, not measured here (no WikiText-103 on this machine): the fewest instances with which
# the authors' 2 epochs of floor(N / 16) steps reach their last saved KD mask, step_24999
# (shell_scripts/eval_kd/tamt_kd.sh), i.e. a lower bound; `plan` reads it for the lr horizon only
PLANNED_INSTANCES = 200_000


def documents(lines: list[str]) -> list[tuple[list[int], bool]]:
    """(line indices, whether a blank line ended it) of each run of non-blank lines."""
    found, current = [], []
    for i, line in enumerate(lines):
        if line.strip():
            current.append(i)
        elif current:
            found.append((current, True))
            current = []
    return found + ([(current, False)] if current else [])


def truncated(a: int, b: int, room: int) -> tuple[int, int]:
    """The lengths of A and B after truncate_seq_pair: while they exceed `room`, the longer loses a
    token (B on a tie)."""
    excess = a + b - room
    if excess <= 0:
        return a, b
    gap = min(abs(a - b), excess)
    a, b, excess = (a - gap, b, excess - gap) if a > b else (a, b - gap, excess - gap)
    return a - excess // 2, b - (excess + 1) // 2


class _Vocabulary:
    """The tokens the authors' generator names by their strings, as ids of this tokenizer."""

    def __init__(self, tokenizer, max_length: int):
        vocab = tokenizer.get_vocab()
        self.size, self.tokenizer = len(vocab), tokenizer
        self.heading = vocab.get("=")  # None: no "=" token (then no line is taken for a heading)
        self.fixed = {vocab[t] for t in ("[CLS]", "[SEP]") if t in vocab}
        self.mask = tokenizer.convert_tokens_to_ids("[MASK]")  # RoBERTa's: its unknown token, as theirs
        self.full_stop = tokenizer.convert_tokens_to_ids(".")
        # A and B's room: 509 for BERT ([CLS] A [SEP] B [SEP]), 508 for RoBERTa (<s> A </s></s> B </s>)
        self.pair = tokenizer.num_special_tokens_to_add(pair=True)
        self.room = max_length - self.pair
        self.cls, self.sep = tokenizer.cls_token_id, tokenizer.sep_token_id

    def framed(self, a: list[int], b: list[int]) -> tuple[list[int], list[int]]:
        """(ids, token types): [CLS] A [SEP] (B [SEP]), B's tokens of type 1 (BERT); RoBERTa's
        <s> A </s> (</s> B </s>), all of type 0 (their train_kd.py passes it no segment ids)."""
        if not b:
            return [self.cls, *a, self.sep], [0] * (len(a) + 2)
        middle = [self.sep] * (self.pair - 2)
        ids = [self.cls, *a, *middle, *b, self.sep]
        return ids, [0] * (len(a) + 2) + [int(self.pair == 3)] * (len(ids) - len(a) - 2)


def _instance(a: list[int], b: list[int], vocab: _Vocabulary, rng: np.random.Generator) -> tuple[list, list]:
    """(ids, token types) of one instance: A and B cut to fit, the special tokens, one token altered."""
    a = a or [vocab.full_stop]
    kept_a, kept_b = truncated(len(a), len(b), vocab.room)
    cut = []
    for part, kept in ((a, kept_a), (b, kept_b)):
        front = int(rng.binomial(len(part) - kept, 0.5))
        cut.append(part[front:front + kept])
    ids, types = vocab.framed(*cut)
    candidates = [i for i, token in enumerate(ids) if token not in vocab.fixed]
    if candidates:
        at = candidates[int(rng.integers(len(candidates)))]
        if rng.random() < 0.8:
            ids[at] = vocab.mask
        elif rng.random() >= 0.5:
            ids[at] = int(rng.integers(vocab.size))
    return ids, types


def _of_document(tokens: list[list[int]], vocab: _Vocabulary, rng: np.random.Generator) -> list[tuple]:
    """The instances of one document (create_instances_from_document with bi_text False)."""
    target = vocab.room if rng.random() >= SHORT_SEQ_PROB else int(rng.integers(2, vocab.room + 1))
    made, chunk, length = [], [], 0
    for i, line in enumerate(tokens):
        chunk.append(line)
        length += len(line)
        if i == len(tokens) - 1 or length >= target:
            split = int(rng.integers(1, len(chunk))) if len(chunk) >= 2 else 1
            made.append(_instance([t for part in chunk[:split] for t in part],
                                  [t for part in chunk[split:] for t in part], vocab, rng))
            chunk, length = [], 0
    return made


def paragraphs(split: Split, tokenizer, max_length: int, count: int | None, tokenizer_id: str, seed: list[int],
               source: str = "") -> Encoded:
    """The first `count` (None: all) KD instances of `split`'s lines, unpadded, drawn with `seed`;
    cached beside the run store like the corpus blocks. `source`: where the lines come from, named
    when they make too few."""
    key = hashlib.sha256(f"kd|{tokenizer_id}|{max_length}|{count}|{seed}|{split_fingerprint(split)}".encode())
    path = paths.cache_dir("tokens") / f"{key.hexdigest()[:20]}.npz"
    cached = cached_encoding(path)
    if cached is not None:
        return cached
    vocab = _Vocabulary(tokenizer, max_length)
    lines = split.text_a
    ids = tokenizer(lines, add_special_tokens=False)["input_ids"]
    rng = np.random.default_rng(seed)
    made = []
    for rows, closed in documents(lines):
        first = ids[rows[0]]
        if closed and (len(first) < MIN_FIRST_LINE or (vocab.heading is not None and vocab.heading in first)):
            continue
        made += _of_document([ids[i] for i in rows], vocab, rng)
        if count is not None and len(made) >= count:
            break
    if count is not None and len(made) < count:
        size = {"train": "data.train_size", "dev": "data.dev_size"}.get(split.name, "its size")
        raise DataFileError(f"corpus {split.name}{f' ({source})' if source else ''}: {len(made)} KD instances "
                            f"(runs of lines whose first has {MIN_FIRST_LINE}+ word pieces and no '='), {count} "
                            f"asked for by {size}; a longer text, or a smaller {size}")
    if not made:
        raise DataFileError(f"corpus {split.name}{f' ({source})' if source else ''}: no KD instance: no run of "
                            f"lines whose first has {MIN_FIRST_LINE}+ word pieces and no '=' (the authors' "
                            "pregenerate_training_data.py); is it WikiText with its blank lines?")
    made = made[:count] if count is not None else made
    lengths = np.array([len(i) for i, _ in made], dtype=np.int64)
    encoded = Encoded(np.concatenate([np.asarray(i, dtype=np.int32) for i, _ in made]),
                      np.concatenate([np.asarray(t, dtype=np.int8) for _, t in made]),
                      np.concatenate([[0], np.cumsum(lengths)]), np.zeros(len(made), dtype=np.int64))
    with paths.replacing(path) as tmp:
        np.savez(tmp, ids=encoded.ids, type_ids=encoded.type_ids, offsets=encoded.offsets, labels=encoded.labels)
    return encoded
