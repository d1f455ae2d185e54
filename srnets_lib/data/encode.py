"""Tokenisation (once per split, backbone tokenizer and max length; cached) and batching.

Batches are padded dynamically to their longest pair; training batches are grouped by
length (sorted inside shuffled pools of `pool` batches) so little compute goes to padding.
`pad_to` pads everything to one length instead (the naive reference in the benchmark).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np
import torch

from srnets_lib import paths
from srnets_lib.data.splits import Split


@dataclass
class Encoded:
    """Token ids of every pair, stored flat: example i is ids[offsets[i]:offsets[i+1]]."""

    ids: np.ndarray
    type_ids: np.ndarray
    offsets: np.ndarray
    labels: np.ndarray

    def __len__(self) -> int:
        return len(self.labels)

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def take(self, index) -> "Encoded":
        """The examples at `index`, in that order."""
        index = np.asarray(index, dtype=np.int64)
        lengths = self.lengths[index]
        rows = np.concatenate([np.arange(self.offsets[i], self.offsets[i + 1]) for i in index]) if len(index) else \
            np.zeros(0, dtype=np.int64)
        return Encoded(self.ids[rows], self.type_ids[rows], np.concatenate([[0], np.cumsum(lengths)]), self.labels[index])


def split_fingerprint(split: Split) -> str:
    digest = hashlib.sha256()
    for a, b, y in zip(split.text_a, split.text_b, split.labels.tolist()):
        digest.update(f"{a}\t{b}\t{y}\n".encode())
    return digest.hexdigest()[:16]


def encode(split: Split, tokenizer, max_length: int, tokenizer_id: str, cache: bool = True) -> Encoded:
    key = hashlib.sha256(f"{tokenizer_id}|{max_length}|{split_fingerprint(split)}".encode()).hexdigest()[:20]
    path = paths.cache_dir("tokens") / f"{key}.npz" if cache else None
    cached = cached_encoding(path) if path is not None else None
    if cached is not None:
        return cached
    second = split.text_b if any(split.text_b) else None  # single-sentence tasks: [CLS] a [SEP]
    out = tokenizer(split.text_a, second, truncation=True, max_length=max_length, return_token_type_ids=True)
    lengths = np.array([len(x) for x in out["input_ids"]], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    encoded = Encoded(
        np.concatenate([np.asarray(x, dtype=np.int32) for x in out["input_ids"]]),
        np.concatenate([np.asarray(x, dtype=np.int8) for x in out["token_type_ids"]]),
        offsets, split.labels.copy())
    if path is not None:
        with paths.replacing(path) as tmp:
            np.savez(tmp, ids=encoded.ids, type_ids=encoded.type_ids, offsets=offsets, labels=encoded.labels)
    return encoded


def cached_encoding(path) -> Encoded | None:
    """A tokenised split kept under runs/_cache/tokens/; None if there is none, or if it cannot be
    read whole (cut short by an interrupted copy or a full disk): it is then removed, and the
    caller tokenises the split again and writes it anew."""
    if not path.exists():
        return None
    try:
        with np.load(path) as stored:
            return Encoded(stored["ids"], stored["type_ids"], stored["offsets"], stored["labels"])
    except Exception:  # BadZipFile, a cut member (zlib, CRC), a missing array: rebuilt
        path.unlink(missing_ok=True)
        return None


def collate(encoded: Encoded, index: np.ndarray, pad_id: int, pad_to: int | None = None) -> dict:
    lengths = encoded.lengths[index]
    width = pad_to or int(lengths.max())
    ids = np.full((len(index), width), pad_id, dtype=np.int64)
    types = np.zeros((len(index), width), dtype=np.int64)
    mask = np.zeros((len(index), width), dtype=np.int64)
    for row, (i, n) in enumerate(zip(index, lengths)):
        start = encoded.offsets[i]
        ids[row, :n] = encoded.ids[start:start + n]
        types[row, :n] = encoded.type_ids[start:start + n]
        mask[row, :n] = 1
    return {"input_ids": torch.from_numpy(ids), "token_type_ids": torch.from_numpy(types),
            "attention_mask": torch.from_numpy(mask), "index": torch.from_numpy(np.asarray(index))}


def train_batches(encoded: Encoded, batch_size: int, rng: np.random.Generator,
                  group_by_length: bool = True, pool: int = 50) -> list[np.ndarray]:
    """One epoch of training batch indices (the last partial batch is kept)."""
    order = rng.permutation(len(encoded))
    if group_by_length:
        lengths = encoded.lengths
        chunks = [order[i:i + pool * batch_size] for i in range(0, len(order), pool * batch_size)]
        order = np.concatenate([c[np.argsort(lengths[c], kind="stable")] for c in chunks])
    batches = [order[i:i + batch_size] for i in range(0, len(order), batch_size)]
    if group_by_length:
        batches = [batches[i] for i in rng.permutation(len(batches))]
    return batches


def eval_batches(encoded: Encoded, batch_size: int) -> list[np.ndarray]:
    """Sorted by length so each batch pads little; predictions are put back by index."""
    order = np.argsort(encoded.lengths, kind="stable")
    return [order[i:i + batch_size] for i in range(0, len(order), batch_size)]
