"""Checking an exported folder against its run, in the exporting process: the folder loaded by
transformers (its Auto class, as a user would) must compute what the rebuilt srnets model computes
(the largest difference of their outputs on one seeded batch), and predict on each evaluation split
the class (or score) the run stored for it (predictions.npz; an IMP level: predictions_s<level>.npz),
its pairs tokenised as the run tokenised them (data/encode.py: truncated to max_length, a second
text only where the task has pairs). tests/export/test_export.py does the same in a fresh process that
never imports srnets_lib.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from srnets_lib.data.encode import encode
from srnets_lib.data.load import load_task
from srnets_lib.engine.evaluation import predict
from srnets_lib.export.hf import Folder
from srnets_lib.export.rebuild import Rebuilt

SCORE_TOLERANCE = 1e-4  # a regression head's score: float noise of another batching, far below a metric's resolution


@dataclass
class Check:
    max_output_difference: float  # |exported - srnets| over one seeded batch's outputs
    agreement: dict[str, tuple[int, int]] = field(default_factory=dict)  # split -> (agreeing, examples checked)

    @property
    def agrees(self) -> bool:
        return all(agree == total for agree, total in self.agreement.values())


def load(folder: Folder):
    """The folder's model and tokenizer as transformers loads them (trust_remote_code only where it
    carries modeling code)."""
    import transformers
    from transformers.utils import logging

    logging.disable_progress_bar()
    try:
        model = getattr(transformers, folder.auto_class).from_pretrained(str(folder.path),
                                                                         trust_remote_code=folder.remote_code)
        tokenizer = transformers.AutoTokenizer.from_pretrained(str(folder.path), trust_remote_code=folder.remote_code)
    finally:
        logging.enable_progress_bar()
    return model.eval(), tokenizer


def probe_batch(model: torch.nn.Module, max_length: int, rows: int = 4) -> dict:
    """A seeded batch of token ids of the backbone's vocabulary, one row padded (mask 0)."""
    generator = torch.Generator().manual_seed(0)
    width = min(max_length, 32)
    ids = torch.randint(1000, model.config.vocab_size - 1, (rows, width), generator=generator)
    mask = torch.ones_like(ids)
    mask[-1, width // 2:] = 0
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": torch.zeros_like(ids)}


@torch.inference_mode()
def outputs(model: torch.nn.Module, batch: dict) -> torch.Tensor:
    """What a model outputs on `batch`, whatever its head: class, span or token logits."""
    out = model(**batch)
    names = ("logits", "prediction_logits", "start_logits", "end_logits")
    return torch.cat([getattr(out, n).float().flatten() for n in names if getattr(out, n, None) is not None])


def check(folder: Folder, rebuilt: Rebuilt, reference: torch.Tensor, limit: int | None = None,
          batch_size: int = 64) -> Check:
    """Compare the loaded folder with the srnets model's `reference` outputs (on probe_batch) and
    with the run's stored predictions (the first `limit` examples of each split; None: all)."""
    exported, tokenizer = load(folder)
    batch = probe_batch(exported, rebuilt.config.max_length)
    result = Check(float((outputs(exported, batch) - reference).abs().max()))
    if not rebuilt.predictions or not rebuilt.kind.stores_predictions:
        return result  # SQuAD and the corpus store no per-example predictions
    data = load_task(rebuilt.config.task, rebuilt.config.data)
    for name, split in data.eval_splits.items():
        stored = rebuilt.predictions.get(name)
        if stored is None:
            continue
        count = len(split) if limit is None else min(limit, len(split))
        encoded = encode(split.head(count), tokenizer, tokenizer.model_max_length, "export", cache=False)
        probs = predict(exported, encoded, batch_size, tokenizer.pad_token_id or 0)
        if stored.dtype.kind == "f":  # a score (regression), not a class
            agree = int(np.sum(np.abs(probs[:, 0] - stored[:count]) <= SCORE_TOLERANCE))
        else:
            agree = int(np.sum(probs.argmax(axis=1) == stored[:count]))
        result.agreement[name] = (agree, count)
    return result
