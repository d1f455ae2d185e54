"""Sparsity schedules for mask training: fixed (section 4) and cubic (section 5.2, appendix C.4)."""

from __future__ import annotations


def fixed(step: int, t_max: int, final: float, initial: float | None = None, ramp_end: float = 1.0) -> float:
    return final


def cubic(step: int, t_max: int, final: float, initial: float | None = None, ramp_end: float = 0.5) -> float:
    """s_t = s_f + (s_i - s_f) * (1 - t / T)^3 (Zhu and Gupta), T = ramp_end * t_max, then s_f.

    Evaluated at the threshold resets only (every eval_interval steps), as the authors' code
    evaluates it at the fractional epoch of each reset. The authors ramp until the last step
    (ramp_end 1.0, params/paper.yaml), so every checkpoint they may select is slightly below the
    target (0.895-0.9 after 0.7 t_max); RunConfig's default reaches the target half-way
    (ramp_end 0.5) and, with select_at_target, selects only among checkpoints at the target.
    """
    horizon = max(1.0, ramp_end * t_max)
    progress = min(1.0, step / horizon)
    return final + (initial - final) * (1.0 - progress) ** 3


SCHEDULES = {"fixed": fixed, "cubic": cubic}


def sparsity_at(config, step: int, t_max: int) -> float:
    """A mask-training run's scheduled sparsity after `step` of its `t_max` steps."""
    return SCHEDULES[config.schedule](step, t_max, config.sparsity, config.sparsity_init, config.ramp_end)
