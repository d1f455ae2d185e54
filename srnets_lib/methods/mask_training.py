"""Mask training (section 3.2.2, algorithm 2): every weight and the classifier frozen, only
the real-valued mask scores m_hat train through the straight-through estimator. Every
threshold-update interval (= eval_interval, appendix B.3.3) each matrix's threshold is reset
to meet the scheduled sparsity: fixed, or cubic from s_init (section 5.2)."""

from __future__ import annotations

from typing import Literal

import torch

from srnets_lib.hparams import Group
from srnets_lib.model import backbones, pruning
from srnets_lib.methods import schedule
from srnets_lib.methods import sparsity as sparsity_schedules
from srnets_lib.methods.base import Method
from srnets_lib.methods.finetune import FinalSelection


class MaskTrainingSettings(Group):
    """How mask training initialises its mask and resets its thresholds (algorithm 2)."""

    # hard init's ties at the k-th smallest |W|: exactly k pruned, ties broken by position (ours), or every
    # entry tied with it pruned too (the authors': masking/maskers.py:171-176, `_weight_abs > kthvalue`)
    hard_init_ties: Literal["exact", "authors"] = "exact"
    # when mask training resets its thresholds (and evaluates): every eval_interval steps and the last
    # (algorithm 2, ours and mask_trainer*.py), or train_kd: after update 1 and each update t with
    # (t + 1) % eval_interval == 0, and the last (TAMT-KD's mask_training/train_kd.py:1082, 1126)
    threshold_reset_steps: Literal["interval", "train_kd"] = "interval"
    # after each new best checkpoint, reset the thresholds to the schedule's initial sparsity until
    # the next evaluation (the authors' mask_trainer.py, line 699, read by the forward pass: gradual
    # runs train at s_init for up to eval_interval steps after each new best; fixed runs: no effect)
    threshold_reset_on_best: bool = False


class MaskTraining(Method):
    prunes = True

    gradual = True
    groups = (MaskTrainingSettings, FinalSelection)

    @classmethod
    def validate(cls, config) -> None:
        super().validate(config)
        if (config.schedule == "cubic") != (config.sparsity_init is not None):
            raise ValueError("schedule=cubic goes with sparsity_init, the sparsity it starts from (section 5.2)")
        if config.sparsity_init is not None and config.sparsity_init > config.sparsity:
            raise ValueError("sparsity_init must not exceed sparsity")

    @classmethod
    def schedule(cls, config, train_rows):
        per_epoch, t_max = schedule.epochs(config.epochs, train_rows, config.batch_size, config.drop_last)
        steps = schedule.capped(config, t_max, per_epoch)
        evaluations = reset_steps(config, steps)
        resets = {step: sparsity_schedules.sparsity_at(config, step, t_max) for step in (0, *evaluations)}
        return schedule.Schedule(per_epoch, t_max, steps, evaluations,
                                 schedule.selectable(config, evaluations, t_max, resets), sparsity_steps=resets)

    @classmethod
    def describe(cls, config) -> str:
        x = f"{config.sparsity_init:g}->{config.sparsity:g}" if config.sparsity_init is not None else f"{config.sparsity:g}"
        return x + (" soft" if config.mask_init == "soft" else "")

    def masked_layers(self):
        return backbones.masked_layers(backbones.is_mask_trained, self.config.mask_embeddings)

    def prepare(self, model):
        cfg = self.config
        generator = torch.Generator().manual_seed(cfg.seed)  # mask_init=random: a seeded random mask
        for module in pruning.masked_modules(model).values():
            module.start_mask_training(cfg.mask_init, self.schedule.sparsity_steps[0], cfg.phi, cfg.alpha,
                                       cfg.threshold_ties, generator, cfg.hard_init_ties)

    def trainable(self, model):
        # weights and classifier frozen (the authors' convention): the scores train, and on unlabelled
        # text the MLM head's transform and bias (TAMT: train_mlm.py of llyx97/TAMT)
        return [m.mask_scores for m in pruning.masked_modules(model).values()] + backbones.trainable_head(model)

    def on_selected(self, model):
        """threshold_reset_on_best: the thresholds back to the initial sparsity until the next
        evaluation resets them (the authors' mask_trainer.py, line 699)."""
        if self.config.threshold_reset_on_best:
            for module in pruning.masked_modules(model).values():
                module.reset_threshold(self.schedule.sparsity_steps[0], self.config.threshold_ties)

    def after_step(self, model, done):
        sparsity = self.schedule.sparsity_steps.get(done)
        if sparsity is not None:  # algorithm 2, line 15
            for module in pruning.masked_modules(model).values():
                module.reset_threshold(sparsity, self.config.threshold_ties)


def reset_steps(config, steps: int) -> tuple[int, ...]:
    """The steps after which the thresholds are reset and the run evaluates: every eval_interval
    steps and the last (threshold_reset_steps=interval: algorithm 2, mask_trainer.py); or as
    train_kd.py (lines 1082, 1126, 1154): after update 1 and every update t with
    (t + 1) % eval_interval == 0 (1, 99, 199, ...), and the last, whose mask it saves after a reset."""
    if config.threshold_reset_steps == "interval" or steps == 0:
        return schedule.every(config.eval_interval, steps)
    interval = config.eval_interval
    return tuple(sorted({1, steps} | set(range(interval - 1, steps + 1, interval)) - {0}))
