"""The method protocol: what a run trains and how it prunes, declared to the one training loop.

A method is one module with a `Method` subclass and one entry in methods/__init__.py. It
declares (it never reads the loop's internals): its schedule (a pure function of the config and
the training-set size), which linear layers carry masks, what trains (without side effects),
and what it does to the model before or after a step (IMP prunes, mask training resets its
thresholds). Masks, scores and thresholds live in the model (pruning.MaskedLinear), so saving
and resuming a run needs no method-specific code.
"""

from __future__ import annotations

from typing import Callable, ClassVar

import torch

from srnets_lib.hparams import Plugin, Settings
from srnets_lib.methods.schedule import Schedule


class Method(Plugin):
    prunes: ClassVar[bool] = False  # its runs produce a mask (the "prune" stage of params files)
    gradual: ClassVar[bool] = False  # it follows a sparsity schedule (section 5.2: schedule, sparsity_init)
    levels: ClassVar[bool] = False  # its run keeps a mask per sparsity level (IMP)

    def __init__(self, config: Settings, schedule: Schedule):
        self.config, self.schedule = config, schedule

    # --- declarations (class level: plan and config validation read them) --------------------
    # groups, check, settings: hparams.Plugin's (the settings it reads, the one rule refusing another's)
    @classmethod
    def refusal(cls, name: str, value, owner: type, config) -> str:
        return f"{name}={value} is method {owner.__name__}'s setting: method={config.method} does not read it"

    @classmethod
    def reader(cls) -> str:
        return f"method {cls.__name__}"

    @classmethod
    def validate(cls, config: Settings) -> None:
        """This method's own rules (check calls it): raise ValueError naming the field."""
        if cls.prunes and config.sparsity <= 0:
            raise ValueError(f"method={config.method} needs sparsity in (0, 1), got {config.sparsity}")
        if not cls.gradual and (config.schedule != "fixed" or config.sparsity_init is not None):
            raise ValueError(f"schedule={config.schedule} and sparsity_init are for gradual mask training "
                             f"(section 5.2), not method={config.method}")

    @classmethod
    def schedule(cls, config: Settings, train_rows: int) -> Schedule:
        raise NotImplementedError

    @classmethod
    def describe(cls, config: Settings) -> str:
        """The run's sparsity as `plan` prints it."""
        return f"{config.sparsity:g}" if cls.prunes else "-"

    def masked_layers(self) -> Callable[[str], bool] | None:
        """Predicate on module names: which nn.Linear layers become MaskedLinear; None: none."""
        return None

    def trainable(self, model: torch.nn.Module) -> list[torch.nn.Parameter]:
        """The parameters the optimiser updates, in a fixed order (no side effects: the loop
        freezes everything else)."""
        raise NotImplementedError

    # --- actions ------------------------------------------------------------------------------
    def prepare(self, model: torch.nn.Module) -> None:
        """Once, before training: initial masks or mask scores."""

    def before_step(self, model: torch.nn.Module, step: int) -> None:
        """Before optimisation step `step` (0-based)."""

    def after_step(self, model: torch.nn.Module, done: int) -> None:
        """After `done` steps, before an evaluation there."""

    def on_selected(self, model: torch.nn.Module) -> None:
        """After an evaluation whose checkpoint became the selected one (its copy already taken)."""
