"""Mask training (section 3.2.2, algorithm 2): every weight and the classifier frozen, only
the real-valued mask scores m_hat train through the straight-through estimator. Every
threshold-update interval (= eval_interval, appendix B.3.3) each matrix's threshold is reset
to meet the scheduled sparsity: fixed, or cubic from s_init (section 5.2)."""

from __future__ import annotations

from .. import models
from ..pruning import schedules
from .base import Method


class MaskTraining(Method):
    def masked_layers(self):
        return models.is_mask_trained

    def sparsity_at(self, step: int) -> float:
        return schedules.sparsity_at(self.config, step, self.trainer.t_max)

    def trainable(self):
        cfg = self.config
        self.trainer.model.requires_grad_(False)  # weights and classifier frozen (authors' convention)
        for module in self.trainer.masked.values():
            module.start_mask_training(cfg.mask_init, self.sparsity_at(0), cfg.phi, cfg.alpha, cfg.threshold_ties)
        return [m.mask_scores for m in self.trainer.masked.values()]

    def after_step(self, done: int) -> None:
        if done % self.config.eval_interval == 0 or done == self.steps():  # algorithm 2, line 15
            sparsity = self.sparsity_at(done)
            for module in self.trainer.masked.values():
                module.reset_threshold(sparsity, self.config.threshold_ties)

    def at_target(self, step: int) -> bool:
        return schedules.at_target(self.config, step, self.trainer.t_max)
