"""Magnitude-based masks (section 3.2.1, appendix A.1.1) and the random baseline.

All are local: every prunable matrix gets the same sparsity (section 3.2, "local pruning").
"""

from __future__ import annotations

import torch

from srnets_lib.model.pruning.masks import Masked, keep_top, pruned_count


def magnitude_prune(module: Masked, sparsity: float) -> None:
    """Prune the smallest |W| among the surviving weights until the matrix has `sparsity`.

    Pruned entries stay pruned (masks only shrink): they rank below every survivor.
    """
    magnitude = module.weight.detach().abs().masked_fill(~module.mask, -1.0)
    module.set_mask(keep_top(magnitude, pruned_count(magnitude.numel(), sparsity)))


def random_prune(module: Masked, sparsity: float, generator: torch.Generator) -> None:
    noise = torch.rand(module.weight.shape, generator=generator)  # CPU generator: same mask on any device
    module.set_mask(keep_top(noise, pruned_count(noise.numel(), sparsity)))
