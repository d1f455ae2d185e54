"""When things happen in one run, computed once from its config and training-set size.

A `Schedule` is a frozen value (open_lth's training hyper-parameters + step iterator): the
training loop (fit.py) iterates it and `plan` counts it; nothing else re-derives it. Each
method builds its own (methods/, `Method.schedule`) from the pieces here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Schedule:
    steps_per_epoch: int
    t_max: int  # epochs * steps per epoch: the lr schedule's length (algorithm 1's t_max)
    steps: int  # optimisation steps the run takes (IMP stops after its last level; one-shot: 0)
    evaluations: tuple[int, ...]  # the run evaluates after these many steps (sorted)
    selectable: frozenset[int]  # evaluations whose checkpoint may be selected (appendix B.3.3)
    restarts: tuple[int, ...] = (0,)  # optimiser and lr schedule (re)start at these steps (IMP: each pruning)
    # the sparsity a method enforces after n steps: mask training's threshold resets (algorithm 2,
    # line 15), IMP's prunings (algorithm 1, at the start of step n)
    sparsity_steps: dict[int, float] = field(default_factory=dict)
    levels: dict[int, float] = field(default_factory=dict)  # evaluations that are results of their own (IMP)
    # a run fine-tuned from this one picks one level's mask (mask_level; imp-rw: section 4.3 fine-tunes
    # each level's subnetwork alone); every IMP run keeps each level's mask either way
    pick_level: bool = False

    def read_levels(self, levels: tuple[float, ...] | None = None) -> dict[int, float]:
        """The levels (step -> sparsity) whose scores a result reads: every level (`levels`
        None), else those named and the last (the run's own result)."""
        if levels is None:
            return self.levels
        return {at: s for at, s in self.levels.items() if at == self.steps or any(abs(s - l) < 1e-9 for l in levels)}

    def evaluated(self, ood_every: bool, levels: tuple[float, ...] | None = None) -> tuple[int, ...]:
        """The evaluations that run: all of them when the OOD sets are scored at every one
        (training curves); otherwise only those a result reads: a checkpoint that may be
        selected, a level read (`read_levels`), and the last. Skipping the others changes no
        result (tested)."""
        if ood_every:
            return self.evaluations
        read = self.read_levels(levels)
        return tuple(e for e in self.evaluations if e in self.selectable or e in read or e == self.steps)

    def ood_at(self, step: int, ood_every: bool, levels: tuple[float, ...] | None = None) -> bool:
        """Whether the evaluation after `step` steps scores the OOD sets (besides the selected
        checkpoint's, which is scored at the end when it lacks them)."""
        return ood_every or step in self.read_levels(levels)

    def ood_evaluations(self, ood_every: bool, levels: tuple[float, ...] | None = None) -> int:
        """How many times the run scores the OOD sets."""
        return len(self.evaluated(True)) if ood_every else max(1, len(self.read_levels(levels)))

    def segment_start(self, step: int) -> int:
        """The step at which the lr schedule that `step` belongs to started."""
        return max((r for r in self.restarts if r <= step), default=0)


def epochs(epochs: float, train_rows: int, batch_size: int, drop_last: bool = False) -> tuple[int, int]:
    """(steps per epoch, t_max) of `epochs` passes over `train_rows` examples, the last, partial
    batch kept; or with `drop_last` skipped, the lr horizon t_max = int(epochs x rows / batch)
    (TAMT-KD's train_kd.py:828-829, 951-952)."""
    if drop_last:
        return max(1, train_rows // batch_size), max(1, int(epochs * train_rows / batch_size))
    per_epoch = max(1, math.ceil(train_rows / batch_size))
    return per_epoch, max(1, round(epochs * per_epoch))


def capped(config, t_max: int, per_epoch: int | None = None) -> int:
    """The steps a run takes: t_max, or fewer with max_steps (its lr schedule still spans t_max);
    with drop_last no more than its epochs of full batches."""
    steps = t_max if config.max_steps is None else min(t_max, config.max_steps)
    return min(steps, max(1, round(config.epochs * per_epoch))) if config.drop_last and per_epoch else steps


def every(interval: int, steps: int, extra=()) -> tuple[int, ...]:
    """Every `interval` steps up to `steps`, the last step, and `extra` (0 when nothing trains)."""
    if steps == 0:
        return (0,)
    return tuple(sorted(set(range(interval, steps + 1, interval)) | {steps} | set(extra)))


def selectable(config, evaluations, t_max: int, sparsity_steps: dict[int, float] | None = None) -> frozenset[int]:
    """The checkpoint selection rule (appendix B.3.3): the best on ID dev, after 0.7 t_max with
    select=best_after_0.7, and with select_at_target only where the enforced sparsity is the
    target (gradual schedules: section 5.2); select=last: no selection (TAMT's masks); select_final
    false: not the last step's unless no evaluation falls on a multiple of eval_interval."""
    if config.select == "last":
        return frozenset({max(evaluations)})
    chosen = set(evaluations)
    if config.select == "best_after_0.7":
        chosen = {e for e in chosen if e >= 0.7 * t_max}
    if config.select_at_target and sparsity_steps:
        chosen = {e for e in chosen if abs(sparsity_steps[e] - config.sparsity) < 1e-9}
    if not config.select_final:  # only the evaluations every eval_interval steps, unless there is none
        chosen = {e for e in chosen if e % config.eval_interval == 0} or {max(evaluations)}
    return frozenset(chosen)
