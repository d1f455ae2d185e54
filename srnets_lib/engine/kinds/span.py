"""Span extraction (SQuAD v1.1, TAMT section 4.1): a span head on the backbone, trained on the
questions' windows with the span loss and scored by dev F1 and exact match, as
imp_and_fine_tune/squad_trans.py of llyx97/TAMT trains and scores them; eager (never compiled).
With reduced data (TAMT figure 9, data.subset_size) the training set is a random subset of the
windows, as squad_trans_few.py:1005 splits its features (theirs draws from torch's global
generator after the model's initialisation; here from one seeded with data.subset_seed)."""

from __future__ import annotations

import warnings

import numpy as np
import torch

from srnets_lib.data import squad
from srnets_lib.data.encode import Encoded, collate, eval_batches
from srnets_lib.data.load import random_subset
from srnets_lib.data.squad import Windows, predictions
from srnets_lib.metrics import squad_exact_match, squad_f1
from srnets_lib.model import backbones, pruning
from srnets_lib.engine import losses, runtime
from srnets_lib.engine.kinds.base import Eager, Parts, TaskKind
from srnets_lib.engine.kinds.classification import LabelledBatches


class Span(TaskKind):
    name = "span extraction"
    losses = ("std",)  # no class to debias: the span loss (losses.span)
    lengths = "full"  # every window is max_length tokens
    auto_class, pipeline_tag = "AutoModelForQuestionAnswering", "question-answering"
    example_inputs = 'tokenizer("a question", "its context", truncation=True, return_tensors="pt")'

    @classmethod
    def workload(cls, config):
        return "finetune"  # the encoder is the cost: the heads differ by one small matrix

    @classmethod
    def load_model(cls, config, data):
        return backbones.load_qa_model(config.backbone, config.num_layers, seed=config.seed)

    @classmethod
    def parts(cls, config, store, request, data, tokenizer, model) -> Parts:
        """The training questions' windows of max_length tokens as LabelledBatches (labels: the gold start
        and end positions), the span loss, and the dev F1 and exact match. Eager: never compiled."""
        if runtime.compiled():
            warnings.warn(f"run {config.key()}: SQuAD runs are not compiled; this one runs eagerly", stacklevel=2)
        train, dev = (squad.features(examples, tokenizer, config.max_length, doc_stride(config.max_length))
                      for examples in (data.train, data.dev))
        encoded = train.encoded
        if config.data.subset_size is not None:  # reduced data (TAMT figure 9): a random subset of the windows
            encoded = encoded.take(random_subset(len(train), config.data.subset_size, config.data.subset_seed,
                                                 "SQuAD's training windows"))
            data.description += (f"; a random subset of {config.data.subset_size} of its {len(train)} training "
                                 f"windows (seed {config.data.subset_seed})")
        pad_id = tokenizer.pad_token_id or 0
        return Parts(len(encoded), LabelledBatches(config, encoded, pad_id, compiled=False),
                     SpanLoss(model, config.precision),
                     SpanEvaluator(dev, request.eval_batch_size, pad_id, config.precision))


def doc_stride(max_length: int) -> int:
    """How far apart an example's windows start: a third of the window, the authors' doc_stride
    128 of max_seq_length 384 (their run_squad scripts); smaller windows (the tiny tests') keep
    the proportion."""
    return max_length // 3


class SpanLoss(Eager):
    """The loss of a batch of windows: losses.span of the model's start and end logits against
    the gold positions (the batch's labels)."""

    def __init__(self, model, precision: str):
        self.model, self.precision = model, precision

    def __call__(self, batch: dict) -> torch.Tensor:
        with runtime.autocast(self.precision):
            out = self.model(**batch["inputs"])
        return losses.span(out.start_logits.float(), out.end_logits.float(), batch["labels"])


@torch.inference_mode()
def span_logits(model, encoded: Encoded, batch_size: int, pad_id: int,
                precision: str) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Every window's start and end logits (padded positions included), in the windows' order;
    batches padded to their longest window (padding is masked out of attention)."""
    model.eval()
    starts: list = [None] * len(encoded)
    ends: list = [None] * len(encoded)
    for index in eval_batches(encoded, batch_size):
        with runtime.autocast(precision):
            out = model(**runtime.model_inputs(collate(encoded, index, pad_id)))
        start, end = (logits.float().cpu().numpy() for logits in (out.start_logits, out.end_logits))
        for row, i in enumerate(index):
            starts[i], ends[i] = start[row], end[row]
    return starts, ends


class SpanEvaluator(Eager):
    """SQuAD's dev scores: `dev` the F1 (the selection metric, as squad_trans.py reports the best
    'f1'), `dev_squad_exact_match` the exact match, over each question's answer from its windows
    (data/squad.predictions: n_best 20, max answer 30) against all its gold answers; fractions."""

    ood: tuple[str, ...] = ()
    reported: tuple[str, ...] = ()  # scored once, on the selected checkpoint (evaluation.TaskEvaluator)
    id_split = "dev"
    predictions: dict = {}  # answer spans, not class predictions: the run stores none (never mutated)

    def __init__(self, windows: Windows, batch_size: int, pad_id: int, precision: str):
        self.windows, self.batch_size, self.pad_id, self.precision = windows, batch_size, pad_id, precision

    def scores(self, model, splits=None) -> dict[str, float]:
        """The dev scores (none when `splits` leaves dev out: SQuAD has no OOD sets); leaves the
        model training."""
        if splits is not None and "dev" not in splits:
            return {}
        pruning.masks.invalidate_all(pruning.masked_modules(model))
        starts, ends = span_logits(model, self.windows.encoded, self.batch_size, self.pad_id, self.precision)
        model.train()
        answers = predictions(self.windows, starts, ends)
        predicted = [answers[e.id] for e in self.windows.examples]
        golds = [list(e.answers) for e in self.windows.examples]
        return {"dev": squad_f1(predicted, golds), "dev_squad_exact_match": squad_exact_match(predicted, golds)}
