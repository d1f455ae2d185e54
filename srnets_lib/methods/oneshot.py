"""One-shot masks, no training: OMP (the TAMT paper's one-shot magnitude pruning, also the
hard-init mask of mask training) and the random baseline. Evaluated once."""

from __future__ import annotations

import torch

from .. import models, pruning
from .base import Method


class OneShot(Method):
    def masked_layers(self):
        return models.is_imp_prunable

    def trainable(self):
        cfg = self.config
        generator = torch.Generator().manual_seed(cfg.seed)
        for module in self.trainer.masked.values():
            if cfg.method == "omp":
                pruning.magnitude_prune(module, cfg.sparsity)
            else:
                pruning.random_prune(module, cfg.sparsity, generator)
        return []

    def steps(self) -> int:
        return 0
