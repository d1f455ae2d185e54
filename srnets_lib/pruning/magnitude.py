"""Magnitude-based masks (section 3.2.1, appendix A.1.1) and the random baseline.

All are local: every prunable matrix gets the same sparsity (GUIDE "Vocabulary").
"""

from __future__ import annotations

import torch

from .masks import MaskedLinear, keep_top, pruned_count


def magnitude_prune(module: MaskedLinear, sparsity: float) -> None:
    """Prune the smallest |W| among the surviving weights until the matrix has `sparsity`.

    Pruned entries stay pruned (masks only shrink): they rank below every survivor.
    """
    magnitude = module.weight.detach().abs().masked_fill(~module.mask, -1.0)
    module.mask = keep_top(magnitude, pruned_count(magnitude.numel(), sparsity))
    module.invalidate()


def random_prune(module: MaskedLinear, sparsity: float, generator: torch.Generator) -> None:
    noise = torch.rand(module.weight.shape, generator=generator)  # CPU generator: same mask on any device
    module.mask = keep_top(noise, pruned_count(noise.numel(), sparsity)).to(module.weight.device)
    module.invalidate()


class IMPSchedule:
    """Algorithm 1: every delta_t = imp_delta_t * t_max steps (from t = 0) prune another
    delta_s of the original count. `imp` returns after one further interval at the target,
    `imp-rw` right after the pruning that reaches it (weights rewound to theta_0)."""

    def __init__(self, target: float, delta_s: float, delta_t_fraction: float, t_max: int, method: str):
        self.target, self.delta_s, self.method = target, delta_s, method
        self.interval = max(1, round(delta_t_fraction * t_max))
        self.n = 0  # prunings done

    @property
    def reached(self) -> bool:
        return self.n * self.delta_s >= self.target - 1e-9

    def current_sparsity(self) -> float:
        return min(self.n * self.delta_s, self.target)

    def action(self, step: int) -> str:
        """'prune', 'stop' or 'train' for the start of optimisation step `step`."""
        if step % self.interval:
            return "train"
        if self.reached:
            return "stop" if self.method == "imp" else "train"
        return "prune"
