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
    module.set_mask(keep_top(magnitude, pruned_count(magnitude.numel(), sparsity)))


def random_prune(module: MaskedLinear, sparsity: float, generator: torch.Generator) -> None:
    noise = torch.rand(module.weight.shape, generator=generator)  # CPU generator: same mask on any device
    module.set_mask(keep_top(noise, pruned_count(noise.numel(), sparsity)))


class IMPSchedule:
    """Algorithm 1 as the authors' IMP trainer runs it: every interval S = int(delta_t * t_max)
    steps, from step 0, another delta_s of the original count is pruned, up to `target`; the
    model at the end of each interval (steps S, 2S, ..., N S) is that level's subnetwork, so one
    run yields every level delta_s, 2 delta_s, ..., target. Training stops at N S."""

    def __init__(self, target: float, delta_s: float, delta_t_fraction: float, t_max: int):
        self.delta_s = delta_s
        self.interval = max(1, int(delta_t_fraction * t_max + 1e-9))
        self.count = round(target / delta_s)  # N levels

    @property
    def total_steps(self) -> int:
        return self.count * self.interval

    def prunes_at(self, step: int) -> float | None:
        """The sparsity to prune to at the start of `step`, or None."""
        if step % self.interval or step >= self.total_steps:
            return None
        return self.level(step // self.interval + 1)

    def level_ending_at(self, step: int) -> float | None:
        """The level whose interval ends after `step` steps, or None."""
        if step <= 0 or step % self.interval or step > self.total_steps:
            return None
        return self.level(step // self.interval)

    def level(self, k: int) -> float:
        return round(k * self.delta_s, 6)

    def levels(self) -> list[float]:
        return [self.level(k) for k in range(1, self.count + 1)]
