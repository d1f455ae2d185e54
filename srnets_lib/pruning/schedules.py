"""Sparsity schedules for mask training: fixed (section 4) and cubic (section 5.2, appendix C.4)."""

from __future__ import annotations


def fixed(step: int, t_max: int, final: float, initial: float | None = None, ramp_end: float = 1.0) -> float:
    return final


def cubic(step: int, t_max: int, final: float, initial: float | None = None, ramp_end: float = 0.5) -> float:
    """s_t = s_f + (s_i - s_f) * (1 - t / T)^3 (Zhu and Gupta), T = ramp_end * t_max, then s_f.

    Deliberate deviation: the authors ramp until the last epoch, so most evaluations happen
    below the target and checkpoint selection needs special handling; we reach the target
    at `ramp_end` (default half-way) and select only among checkpoints at the target.
    """
    horizon = max(1.0, ramp_end * t_max)
    progress = min(1.0, step / horizon)
    return final + (initial - final) * (1.0 - progress) ** 3


SCHEDULES = {"fixed": fixed, "cubic": cubic}
