"""The unlabelled corpus of TAMT's task-agnostic runs (TAMT section 3.4), a task kind whose masks
serve every task: masked language modelling (MLM), hidden-state distillation from the dense model
(KD), and their sum; the MLM corruption of a batch; the batches, the loss of one step and the
held-out losses of a corpus run.

- MLM: 15% of the tokens (not [CLS]/[SEP]) are predicted; of those 80% read [MASK], 10% a random
  token, 10% themselves (mask_tokens in hg_transformers/data/data_collator.py of llyx97/TAMT).
  Logits are computed at the predicted positions only.
- KD: the mean over Transformer layers 1..L (the embedding output excluded) of the mean over
  tokens of 1 - cos(h_student, h_teacher); the teacher is the dense model, frozen, in eval mode
  (mask_trainer_mlm.py of llyx97/TAMT). With MLM+KD the teacher reads the same corrupted input.
  TAMT-KD alone reads uncorrupted blocks here (the authors' KD data alter one token per block).
Both run eagerly (never compiled, also on CUDA).
"""

from __future__ import annotations

import copy
import itertools

import numpy as np
import torch
import torch.nn.functional as F

from srnets_lib.data import corpus
from srnets_lib.data.encode import Encoded
from srnets_lib.model import backbones as models
from srnets_lib.engine import runtime
from srnets_lib.engine.kinds.base import Eager, Parts, TaskKind

MLM_PROBABILITY = 0.15
IGNORE = -100
OBJECTIVES = {"mlm": ("mlm",), "kd": ("kd",), "mlm+kd": ("mlm", "kd")}  # loss name -> its terms


class Corpus(TaskKind):
    name = "corpus"
    losses = tuple(OBJECTIVES)
    task_agnostic = True  # a mask searched here is fine-tuned on every task
    lengths = "full"  # contiguous blocks of max_length tokens
    auto_class, pipeline_tag = "AutoModelForMaskedLM", "fill-mask"
    example_inputs = 'tokenizer("a text with a [MASK] token", truncation=True, return_tensors="pt")'

    @classmethod
    def workload(cls, config):
        return config.loss  # IMP and the MLM head train weights on the same objective

    @classmethod
    def load_model(cls, config, data):
        return models.load_pretraining_model(config.backbone, config.num_layers, seed=config.seed)

    @classmethod
    def parts(cls, config, store, request, data, tokenizer, model) -> Parts:
        """Contiguous blocks, MLM-corrupted where the objective predicts tokens, the objective's loss
        against the dense model as teacher, and the held-out MLM and KD losses."""
        tokenizer_id = models.backbone_id(config.backbone, None)
        train, dev = (corpus.blocks(split, tokenizer, config.max_length, size, tokenizer_id,
                                    corpus.origin(config.data, split.name))
                      for split, size in ((data.train, config.data.train_size), (data.dev, config.data.dev_size)))
        loss = PretrainingLoss(model, teacher_of(model), config.loss, config.precision)
        batches = CorpusBatches(train, tokenizer, config.batch_size, config.seed, "mlm" in OBJECTIVES[config.loss])
        return Parts(len(train), batches, loss, CorpusEvaluator(loss, dev, tokenizer, request.eval_batch_size,
                                                                config.loss))


def corrupt(ids: np.ndarray, special: np.ndarray, vocab_size: int, mask_id: int,
            rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(inputs, labels) of an MLM batch: labels hold the original token where one is predicted,
    IGNORE elsewhere."""
    chosen = (rng.random(ids.shape) < MLM_PROBABILITY) & ~special
    labels = np.where(chosen, ids, IGNORE)
    draw = rng.random(ids.shape)
    inputs = np.where(chosen & (draw < 0.8), mask_id, ids)
    randomised = chosen & (draw >= 0.8) & (draw < 0.9)
    inputs = np.where(randomised, rng.integers(vocab_size, size=ids.shape), inputs)
    return inputs, labels


def mlm_loss(model, hidden: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Cross-entropy of the MLM head's predictions at the predicted positions only."""
    where = labels != IGNORE
    logits = models.mlm_head(model)(hidden[where])
    return F.cross_entropy(logits.float(), labels[where])


def kd_loss(student: tuple, teacher: tuple) -> torch.Tensor:
    """Mean over layers 1..L of the mean over tokens of 1 - cos(student, teacher)."""
    terms = [(1 - F.cosine_similarity(s.float(), t.float(), dim=-1)).mean() for s, t in zip(student[1:], teacher[1:])]
    return torch.stack(terms).mean()


def teacher_of(model) -> torch.nn.Module:
    """A frozen copy of the dense model, in eval mode (before masks are installed)."""
    teacher = copy.deepcopy(model).eval()
    teacher.requires_grad_(False)
    return teacher


class PretrainingLoss(Eager):
    """The loss of one step: the objective's terms summed with equal weights."""

    def __init__(self, model, teacher, objective: str, precision: str):
        self.model, self.teacher, self.terms, self.precision = model, teacher, OBJECTIVES[objective], precision

    def losses(self, batch: dict) -> dict[str, torch.Tensor]:
        inputs, kd = batch["inputs"], "kd" in self.terms or batch.get("all_terms")
        base = getattr(self.model, self.model.base_model_prefix)
        with runtime.autocast(self.precision):
            out = base(**inputs, output_hidden_states=bool(kd), return_dict=True)
            terms = {}
            if batch["labels"] is not None:
                terms["mlm"] = mlm_loss(self.model, out.last_hidden_state, batch["labels"])
            if kd:
                with torch.no_grad():
                    taught = getattr(self.teacher, self.teacher.base_model_prefix)(
                        **inputs, output_hidden_states=True, return_dict=True)
                terms["kd"] = kd_loss(out.hidden_states, taught.hidden_states)
        return terms

    def __call__(self, batch: dict) -> torch.Tensor:
        terms = self.losses(batch)
        return sum(terms[t] for t in self.terms)


class CorpusBatches:
    """Batches of whole blocks: (step, batch) for steps start..end-1 (an epoch: the Schedule's
    `per_epoch` steps, the last batch partial); epoch e shuffles with seed (seed, e) and corrupts
    with (seed, e, position), so a resumed run sees the same batches."""

    def __init__(self, encoded: Encoded, tokenizer, batch_size: int, seed: int, corrupted: bool):
        self.batch_size, self.seed, self.corrupted = batch_size, seed, corrupted
        self.ids = encoded.ids.reshape(len(encoded), -1).astype(np.int64)
        self.special = np.isin(self.ids, tokenizer.all_special_ids)
        self.vocab_size, self.mask_id = len(tokenizer), tokenizer.mask_token_id

    def __call__(self, start: int, end: int, per_epoch: int):
        size = self.batch_size
        for epoch in itertools.count(start // per_epoch):
            order = np.random.default_rng([self.seed, epoch]).permutation(len(self.ids))
            for position in range(per_epoch):
                at = epoch * per_epoch + position
                if at >= end:
                    return
                if at >= start:
                    index = order[position * size:(position + 1) * size]
                    yield at, self.batch(index, np.random.default_rng([self.seed, epoch, position]))

    def batch(self, index: np.ndarray, rng: np.random.Generator) -> dict:
        ids, labels = self.ids[index], None
        if self.corrupted:
            ids, labels = corrupt(ids, self.special[index], self.vocab_size, self.mask_id, rng)
            labels = torch.from_numpy(labels).to(runtime.device())
        inputs = {"input_ids": torch.from_numpy(ids), "attention_mask": torch.ones(ids.shape, dtype=torch.int64),
                  "token_type_ids": torch.zeros(ids.shape, dtype=torch.int64)}
        return {"inputs": runtime.model_inputs(inputs), "labels": labels, "full_batch": len(index) == self.batch_size}


class CorpusEvaluator(Eager):
    """Held-out MLM and KD losses (the corruption fixed by seed 42, as the authors' eval_mlm.py);
    `dev` is minus the run's own objective, so the higher the better as for a task."""

    ood: tuple[str, ...] = ()
    reported: tuple[str, ...] = ()  # scored once, on the selected checkpoint (evaluation.Evaluator)
    id_split = "dev"
    predictions: dict = {}  # losses, not per-example predictions: the run stores none (never mutated)

    def __init__(self, loss: PretrainingLoss, encoded: Encoded, tokenizer, batch_size: int, objective: str):
        batches = CorpusBatches(encoded, tokenizer, batch_size, 42, True)
        rng = np.random.default_rng(42)
        self.batches = [batches.batch(np.arange(i, min(i + batch_size, len(batches.ids))), rng)
                        for i in range(0, len(batches.ids), batch_size)]
        self.loss, self.terms = loss, OBJECTIVES[objective]

    @torch.inference_mode()
    def scores(self, model, splits=None) -> dict[str, float]:
        model.eval()
        totals, rows = {"mlm": 0.0, "kd": 0.0}, 0
        for batch in self.batches:
            n = batch["inputs"]["input_ids"].shape[0]
            for term, value in self.loss.losses({**batch, "all_terms": True}).items():
                totals[term] += float(value) * n
            rows += n
        model.train()
        scores = {f"{term}_loss": total / rows for term, total in totals.items()}
        return {"dev": -sum(scores[f"{t}_loss"] for t in self.terms), **scores}

