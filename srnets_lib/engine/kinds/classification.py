"""Labelled tasks (the paper's three, GLUE's): a classifier (or STS-B's regression head) on the
backbone, trained on length-grouped or padded batches of tokenised pairs with a debiasing loss
(losses.py: std, PoE, reweighting, confidence regularisation, which read the bias model's and the
confreg teacher's probabilities), compiled on CUDA (step.ForwardLoss), scored on the ID dev set,
the ID test split and the OOD sets (evaluation.py)."""

from __future__ import annotations

import itertools
from typing import Optional

import numpy as np
import torch

from srnets_lib.hparams import Group, Settings
from srnets_lib.data import bias as bias_lib
from srnets_lib.data.encode import Encoded, collate, encode, train_batches
from srnets_lib.data.splits import TaskData
from srnets_lib.data.tasks import spec
from srnets_lib.model import backbones
from srnets_lib.engine import losses, runtime, step
from srnets_lib.engine.evaluation import TaskEvaluator, predict
from srnets_lib.engine.kinds.base import Parts, Stored, TaskKind

WORKLOADS = {"mask": "mask", "imp": "imp", "imp-rw": "imp"}  # method -> bench workload; others fine-tune


class ClassificationSettings(Group):
    """The dev metric a classification run selects on and reports."""

    # the metric of the dev score, selected on and reported; None: the task's. max_acc_acc_and_f1 on MRPC: the
    # larger of accuracy and acc_and_f1 at each evaluation, which the authors' glue_trans.py:425 keeps and reports
    dev_metric: Optional[str] = None


class Classification(TaskKind):
    name = "classification"
    losses = tuple(losses.LOSSES)
    auto_class, pipeline_tag = "AutoModelForSequenceClassification", "text-classification"
    example_inputs = 'tokenizer("a premise", "a hypothesis", truncation=True, return_tensors="pt")'
    stores_predictions = True
    groups = (ClassificationSettings,)

    @classmethod
    def validate(cls, config: Settings) -> None:
        super().validate(config)
        if config.dev_metric is not None:
            recorded = spec(config.task).metrics or (spec(config.task).metric,)
            if config.dev_metric not in recorded:
                raise ValueError(f"dev_metric={config.dev_metric!r} is not recorded for task {config.task}; accepted: "
                                 f"{', '.join(recorded)} (or null: the task's {spec(config.task).metric})")

    @classmethod
    def workload(cls, config):
        return WORKLOADS.get(config.method, "finetune")

    @classmethod
    def load_model(cls, config, data):
        return backbones.load_model(config.backbone, len(data.label_names), config.num_layers, seed=config.seed,
                                    pooling=config.pooling)

    @classmethod
    def parts(cls, config, store, request, data: TaskData, tokenizer, model) -> Parts:
        """Its tokenised splits, the bias model's and teacher's predictions the loss reads,
        length-grouped batches, the loss (losses.py) and the task's scores."""
        if config.dev_metric is not None:  # the dev score's metric, selected on and reported (MRPC: the authors')
            data.metric = config.dev_metric
        bias_probs, bias_source = authors_bias(config, data)  # drops the rows the authors' file lacks
        pad_id = tokenizer.pad_token_id or 0
        tokenizer_id = backbones.backbone_id(config.backbone, None)
        encoded = {name: encode(split, tokenizer, config.max_length, tokenizer_id)
                   for name, split in [("train", data.train), *data.eval_splits.items()]}
        if bias_probs is None and config.loss in bias_lib.NEEDS_BIAS:
            bias_probs, bias_source = our_bias(config, data, tokenizer, model)
        teacher_probs = teacher_predictions(config, store, data, encoded["train"], pad_id, request.eval_batch_size)
        compiled = runtime.compiled()
        batches = LabelledBatches(config, encoded["train"], pad_id, compiled, bias_probs, teacher_probs)
        return Parts(len(data.train), batches, step.ForwardLoss(model, config.training_loss, config.precision, compiled),
                     TaskEvaluator(data, encoded, request.eval_batch_size, pad_id, config.precision, config.max_length,
                                   runtime.compile(model) if compiled else None), bias_source)


def authors_bias(config: Settings, data: TaskData):
    """(probs, source) from the authors' bias-model files (bias_model=authors); training rows they
    have no prediction for are dropped, as theirs (QQP). (None, None) otherwise."""
    if config.loss not in bias_lib.NEEDS_BIAS or config.bias_model != "authors":
        return None, None
    probs, kept = bias_lib.authors_predictions(config.task, data.train, config.bias_path, config.data.path)
    if len(kept) < len(data.train):
        dropped = len(data.train) - len(kept)
        data.train = data.train.subset(kept, f"training rows without an authors' bias prediction dropped: {dropped}")
        data.description += "; " + data.train.notes[-1]
    source = f"authors' predictions ({bias_lib.AUTHORS_FILES[config.task][0]})"
    return torch.from_numpy(probs).float().to(runtime.device()), source


def our_bias(config: Settings, data: TaskData, tokenizer, model):
    """(probs, source) from this project's out-of-fold bias model (data/bias.py)."""
    predictions = bias_lib.bias_predictions(config.task, data, tokenizer, backbones.input_embeddings(model),
                                            config.backbone, config.word_vectors)
    source = f"ours (out-of-fold logistic regression; word vectors: {predictions.vectors_source})"
    return torch.from_numpy(predictions.probs["train"]).float().to(runtime.device()), source


def teacher_predictions(config: Settings, store: Stored, data: TaskData, train: Encoded, pad_id: int,
                        batch_size: int) -> torch.Tensor | None:
    """The confreg teacher's (a std full model's) probabilities on the training set."""
    if config.loss != "confreg":
        return None
    spec = config.teacher
    teacher = backbones.load_model(spec.backbone, len(data.label_names), spec.num_layers,
                                   pooling=spec.pooling).to(runtime.device())
    store.of(spec).load_weights(teacher)
    return torch.from_numpy(predict(teacher, train, batch_size, pad_id, config.precision)).to(runtime.device())


class LabelledBatches:
    """Training batches on the device. Epoch e shuffles with seed (seed, e), so a resumed run sees the
    same batches. Length-grouped batches with dynamic padding, or random batches padded to
    max_length (padding=max_length, the authors'). SQuAD's windows are batched the same way."""

    def __init__(self, config: Settings, encoded: Encoded, pad_id: int, compiled: bool, bias_probs=None,
                 teacher_probs=None):
        self.config, self.encoded, self.pad_id = config, encoded, pad_id
        self.compiled, self.bias_probs, self.teacher_probs = compiled, bias_probs, teacher_probs

    def __call__(self, start: int, end: int, per_epoch: int):
        if end <= 0:
            return
        grouped = self.config.padding == "dynamic"
        for epoch in itertools.count(start // per_epoch):
            rng = np.random.default_rng([self.config.seed, epoch])
            for position, index in enumerate(train_batches(self.encoded, self.config.batch_size, rng, grouped)):
                at = epoch * per_epoch + position
                if at >= end:
                    return
                if at >= start:
                    yield at, self.batch(index)

    def batch(self, index: np.ndarray) -> dict:
        """Inputs, labels, the bias model's and teacher's probabilities, and whether it is full."""
        cfg, encoded = self.config, self.encoded
        if cfg.padding == "max_length":
            width = cfg.max_length
        else:
            width = step.bucket(int(encoded.lengths[index].max()), cfg.max_length) if self.compiled else None
        where = torch.from_numpy(index).to(runtime.device())
        return {"inputs": runtime.model_inputs(collate(encoded, index, self.pad_id, pad_to=width)),
                "labels": torch.from_numpy(encoded.labels[index]).to(runtime.device()),
                "bias_probs": None if self.bias_probs is None else self.bias_probs[where],
                "teacher_probs": None if self.teacher_probs is None else self.teacher_probs[where],
                "full_batch": len(index) == cfg.batch_size}
