"""Iterative magnitude pruning (section 3.2.1, algorithm 1): the weights train, and every
delta_t = imp_delta_t * t_max steps another delta_s of the original count is pruned by
magnitude, per matrix. `imp` returns the subnetwork after one further interval at the target;
`imp-rw` rewinds the surviving weights to theta_0 right after the pruning that reaches it
(the lottery-ticket variant of section 4.3)."""

from __future__ import annotations

import torch

from .. import models, pruning
from .base import Method, StepAction
from .finetune import Finetune


class IMP(Method):
    def __init__(self, trainer):
        super().__init__(trainer)
        cfg = self.config
        self.schedule = pruning.IMPSchedule(cfg.sparsity, cfg.imp_delta_s, cfg.imp_delta_t, trainer.t_max,
                                            cfg.method)

    def masked_layers(self):
        return models.is_imp_prunable

    def trainable(self):
        self.theta_0 = {n: p.detach().clone() for n, p in self.trainer.model.named_parameters()}
        return Finetune.trainable(self)

    def before_step(self, step: int) -> StepAction:
        action = self.schedule.action(step)
        if action == "stop":
            return StepAction.STOP
        if action == "prune":
            self.schedule.n += 1
            for module in self.trainer.masked.values():
                pruning.magnitude_prune(module, self.schedule.current_sparsity())
            if self.schedule.reached and self.config.method == "imp-rw":  # rewind to theta_0 and return
                with torch.no_grad():
                    for n, p in self.trainer.model.named_parameters():
                        p.copy_(self.theta_0[n])
                return StepAction.STOP
        return StepAction.TRAIN

    def at_target(self, step: int) -> bool:
        return self.schedule.reached

    def state(self) -> dict:
        return {"imp_n": self.schedule.n}

    def load_state(self, state: dict) -> None:
        self.schedule.n = state["imp_n"]
