"""Masked linear layers, the straight-through binariser and sparsity control (section 3.2.2,
appendix A.1.2, algorithm 2).

Every prunable nn.Linear is replaced by a MaskedLinear holding
  - `mask`: a fixed boolean mask (IMP, OMP, a subnetwork fine-tuned in isolation), or
  - `mask_scores` (m_hat, trainable) and `threshold` (phi, a 0-dim device tensor, so a reset
    never re-traces a compiled step): the forward pass uses m = 1[m_hat > phi] and the
    backward pass copies the gradient of m to m_hat (STE).
The frozen weight gets no gradient: only the scores do (mask training), or only the
weights (IMP, fine-tuning).

Threshold resets (`ties`, RunConfig.threshold_ties):
  authors  as the authors' code: phi = the k-th smallest score (k = pruned_count(numel, s)),
           every entry tied with phi is pruned (so sparsity can overshoot), and the reset is
           skipped when that score equals the largest one (untouched hard-init scores: a
           reset cannot prune kept entries wholesale).
  exact    a deliberate deviation: exactly k entries pruned, ties broken by position
           (stable sort); kept entries tied with phi are raised by one ulp so that
           `m_hat > phi` reproduces the exact mask between resets.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from srnets_lib import paths


def pruned_count(numel: int, sparsity: float) -> int:
    """k = floor(numel * s), robust to float error (0.29 * 100 is 28.999...)."""
    return int(math.floor(numel * sparsity + 1e-6))


def binarize(scores: torch.Tensor, threshold: torch.Tensor) -> torch.Tensor:
    """m = 1[m_hat > phi] in the scores' dtype. Written straight into a float tensor: on CPU a
    bool result, its conversion, or a product with a bool tensor each cost 4-25x a float multiply."""
    return torch.gt(scores, threshold, out=torch.empty_like(scores))


class MaskedWeight(torch.autograd.Function):
    """W' = W * m with m = 1[m_hat > phi]; backward the straight-through estimator:
    dL/dm_hat = dL/dm = dL/dW' * W (and dL/dW = dL/dW' * m where W trains too)."""

    @staticmethod
    def forward(ctx, weight, scores, threshold):
        mask = binarize(scores, threshold)
        ctx.save_for_backward(weight, mask)
        return weight * mask

    @staticmethod
    def backward(ctx, grad):
        weight, mask = ctx.saved_tensors
        grad_weight = grad * mask if ctx.needs_input_grad[0] else None
        grad_scores = grad * weight if ctx.needs_input_grad[1] else None
        return grad_weight, grad_scores, None


class Masked(nn.Module):
    """A weight matrix with its mask, scores and threshold (module state); the layer types below
    say how the masked weight is applied."""

    def __init__(self, weight: nn.Parameter, bias: nn.Parameter | None = None):
        super().__init__()
        self.weight = weight
        self.bias = bias
        self.register_buffer("mask", torch.ones_like(weight, dtype=torch.bool))
        self.register_buffer("mask_values", torch.ones_like(weight), persistent=False)  # `mask` as 1.0 / 0.0
        self.register_parameter("mask_scores", None)  # m_hat, while mask training
        self.register_buffer("threshold", torch.zeros((), device=weight.device))
        self.cache_eval_weight = True  # off under torch.compile (a Python-side cache)
        self._cached: torch.Tensor | None = None  # masked weight, valid while nothing trains
        # mask, scores and threshold are module state: a loaded state dict brings the mask in force
        self.register_load_state_dict_post_hook(lambda module, keys: module._loaded())

    # --- which mask is in force -------------------------------------------------------
    def binary_mask(self) -> torch.Tensor:
        if self.mask_scores is not None:
            return self.mask_scores.detach() > self.threshold
        return self.mask

    def binary_values(self) -> torch.Tensor:
        """The mask in force as the weight's dtype (1.0 kept, 0.0 pruned)."""
        if self.mask_scores is not None:
            return binarize(self.mask_scores.detach(), self.threshold)
        return self.mask_values

    def effective_weight(self) -> torch.Tensor:
        if self.mask_scores is not None and self.mask_scores.requires_grad and torch.is_grad_enabled():
            return MaskedWeight.apply(self.weight, self.mask_scores, self.threshold)
        if self.weight.requires_grad and torch.is_grad_enabled():
            return self.weight * self.mask_values  # IMP / isolation fine-tuning: pruned weights get no gradient
        if not self.cache_eval_weight:
            return self.weight * self.binary_values()
        if self._cached is None:  # evaluation: the masked weight is computed once
            with torch.no_grad():
                self._cached = self.weight * self.binary_values()
        return self._cached

    def invalidate(self) -> None:
        self._cached = None

    @torch.no_grad()
    def _loaded(self) -> None:
        self.mask_values.copy_(self.mask)
        self.invalidate()

    @torch.no_grad()
    def set_mask(self, mask: torch.Tensor) -> None:
        """Install a fixed mask in place: its buffer keeps its address, so a compiled step
        (CUDA graphs) needs no re-recording after a pruning."""
        self.mask.copy_(mask.to(self.mask.device))
        self.mask_values.copy_(self.mask)
        self.invalidate()

    # --- sparsity control ---------------------------------------------------------------
    def start_mask_training(self, init: str, sparsity: float, phi: float = 0.01, alpha: float = 2.0,
                            ties: str = "exact", generator: torch.Generator | None = None,
                            init_ties: str = "exact") -> None:
        """Hard init (eq. 1): m_hat = 0 for the k smallest |W|, alpha * phi otherwise, phi fixed
        (`init_ties` authors: every |W| tied with the k-th smallest is pruned too, masking/maskers.py
        `_weight_abs > kthvalue`). Soft init (eq. 2): m_hat = |W|, phi set by the sparsity
        constraint. Random init (TAMT section 4.2.4): the hard scores on k entries drawn at random
        (`generator`, on the CPU)."""
        weight = self.weight.detach().abs() * self.mask_values  # an existing mask is respected
        if init in ("hard", "random"):
            ranked = weight if init == "hard" else torch.rand(weight.shape, generator=generator).to(weight.device)
            k = pruned_count(weight.numel(), sparsity)
            if init == "hard" and init_ties == "authors" and k > 0:
                keep = weight > torch.kthvalue(weight.reshape(-1), k).values
            else:
                keep = keep_top(ranked, k)
            scores = torch.where(keep, torch.full_like(weight, alpha * phi), torch.zeros_like(weight))
            self.mask_scores = nn.Parameter(scores)
            self.threshold.fill_(phi)
        elif init == "soft":
            self.mask_scores = nn.Parameter(weight.clone())
            self.reset_threshold(sparsity, ties)
        else:
            raise ValueError(f"mask_init must be hard, soft or random, got {init!r}")
        self.invalidate()

    @torch.no_grad()
    def reset_threshold(self, sparsity: float, ties: str = "exact") -> None:
        """Set phi from the k-th smallest score, k = pruned_count(numel, s) (algorithm 2, l.15);
        `ties` as in the module docstring."""
        scores = self.mask_scores.data.view(-1)
        k = pruned_count(scores.numel(), sparsity)
        if k == 0:
            self.threshold.fill_(float("-inf"))
        elif ties == "authors":
            phi = torch.kthvalue(scores, k).values
            if phi < scores.max():
                self.threshold.copy_(phi)
        elif ties == "exact":
            phi, tied_kept = kth_smallest(scores, k)
            if tied_kept.numel():
                scores[tied_kept] = torch.nextafter(phi, torch.tensor(float("inf"), dtype=phi.dtype,
                                                                      device=phi.device))
            self.threshold.copy_(phi)
        else:
            raise ValueError(f"threshold ties must be exact or authors, got {ties!r}")
        self.invalidate()

    def sparsity(self) -> float:
        mask = self.binary_mask()
        return 1.0 - mask.sum().item() / mask.numel()


class MaskedLinear(Masked):
    """An nn.Linear whose weight is masked (the Transformer matrices, the pooler, a classifier)."""

    def __init__(self, linear: nn.Linear):
        super().__init__(linear.weight, linear.bias)
        self.in_features, self.out_features = linear.in_features, linear.out_features

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, self.effective_weight(), self.bias)


class MaskedEmbedding(Masked):
    """An nn.Embedding whose table is masked: the word embeddings, which TAMT's code masks (its
    weight_types "E"); a decoder tied to the table reads the unmasked weight, as theirs does."""

    def __init__(self, embedding: nn.Embedding):
        super().__init__(embedding.weight)
        self.padding_idx, self.num_embeddings, self.embedding_dim = (embedding.padding_idx, embedding.num_embeddings,
                                                                     embedding.embedding_dim)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return F.embedding(ids, self.effective_weight(), self.padding_idx)


def kth_smallest(flat: torch.Tensor, k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(phi, tied_kept) for 1 <= k <= numel: phi is the k-th smallest value, and tied_kept the
    positions of the entries equal to phi that a stable ascending sort ranks after the k-th
    (ties broken by position). The same as reading a stable sort, in linear time: a
    selection (numpy's introselect on CPU) and two comparisons."""
    if flat.device.type == "cpu" and flat.dtype in (torch.float32, torch.float64):
        phi = torch.as_tensor(np.partition(flat.numpy(), k - 1)[k - 1])
    else:
        phi = torch.kthvalue(flat, k).values
    below = int((flat < phi).sum())
    tied = torch.nonzero(flat == phi).view(-1)  # ascending positions
    return phi, tied[k - below:]


def keep_top(values: torch.Tensor, k: int) -> torch.Tensor:
    """Boolean mask pruning exactly the k smallest values (ties broken by position)."""
    flat = values.detach().reshape(-1)
    if k <= 0:
        return torch.ones_like(values, dtype=torch.bool)
    phi, tied_kept = kth_smallest(flat, k)
    keep = flat > phi
    keep[tied_kept] = True
    return keep.view_as(values)


LAYERS = {nn.Linear: MaskedLinear, nn.Embedding: MaskedEmbedding}


def install(model: nn.Module, is_prunable) -> dict[str, Masked]:
    """Replace every prunable nn.Linear (and nn.Embedding) by its masked layer, in place; returns
    them by name."""
    targets = [(n, m) for n, m in model.named_modules() if type(m) in LAYERS and is_prunable(n)]
    if not targets:
        raise ValueError("no prunable nn.Linear found: unknown module layout")
    masked = {}
    for name, layer in targets:
        parent_name, _, child = name.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        masked[name] = LAYERS[type(layer)](layer)
        setattr(parent, child, masked[name])
    return masked


def masked_modules(model: nn.Module) -> dict[str, Masked]:
    """The model's masked layers by name, in module order."""
    return {name: module for name, module in model.named_modules() if isinstance(module, Masked)}


def invalidate_all(masked: dict[str, Masked]) -> None:
    for module in masked.values():
        module.invalidate()


# --- bit-packed mask files ------------------------------------------------------------------

def save_masks(masked: dict[str, Masked], path) -> None:
    arrays = {}
    for name, module in masked.items():
        bits = module.binary_mask().cpu().numpy()
        arrays[f"{name}|bits"] = np.packbits(bits.reshape(-1))
        arrays[f"{name}|shape"] = np.asarray(bits.shape)
    with paths.replacing(path) as tmp:
        np.savez_compressed(tmp, **arrays)


class MaskFileError(ValueError):
    pass


def load_masks(path) -> dict[str, torch.Tensor]:
    try:
        stored = np.load(path)
        names = sorted({k.split("|")[0] for k in stored.files})
        masks = {}
        for name in names:
            shape = tuple(int(x) for x in stored[f"{name}|shape"])
            bits = np.unpackbits(stored[f"{name}|bits"])[: int(np.prod(shape))]
            masks[name] = torch.from_numpy(bits.astype(bool).reshape(shape))
        return masks
    except Exception as err:  # zip, npz and reshape errors all mean the same thing here
        raise MaskFileError(f"{path}: not a readable mask file ({type(err).__name__}: {err})") from None


def apply_masks(masked: dict[str, Masked], masks: dict[str, torch.Tensor], source: str) -> None:
    """Install fixed masks; names and shapes must match exactly (loud, like nanoGPT's loader)."""
    if set(masks) != set(masked):
        missing, extra = sorted(set(masked) - set(masks)), sorted(set(masks) - set(masked))
        raise MaskFileError(f"{source}: mask names do not match the model (missing {missing[:3]}, "
                            f"unexpected {extra[:3]})")
    for name, module in masked.items():
        if masks[name].shape != module.weight.shape:
            raise MaskFileError(f"{source}: mask {name} has shape {tuple(masks[name].shape)}, "
                                f"weight has {tuple(module.weight.shape)}")
        module.set_mask(masks[name])
        module.mask_scores = None


def jaccard(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    """Similarity of two subnetworks (TAMT section 4.2.5, after Chen et al. 2020): per matrix,
    |kept in both| / |kept in either|, then the unweighted mean over the matrices (mask_dist.py of
    llyx97/TAMT). Both must mask the same matrices; the mask distance is 1 - jaccard."""
    if set(a) != set(b):
        raise MaskFileError(f"the masks cover different matrices: {sorted(set(a) ^ set(b))[:3]}")
    values = []
    for name in a:
        x, y = a[name].numpy(), b[name].numpy()  # numpy counts booleans far faster than torch sums them
        both, either = np.count_nonzero(x & y), np.count_nonzero(x | y)
        values.append(both / either if either else 1.0)
    return float(np.mean(values))


def sparsity_report(masked: dict[str, Masked], is_transformer_matrix) -> dict:
    """Actual sparsity: over Transformer matrices (the paper's denominator), per matrix min/max."""
    pruned = total = 0
    per_matrix = []
    for name, module in masked.items():
        mask = module.binary_mask()
        per_matrix.append(1.0 - mask.sum().item() / mask.numel())
        if is_transformer_matrix(name):
            pruned += mask.numel() - int(mask.sum().item())
            total += mask.numel()
    return {"sparsity": pruned / max(total, 1), "sparsity_min": min(per_matrix), "sparsity_max": max(per_matrix)}
