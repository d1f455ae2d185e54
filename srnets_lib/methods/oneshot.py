"""One-shot masks, no training: OMP (the TAMT paper's one-shot magnitude pruning, also the
hard-init mask of mask training) and the random baseline. Evaluated once."""

from __future__ import annotations

from typing import Literal

import torch

from srnets_lib.hparams import Group
from srnets_lib.model import backbones, pruning
from srnets_lib.model.pruning import magnitude
from srnets_lib.methods import schedule
from srnets_lib.methods.base import Method


class RoundingSettings(Group):
    """How many entries a magnitude or random pruning removes: OMP's, random pruning's and IMP's."""

    # how many entries IMP, OMP and random pruning remove (model/pruning/magnitude.py): floor(n s) (ours), or
    # torch: torch.nn.utils.prune's round(amount x survivors) per pruning, IMP's amount 1 / (10 - j) (the
    # authors': LT_pretrain.py:400, 521; trainer_imp.py:436-439; oneshot.py:43-49)
    prune_rounding: Literal["floor", "torch"] = "floor"


class OneShot(Method):
    prunes = True
    groups = (RoundingSettings,)

    @classmethod
    def schedule(cls, config, train_rows):
        per_epoch, t_max = schedule.epochs(config.epochs, train_rows, config.batch_size, config.drop_last)
        return schedule.Schedule(per_epoch, t_max, 0, (0,), frozenset({0}), restarts=(),
                                 sparsity_steps={0: config.sparsity})

    def masked_layers(self):
        return backbones.masked_layers(backbones.is_imp_prunable, self.config.mask_embeddings)

    def prepare(self, model):
        generator = torch.Generator().manual_seed(self.config.seed)
        for module in pruning.masked_modules(model).values():
            self.prune(module, generator)

    def prune(self, module, generator: torch.Generator) -> None:
        raise NotImplementedError

    def trainable(self, model):
        return []


class OMP(OneShot):
    """One-shot magnitude pruning: the smallest weights of each matrix."""

    def prune(self, module, generator):
        count = magnitude.count(module.weight.numel(), self.config.sparsity, self.config.prune_rounding)
        pruning.magnitude_prune(module, self.config.sparsity, count)


class RandomPruning(OneShot):
    """The random baseline: each matrix's pruned entries drawn with the run's seed."""

    def prune(self, module, generator):
        pruning.random_prune(module, self.config.sparsity, generator, self.config.prune_rounding)
