"""A run's set-up, in a straight line: data, tokenizer, model, the weights or mask it starts
from, its method and schedule, and the objects the training loop (fit.py) calls, which depend on
the kind of task: batches, the loss of a batch, the evaluator (a labelled task: task_parts; the
unlabelled corpus of TAMT's task-agnostic runs: corpus_parts; SQuAD's spans: span_parts)."""

from __future__ import annotations

import itertools
import warnings
from dataclasses import dataclass

import numpy as np
import torch

from srnets_lib.data import bias as bias_lib
from srnets_lib.model import dropout, backbones as models, pruning
from srnets_lib.training import losses, pretraining, qa, runtime, step
from srnets_lib import methods
from srnets_lib.methods import schedule
from srnets_lib.settings.config import CORPUS, RunConfig
from srnets_lib.data import SquadData, TaskData, corpus, fingerprints, load_task, spec, squad
from srnets_lib.data.encode import Encoded, collate, encode, train_batches
from srnets_lib.training.evaluation import Evaluator, predict
from srnets_lib.settings.request import Request
from srnets_lib.store.runs import Run
from srnets_lib.methods.schedule import Schedule


@dataclass
class TrainingRun:
    config: RunConfig
    store: Run
    data: TaskData | SquadData
    fingerprint: dict[str, str]  # of the data as read (before rows without a bias prediction are dropped)
    model: torch.nn.Module
    method: methods.Method
    schedule: Schedule
    trainable: dict[str, torch.nn.Parameter]
    batches: object  # (start, end) -> (step, batch) pairs: Batches, pretraining.CorpusBatches
    forward: object  # batch -> loss: step.ForwardLoss, pretraining.PretrainingLoss, qa.SpanLoss
    evaluator: object  # evaluation.Evaluator, pretraining.CorpusEvaluator, qa.SpanEvaluator
    bias_source: str | None

    def optimization(self, at_step: int) -> step.Optimization:
        """The optimiser and lr schedule (over t_max) of the segment that step `at_step` is in."""
        cfg = self.config
        return step.Optimization(list(self.trainable.values()), cfg.lr, cfg.weight_decay, self.schedule.t_max,
                                 step.warmup_steps(cfg.warmup_steps, cfg.warmup_ratio, self.schedule.t_max),
                                 cfg.max_grad_norm, cfg.grad_clip)


@dataclass
class Parts:
    """What the loop calls that depends on the kind of task: batches, loss, evaluation."""

    train_rows: int  # training examples (a corpus: blocks)
    batches: object
    forward: object
    evaluator: object
    bias_source: str | None = None


def build_run(config: RunConfig, store: Run, request: Request) -> TrainingRun:
    runtime.use_precision(config.precision)
    data = load_task(config.task, config.data)
    fingerprint = fingerprints(data)
    tokenizer = models.load_tokenizer(config.backbone)
    kind = CORPUS if config.task == CORPUS else spec(config.task).kind
    bias = None if kind in (CORPUS, "span") else authors_bias(config, data)
    model = load_model(config, data, kind).to(runtime.device())
    models.check_max_length(model.config, config.max_length, config.backbone)
    if config.dropout_rng == "fast":
        dropout.use_fast_dropout(model)
    if config.init_from is not None:
        store.of(config.init_from).load_weights(model, config.init_step)
    if kind == CORPUS:
        parts = corpus_parts(config, request, data, tokenizer, model)
    elif kind == "span":
        parts = span_parts(config, request, data, tokenizer, model)
    else:
        parts = task_parts(config, store, request, data, tokenizer, model, bias)
    method = methods.create(config, parts.train_rows)
    install_masks(model, method, store)
    method.prepare(model)
    trainable = set_trainable(model, method.trainable(model))
    return TrainingRun(config, store, data, fingerprint, model, method, method.schedule, trainable, parts.batches,
                       parts.forward, parts.evaluator, parts.bias_source)


def load_model(config: RunConfig, data: TaskData | SquadData, kind: str) -> torch.nn.Module:
    """The model a run trains, its head initialised from the run's seed: the backbone with its
    pre-training heads (the corpus), a span head (SQuAD) or a classifier (a labelled task)."""
    if kind == CORPUS:
        return models.load_pretraining_model(config.backbone, config.num_layers, seed=config.seed)
    if kind == "span":
        return models.load_qa_model(config.backbone, config.num_layers, seed=config.seed)
    return models.load_model(config.backbone, len(data.label_names), config.num_layers, seed=config.seed,
                             pooling=config.pooling)


def task_parts(config: RunConfig, store: Run, request: Request, data: TaskData, tokenizer, model, bias) -> Parts:
    """A labelled task: its tokenised splits, the bias model's and teacher's predictions the loss
    reads, length-grouped batches, the loss (losses.py) and the task's scores."""
    bias_probs, bias_source = bias
    pad_id = tokenizer.pad_token_id or 0
    tokenizer_id = models.backbone_id(config.backbone, None)
    encoded = {name: encode(split, tokenizer, config.max_length, tokenizer_id)
               for name, split in [("train", data.train), *data.eval_splits.items()]}
    if bias_probs is None and config.loss in losses.NEEDS_BIAS:
        bias_probs, bias_source = our_bias(config, data, tokenizer, model)
    teacher_probs = teacher_predictions(config, store, data, encoded["train"], pad_id, request.eval_batch_size)
    compiled = runtime.compiled()
    return Parts(len(data.train), Batches(config, encoded["train"], pad_id, compiled, bias_probs, teacher_probs),
                 step.ForwardLoss(model, config.training_loss, config.precision, compiled),
                 Evaluator(data, encoded, request.eval_batch_size, pad_id, config.precision, config.max_length,
                           runtime.compile(model) if compiled else None), bias_source)


def corpus_parts(config: RunConfig, request: Request, data: TaskData, tokenizer, model) -> Parts:
    """Unlabelled text (TAMT): contiguous blocks, MLM-corrupted where the objective predicts tokens,
    the objective's loss against the dense model as teacher, and the held-out MLM and KD losses."""
    tokenizer_id = models.backbone_id(config.backbone, None)
    train, dev = (corpus.blocks(split, tokenizer, config.max_length, size, tokenizer_id,
                                corpus.origin(config.data, split.name))
                  for split, size in ((data.train, config.data.train_size), (data.dev, config.data.dev_size)))
    loss = pretraining.PretrainingLoss(model, pretraining.teacher_of(model), config.loss, config.precision)
    batches = pretraining.CorpusBatches(train, tokenizer, config.batch_size, config.seed,
                                        "mlm" in pretraining.OBJECTIVES[config.loss])
    return Parts(len(train), batches, loss,
                 pretraining.CorpusEvaluator(loss, dev, tokenizer, request.eval_batch_size, config.loss))


def span_parts(config: RunConfig, request: Request, data: SquadData, tokenizer, model) -> Parts:
    """SQuAD v1.1 (TAMT section 4.1): the training questions' windows of max_length tokens in
    Batches (labels: the gold start and end positions), the span loss, and the dev F1 and exact
    match (qa.py). Eager: never compiled."""
    if runtime.compiled():
        warnings.warn(f"run {config.key()}: SQuAD runs are not compiled; this one runs eagerly", stacklevel=2)
    train, dev = (squad.features(examples, tokenizer, config.max_length, qa.doc_stride(config.max_length))
                  for examples in (data.train, data.dev))
    pad_id = tokenizer.pad_token_id or 0
    return Parts(len(train), Batches(config, train.encoded, pad_id, compiled=False),
                 qa.SpanLoss(model, config.precision),
                 qa.SpanEvaluator(dev, request.eval_batch_size, pad_id, config.precision))


def install_masks(model, method: methods.Method, store: Run) -> None:
    """MaskedLinear where the method masks; a subnetwork fine-tuned in isolation (section 4.3)
    gets its source run's mask (one level's for an imp-rw run).

    Which masks: every layer the method masks in this model must have one in the source's file
    (apply_masks refuses the run otherwise), and the file's masks of layers this model lacks are
    left out. That is a task-agnostic mask's pooler for SQuAD: the span head has no pooler
    (BertForQuestionAnswering, models.load_qa_model), and in the authors' squad_trans.py the
    pooler it keeps, masked, feeds nothing the span logits read, so leaving it out changes no
    computation; the reported sparsity counts the Transformer matrices only, which it has."""
    layers = method.masked_layers()
    if not layers:
        return
    masked = pruning.install(model, layers)
    for module in masked.values():
        module.cache_eval_weight = not runtime.compiled()
    config = method.config
    if config.mask_from is not None:
        source = store.of(config.mask_from)
        masks = source.masks(config.mask_level)
        pruning.apply_masks(masked, {n: m for n, m in masks.items() if n in masked}, str(source.dir))


def set_trainable(model, params: list[torch.nn.Parameter]) -> dict[str, torch.nn.Parameter]:
    """Freeze everything but `params` (a method's declaration); return them by name, in order."""
    names = {id(p): n for n, p in model.named_parameters()}
    model.requires_grad_(False)
    for p in params:
        p.requires_grad_(True)
    return {names[id(p)]: p for p in params}


def authors_bias(config: RunConfig, data: TaskData):
    """(probs, source) from the authors' bias-model files (bias_model=authors); training rows they
    have no prediction for are dropped, as theirs (QQP). (None, None) otherwise."""
    if config.loss not in losses.NEEDS_BIAS or config.bias_model != "authors":
        return None, None
    probs, kept = bias_lib.authors_predictions(config.task, data.train, config.bias_path, config.data.path)
    if len(kept) < len(data.train):
        dropped = len(data.train) - len(kept)
        data.train = data.train.subset(kept, f"training rows without an authors' bias prediction dropped: {dropped}")
        data.description += "; " + data.train.notes[-1]
    source = f"authors' predictions ({bias_lib.AUTHORS_FILES[config.task][0]})"
    return torch.from_numpy(probs).float().to(runtime.device()), source


def our_bias(config: RunConfig, data: TaskData, tokenizer, model):
    """(probs, source) from this project's out-of-fold bias model (bias.py)."""
    predictions = bias_lib.bias_predictions(config.task, data, tokenizer, models.input_embeddings(model),
                                            config.backbone, config.word_vectors)
    source = f"ours (out-of-fold logistic regression; word vectors: {predictions.vectors_source})"
    return torch.from_numpy(predictions.probs["train"]).float().to(runtime.device()), source


def teacher_predictions(config: RunConfig, store: Run, data: TaskData, train: Encoded, pad_id: int,
                        batch_size: int) -> torch.Tensor | None:
    """The confreg teacher's (a std full model's) probabilities on the training set."""
    if config.loss != "confreg":
        return None
    spec = config.teacher
    teacher = models.load_model(spec.backbone, len(data.label_names), spec.num_layers,
                                pooling=spec.pooling).to(runtime.device())
    store.of(spec).load_weights(teacher)
    return torch.from_numpy(predict(teacher, train, batch_size, pad_id, config.precision)).to(runtime.device())


class Batches:
    """Training batches on the device: (step, batch) for steps start..end-1. Epoch e shuffles
    with seed (seed, e), so a resumed run sees the same batches. Length-grouped batches with
    dynamic padding, or random batches padded to max_length (padding=max_length, the authors')."""

    def __init__(self, config: RunConfig, encoded: Encoded, pad_id: int, compiled: bool, bias_probs=None,
                 teacher_probs=None):
        self.config, self.encoded, self.pad_id = config, encoded, pad_id
        self.per_epoch = schedule.epochs(1, len(encoded), config.batch_size)[0]
        self.compiled, self.bias_probs, self.teacher_probs = compiled, bias_probs, teacher_probs

    def __call__(self, start: int, end: int):
        if end <= 0:
            return
        grouped = self.config.padding == "dynamic"
        for epoch in itertools.count(start // self.per_epoch):
            rng = np.random.default_rng([self.config.seed, epoch])
            for position, index in enumerate(train_batches(self.encoded, self.config.batch_size, rng, grouped)):
                at = epoch * self.per_epoch + position
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
