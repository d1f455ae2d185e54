"""A run's set-up, in a straight line: data, tokenizer, model, the weights or mask it starts from,
what its task kind trains with (engine/kinds: batches, the objective of a batch, the evaluator),
its method and Schedule, its masks and what trains."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from srnets_lib import methods
from srnets_lib.data.load import fingerprints, load_task
from srnets_lib.data.splits import TaskData
from srnets_lib.data.squad import SquadData
from srnets_lib.methods.schedule import Schedule
from srnets_lib.model import backbones, dropout, pruning
from srnets_lib.settings.config import RunConfig
from srnets_lib.settings.request import Request
from srnets_lib.store.lineage import record_reads
from srnets_lib.store.runs import Run
from srnets_lib.engine import kinds, runtime, step


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
    batches: kinds.Batches  # (start, end, steps per epoch) -> (step, batch) pairs
    forward: kinds.Objective  # batch -> loss
    evaluator: kinds.Evaluator
    bias_source: str | None
    reads: dict[str, dict[str, str]]  # what it read of its dependencies (final.json `reads`)

    def optimization(self, at_step: int) -> step.Optimization:
        """The optimiser and lr schedule (over t_max) of the segment that step `at_step` is in."""
        cfg = self.config
        return step.Optimization(list(self.trainable.values()), cfg.lr, cfg.weight_decay, self.schedule.t_max,
                                 step.warmup_steps(cfg.warmup_steps, cfg.warmup_ratio, self.schedule.t_max),
                                 cfg.max_grad_norm, cfg.grad_clip, cfg.optimizer)


def build_run(config: RunConfig, store: Run, request: Request) -> TrainingRun:
    """A run ready to train: its data (fingerprinted as read), model (from its start's weights), the
    parts its kind builds (kinds/), its method and Schedule, its masks and what trains."""
    runtime.use_precision(config.precision)
    reads = record_reads(config, store.root)  # before reading them: a dependency changed since is found stale
    data = load_task(config.task, config.data)
    fingerprint = fingerprints(data)
    tokenizer = backbones.load_tokenizer(config.backbone)
    kind = kinds.of(config.task)
    settings = kind.settings(config)  # what the kind's hooks read
    model = kind.load_model(settings, data).to(runtime.device())
    backbones.check_max_length(model.config, config.max_length, config.backbone)
    if config.dropout_rng == "fast":
        dropout.use_fast_dropout(model)
    if config.init_from is not None:
        store.of(config.init_from).load_weights(model, config.init_step)
    parts = kind.parts(settings, store, request, data, tokenizer, model)
    method = methods.create(config, parts.train_rows)
    install_masks(model, method, store)
    method.prepare(model)
    trainable = set_trainable(model, method.trainable(model))
    return TrainingRun(config, store, data, fingerprint, model, method, method.schedule, trainable, parts.batches,
                       parts.objective, parts.evaluator, parts.bias_source, reads)


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


