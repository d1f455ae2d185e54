"""Pruning: masked layers (scores, thresholds, the straight-through estimator, bit-packed mask files)
and magnitude pruning."""

from srnets_lib.model.pruning.magnitude import magnitude_prune, random_prune
from srnets_lib.model.pruning.masks import (Masked, MaskedEmbedding, MaskedLinear, MaskedWeight, MaskFileError,
                                            apply_masks, install, jaccard, load_masks, masked_modules, pruned_count,
                                            save_masks, sparsity_report)

__all__ = ["Masked", "MaskedEmbedding", "MaskedLinear", "MaskFileError", "MaskedWeight", "apply_masks", "install",
           "jaccard", "load_masks", "masked_modules", "magnitude_prune", "pruned_count", "random_prune", "save_masks",
           "sparsity_report"]
