"""Parameter counts of the backbones without loading their weights (the hub's shapes from their
config.json, a local folder's config.json): what `plan` prices disk and GPU-hours by."""

from __future__ import annotations

import json
from pathlib import Path

from srnets_lib.model import backbones

# Parameter shapes of the hub backbones (their config.json), so disk and cost need no download.
HUB_SHAPES = {
    "bert-base-uncased": dict(vocab_size=30522, hidden_size=768, num_hidden_layers=12, intermediate_size=3072,
                              max_position_embeddings=512, type_vocab_size=2),
    "roberta-base": dict(vocab_size=50265, hidden_size=768, num_hidden_layers=12, intermediate_size=3072,
                         max_position_embeddings=514, type_vocab_size=1),
    "bert-large-uncased": dict(vocab_size=30522, hidden_size=1024, num_hidden_layers=24, intermediate_size=4096,
                               max_position_embeddings=512, type_vocab_size=2),
}
REFERENCE_BACKBONE = "bert-base-uncased"  # bench measures this shape (random weights)


def shape(backbone: str, num_layers: int | None) -> dict:
    """The backbone's config values that fix its parameter count."""
    if backbone in HUB_SHAPES:
        values = dict(HUB_SHAPES[backbone])
    elif backbone == "tiny":
        values = dict(vocab_size=30522, hidden_size=32, num_hidden_layers=2, intermediate_size=64,
                      max_position_embeddings=128, type_vocab_size=2)
    else:
        folder = Path(backbones.resolve(backbone))
        values = json.loads((folder / "config.json").read_text()) if folder.is_dir() else dict(HUB_SHAPES[REFERENCE_BACKBONE])
    if num_layers:
        values["num_hidden_layers"] = num_layers
    return values


def parameters(backbone: str, num_layers: int | None = None, embeddings: bool = True) -> tuple[int, int]:
    """(parameters, of which Transformer matrices) of a BERT-like encoder; without the
    embedding tables when `embeddings` is False (they are frozen: train_embeddings false)."""
    s = shape(backbone, num_layers)
    h, i, layers = s["hidden_size"], s["intermediate_size"], s["num_hidden_layers"]
    matrices = layers * (4 * h * h + 2 * h * i)
    biases_and_norms = layers * (4 * h + i + h + 4 * h)  # Q, K, V, AO, FFN biases; two LayerNorms
    tables = (s["vocab_size"] + s["max_position_embeddings"] + s.get("type_vocab_size", 2) + 2) * h
    pooler = h * h + h
    return matrices + biases_and_norms + (tables if embeddings else 0) + pooler, matrices
