"""Pruning: masks and the straight-through estimator, magnitude methods, sparsity schedules."""

from .magnitude import magnitude_prune, random_prune
from .masks import (Masked, MaskedEmbedding, MaskedLinear, MaskedWeight, MaskFileError, apply_masks, install, jaccard, load_masks, masked_modules,
                    pruned_count, save_masks, sparsity_report)
from .schedules import SCHEDULES

__all__ = ["Masked", "MaskedEmbedding", "MaskedLinear", "MaskFileError", "MaskedWeight", "SCHEDULES", "apply_masks",
           "install", "jaccard", "load_masks", "masked_modules", "magnitude_prune", "pruned_count", "random_prune", "save_masks",
           "sparsity_report"]
