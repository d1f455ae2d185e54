"""The unlabelled corpus of TAMT's task-agnostic runs (TAMT section 3.4), a task kind whose masks
serve every task: masked language modelling (MLM), hidden-state distillation from the dense model
(KD), and their sum; the MLM corruption of a batch; the batches, the loss of one step and the
held-out losses of a corpus run.

- MLM: 15% of the tokens are predicted, never [CLS], [SEP] (nor [UNK], unless mlm_unk_targets: the
  authors exclude only [CLS], [SEP] and padding); of those 80% read [MASK], 10% a random token, 10%
  themselves (mask_tokens in hg_transformers/data/data_collator.py of llyx97/TAMT). Logits are
  computed at the predicted positions only.
- KD: the mean over Transformer layers 1..L (the embedding output excluded) of the mean over
  tokens of 1 - cos(h_student, h_teacher) (equation 6); the teacher is the dense model, frozen, in
  eval mode (mask_trainer_mlm.py of llyx97/TAMT), or with its dropout on (kd_teacher_dropout:
  train_kd.py). With MLM+KD the teacher reads the same corrupted input. TAMT-KD alone reads
  uncorrupted blocks (kd_data=blocks), or the authors' KD data (kd_data=paragraphs, data/kd.py):
  instances padded to max_length, whose padded positions count in the mean with kd_loss_padding
  (train_kd.py's CosineLoss ignores the attention mask) and are left out otherwise.
- Held-out losses: MLM on the dev blocks (corrupted with seed 42, as eval_mlm.py), KD on the same
  blocks or on the dev KD instances (kd_data), as equation 6's cosine or eval_kd.py's default
  full_mse (kd_eval_loss), the teacher in eval mode (eval_kd.py).
Both run eagerly (never compiled, also on CUDA).
"""

from __future__ import annotations

from typing import Literal, Optional

import copy
import itertools

import numpy as np
import torch
import torch.nn.functional as F

from pydantic import Field

from srnets_lib.hparams import Group
from srnets_lib.data import corpus, kd
from srnets_lib.data.encode import Encoded, collate
from srnets_lib.model import backbones
from srnets_lib.engine import runtime
from srnets_lib.engine.kinds.base import Eager, Parts, TaskKind

MLM_PROBABILITY = 0.15
IGNORE = -100
OBJECTIVES = {"mlm": ("mlm",), "kd": ("kd",), "mlm+kd": ("mlm", "kd")}  # loss name -> its terms


class CorpusSettings(Group):
    """The corpus's own settings (TAMT section 3.4.3): what TAMT-KD trains on and how the
    held-out losses are measured."""

    # kd_data: what TAMT-KD trains on and the held-out KD loss reads: the MLM's contiguous blocks
    # (ours), or the authors' KD data, one instance per run of paragraphs padded to max_length with
    # one token altered (mask_training/pregenerate_training_data.py --one_seq); kd_loss_padding: the
    # KD loss averages over padded positions too (theirs: train_kd.py, eval_kd.py); kd_teacher_dropout:
    # the KD teacher keeps dropout on (train_kd.py never calls its eval()); kd_eval_loss: the held-out
    # KD loss is equation 6's cosine, or eval_kd.py's default full_mse; mlm_unk_targets: [UNK] may be an
    # MLM target (their mask_tokens excludes only [CLS], [SEP] and padding)
    kd_data: Literal["blocks", "paragraphs"] = "blocks"
    kd_loss_padding: bool = False
    kd_teacher_dropout: bool = False
    kd_eval_loss: Literal["cosine", "mse"] = "cosine"
    mlm_unk_targets: bool = False
    # drop_last: a batch smaller than batch_size is skipped (floor(n / b) steps an epoch, the lr decaying over
    # int(epochs n / b)), as train_kd.py:951-952 (828-829) does; eval_loss_batch: the held-out losses as the
    # mean of per-batch means over batches of this many (eval_kd.py:312-314; eval_mlm.py, the HF Trainer's
    # prediction loop; their --eval_batch_size 16), None: the mean over the held-out examples
    drop_last: bool = False
    eval_loss_batch: Optional[int] = Field(None, gt=0)


class Corpus(TaskKind):
    name = "corpus"
    losses = tuple(OBJECTIVES)
    task_agnostic = True  # a mask searched here is fine-tuned on every task
    auto_class, pipeline_tag = "AutoModelForMaskedLM", "fill-mask"
    lengths = "full"  # contiguous blocks of max_length tokens (KD instances: padded to it)
    example_inputs = 'tokenizer("a text with a [MASK] token", truncation=True, return_tensors="pt")'
    groups = (CorpusSettings,)

    @classmethod
    def validate(cls, config):
        super().validate(config)
        if config.data.subset_size is not None:
            raise ValueError("data.subset_size draws a random subset of a task's training examples: the corpus "
                             "counts blocks (data.train_size)")

    @classmethod
    def workload(cls, config):
        return config.loss  # IMP and the MLM head train weights on the same objective

    @classmethod
    def planned_rows(cls, config):
        """TAMT-KD on the authors' KD data counts its instances, which `plan` cannot (data/kd.py)."""
        if trains_on_instances(config) and config.data.source != "synthetic":
            return config.data.train_size or kd.PLANNED_INSTANCES
        return super().planned_rows(config)

    @classmethod
    def load_model(cls, config, data):
        return backbones.load_pretraining_model(config.backbone, config.num_layers, seed=config.seed)

    @classmethod
    def parts(cls, config, store, request, data, tokenizer, model) -> Parts:
        """Contiguous blocks (or the authors' KD instances), MLM-corrupted where the objective
        predicts tokens, the objective's loss against the dense model as teacher, and the held-out
        MLM and KD losses."""
        tokenizer_id = backbones.backbone_id(config.backbone, None)
        cfg, seed = config, config.data.data_seed

        def read(split, size, form):
            where = corpus.origin(cfg.data, split.name)
            if form == "blocks":
                return corpus.blocks(split, tokenizer, cfg.max_length, size, tokenizer_id, where)
            return kd.paragraphs(split, tokenizer, cfg.max_length, size, tokenizer_id, [seed, split.name == "dev"], where)

        teacher = teacher_of(model, config.kd_teacher_dropout)
        loss = CorpusLoss(model, teacher, config.loss, config.precision, config.kd_loss_padding)
        if trains_on_instances(config):
            batches = InstanceBatches(read(data.train, config.data.train_size, "paragraphs"), tokenizer,
                                      config.batch_size, config.seed, config.max_length)
        else:
            batches = CorpusBatches(read(data.train, config.data.train_size, "blocks"), tokenizer, config.batch_size,
                                    config.seed, "mlm" in OBJECTIVES[config.loss], config.mlm_unk_targets)
        dev_kd = read(data.dev, config.data.dev_size, "paragraphs") if config.kd_data == "paragraphs" else None
        evaluator = CorpusEvaluator(loss, read(data.dev, config.data.dev_size, "blocks"), tokenizer,
                                    request.eval_batch_size, config, dev_kd)
        return Parts(len(batches), batches, loss, evaluator)


def trains_on_instances(config) -> bool:
    """TAMT-KD on the authors' KD data (MLM and MLM+KD read blocks whatever kd_data says)."""
    return config.loss == "kd" and config.kd_data == "paragraphs"


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
    logits = backbones.mlm_head(model)(hidden[where])
    return F.cross_entropy(logits.float(), labels[where])


def kd_loss(student: tuple, teacher: tuple, mask: torch.Tensor | None = None, measure: str = "cosine") -> torch.Tensor:
    """Mean over layers 1..L of the mean over tokens of 1 - cos(student, teacher) (equation 6), or of
    the squared error averaged over the hidden size (measure "mse": nn.MSELoss, eval_kd.py's
    full_mse); over the tokens where `mask` is 1 (None: every position, padding included)."""
    terms = []
    for s, t in zip(student[1:], teacher[1:]):
        s, t = s.float(), t.float()
        per_token = (1 - F.cosine_similarity(s, t, dim=-1)) if measure == "cosine" else (s - t).pow(2).mean(-1)
        terms.append(per_token.mean() if mask is None else (per_token * mask).sum() / mask.sum())
    return torch.stack(terms).mean()


def teacher_of(model, dropout: bool = False) -> torch.nn.Module:
    """A frozen copy of the dense model (before masks are installed), in eval mode, or training
    mode with `dropout` (train_kd.py's teacher: never put in eval mode)."""
    teacher = copy.deepcopy(model).train(dropout)
    teacher.requires_grad_(False)
    return teacher


class CorpusLoss(Eager):
    """The loss of one step: the objective's terms summed with equal weights."""

    def __init__(self, model, teacher, objective: str, precision: str, padding_in_kd: bool = False):
        self.model, self.teacher, self.terms, self.precision = model, teacher, OBJECTIVES[objective], precision
        self.padding_in_kd = padding_in_kd

    def losses(self, batch: dict, terms: tuple[str, ...] | None = None, measure: str = "cosine") -> dict[str, torch.Tensor]:
        """The `terms` (None: the objective's) of a batch; MLM where it has labels."""
        inputs, terms = batch["inputs"], terms or self.terms
        base = getattr(self.model, self.model.base_model_prefix)
        with runtime.autocast(self.precision):
            out = base(**inputs, output_hidden_states="kd" in terms, return_dict=True)
            found = {}
            if batch["labels"] is not None and "mlm" in terms:
                found["mlm"] = mlm_loss(self.model, out.last_hidden_state, batch["labels"])
            if "kd" in terms:
                with torch.no_grad():
                    taught = getattr(self.teacher, self.teacher.base_model_prefix)(
                        **inputs, output_hidden_states=True, return_dict=True)
                mask = inputs["attention_mask"] if batch.get("padded") and not self.padding_in_kd else None
                found["kd"] = kd_loss(out.hidden_states, taught.hidden_states, mask, measure)
        return found

    def __call__(self, batch: dict) -> torch.Tensor:
        terms = self.losses(batch)
        return sum(terms[t] for t in self.terms)


class CorpusBatches:
    """Batches of whole blocks: (step, batch) for steps start..end-1 (an epoch: the Schedule's
    `per_epoch` steps, the last batch partial); epoch e shuffles with seed (seed, e) and corrupts
    with (seed, e, position), so a resumed run sees the same batches."""

    def __init__(self, encoded: Encoded, tokenizer, batch_size: int, seed: int, corrupted: bool,
                 unk_targets: bool = False):
        self.batch_size, self.seed, self.corrupted = batch_size, seed, corrupted
        self.ids = encoded.ids.reshape(len(encoded), -1).astype(np.int64)
        never = ({tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id} if unk_targets
                 else set(tokenizer.all_special_ids))
        self.special = np.isin(self.ids, sorted(i for i in never if i is not None))
        self.vocab_size, self.mask_id = len(tokenizer), tokenizer.mask_token_id

    def __len__(self) -> int:
        return len(self.ids)

    def __call__(self, start: int, end: int, per_epoch: int):
        size = self.batch_size
        for epoch in itertools.count(start // per_epoch):
            order = np.random.default_rng([self.seed, epoch]).permutation(len(self))
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


class InstanceBatches(CorpusBatches):
    """Batches of the authors' KD instances (data/kd.py: already altered, so never corrupted here),
    each padded to max_length with its attention mask and token types, as train_kd.py reads them;
    shuffled per epoch as CorpusBatches."""

    def __init__(self, encoded: Encoded, tokenizer, batch_size: int, seed: int, max_length: int):
        self.encoded, self.batch_size, self.seed, self.width = encoded, batch_size, seed, max_length
        self.pad_id = tokenizer.pad_token_id or 0

    def __len__(self) -> int:
        return len(self.encoded)

    def batch(self, index: np.ndarray, rng: np.random.Generator | None = None) -> dict:
        inputs = collate(self.encoded, index, self.pad_id, pad_to=self.width)
        return {"inputs": runtime.model_inputs(inputs), "labels": None, "full_batch": len(index) == self.batch_size,
                "padded": True}


class CorpusEvaluator(Eager):
    """Held-out MLM and KD losses (the corruption fixed by seed 42, as the authors' eval_mlm.py; KD
    on the same blocks, or on the dev KD instances `kd_instances`, as config.kd_eval_loss
    measures it), averaged over the examples, or with config.eval_loss_batch the mean of the means
    of batches of that many (eval_kd.py:312-314, eval_mlm.py); `dev` is minus the run's own
    objective, so the higher the better as for a task."""

    ood: tuple[str, ...] = ()
    reported: tuple[str, ...] = ()  # scored once, on the selected checkpoint (evaluation.TaskEvaluator)
    id_split = "dev"
    predictions: dict = {}  # losses, not per-example predictions: the run stores none (never mutated)

    def __init__(self, loss: CorpusLoss, encoded: Encoded, tokenizer, batch_size: int, config,
                 kd_instances: Encoded | None = None):
        self.per_batch = config.eval_loss_batch is not None
        batch_size = config.eval_loss_batch or batch_size
        batches = CorpusBatches(encoded, tokenizer, batch_size, 42, True, config.mlm_unk_targets)
        rng = np.random.default_rng(42)
        self.batches = [batches.batch(np.arange(i, min(i + batch_size, len(batches))), rng)
                        for i in range(0, len(batches), batch_size)]
        self.kd_batches = None
        if kd_instances is not None:
            instances = InstanceBatches(kd_instances, tokenizer, batch_size, 42, config.max_length)
            self.kd_batches = [instances.batch(np.arange(i, min(i + batch_size, len(instances))))
                               for i in range(0, len(instances), batch_size)]
        self.loss, self.terms, self.measure = loss, OBJECTIVES[config.loss], config.kd_eval_loss

    def _totals(self, batches: list[dict], terms: tuple[str, ...]) -> tuple[dict[str, float], int]:
        totals, rows = dict.fromkeys(terms, 0.0), 0
        for batch in batches:
            n = 1 if self.per_batch else batch["inputs"]["input_ids"].shape[0]  # a batch's mean, or its rows
            for term, value in self.loss.losses(batch, terms, self.measure).items():
                totals[term] += float(value) * n
            rows += n
        return totals, rows

    @torch.inference_mode()
    def scores(self, model, splits=None) -> dict[str, float]:
        model.eval()
        teacher_mode = self.loss.teacher.training
        self.loss.teacher.eval()
        totals, rows = self._totals(self.batches, ("mlm",) if self.kd_batches else ("mlm", "kd"))
        scores = {f"{term}_loss": total / rows for term, total in totals.items()}
        if self.kd_batches:
            totals, rows = self._totals(self.kd_batches, ("kd",))
            scores["kd_loss"] = totals["kd"] / rows
        model.train()
        self.loss.teacher.train(teacher_mode)
        return {"dev": -sum(scores[f"{t}_loss"] for t in self.terms), **scores}
