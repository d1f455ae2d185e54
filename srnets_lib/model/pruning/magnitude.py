"""Magnitude-based masks (section 3.2.1, appendix A.1.1) and the random baseline.

All are local: every prunable matrix gets the same sparsity (section 3.2, "local pruning").
How many entries a sparsity prunes (`rounding`, RunConfig.prune_rounding):
  floor  k = floor(n s) (masks.pruned_count), as the hard init of mask training (masking/maskers.py).
  torch  as torch.nn.utils.prune, which the authors' IMP, OMP and random masks use: each pruning
         removes round(amount x surviving entries) (Python's round, half to even), one-shot with
         amount s, IMP's j-th pruning with amount 1 / (10 - j) of the survivors (LT_pretrain.py:400,
         521; trainer_imp.py:437-439; oneshot.py:43-49): at BERT-base's sizes -1 to +2 entries per
         matrix from floor(n s), by level.
"""

from __future__ import annotations

import torch

from srnets_lib.model.pruning.masks import Masked, keep_top, pruned_count

ROUNDINGS = ("floor", "torch")


def count(numel: int, sparsity: float, rounding: str = "floor") -> int:
    """The entries a one-shot mask at `sparsity` prunes."""
    if rounding == "floor":
        return pruned_count(numel, sparsity)
    if rounding == "torch":
        return round(sparsity * numel)
    raise ValueError(f"prune_rounding must be one of {', '.join(ROUNDINGS)}, got {rounding!r}")


def iterative_count(numel: int, prunings: int, delta_s: float, rounding: str = "floor") -> int:
    """The entries pruned after `prunings` IMP prunings of delta_s each: floor(n k delta_s), or torch's
    prune iterated: the j-th removes round(survivors / (1/delta_s - j))."""
    if rounding != "torch":
        return count(numel, round(prunings * delta_s, 6), rounding)
    per = 1 / delta_s
    steps = round(per) if abs(per - round(per)) < 1e-9 else per
    pruned = 0
    for j in range(prunings):
        pruned += round(1 / (steps - j) * (numel - pruned))  # 1/(10 - pruning_step): LT_pretrain.py:521
    return pruned


def magnitude_prune(module: Masked, sparsity: float, pruned: int | None = None) -> None:
    """Prune the smallest |W| among the surviving weights until the matrix has `sparsity` (or
    `pruned` entries pruned, where given).

    Pruned entries stay pruned (masks only shrink): they rank below every survivor.
    """
    magnitude = module.weight.detach().abs().masked_fill(~module.mask, -1.0)
    k = pruned_count(magnitude.numel(), sparsity) if pruned is None else pruned
    module.set_mask(keep_top(magnitude, k))


def random_prune(module: Masked, sparsity: float, generator: torch.Generator, rounding: str = "floor") -> None:
    noise = torch.rand(module.weight.shape, generator=generator)  # CPU generator: same mask on any device
    module.set_mask(keep_top(noise, count(noise.numel(), sparsity, rounding)))
