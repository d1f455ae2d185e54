"""The hooks the training loop calls; a method overrides the ones it needs."""

from __future__ import annotations

import enum

import torch


class StepAction(enum.Enum):
    TRAIN = "train"  # take the next optimisation step
    RESTART = "restart"  # the method pruned: new optimiser and lr schedule, then train
    STOP = "stop"  # the run is over before t_max


class Method:
    """Default behaviour: train what `trainable` returns for `steps` steps, evaluate every
    eval_interval steps and at the end, every evaluation eligible for selection."""

    def __init__(self, trainer):
        self.trainer = trainer
        self.config = trainer.config

    # --- set-up ---------------------------------------------------------------------------
    def masked_layers(self):
        """Predicate on module names: which nn.Linear layers get a MaskedLinear; None: none."""
        return None

    def trainable(self) -> list[torch.nn.Parameter]:
        raise NotImplementedError

    def steps(self) -> int:
        """Optimisation steps of the run (0: nothing trains)."""
        return self.trainer.t_max

    def segment(self, step: int) -> tuple[int, int]:
        """(first step, number of steps) of the lr schedule that step `step` belongs to."""
        return 0, self.steps()

    # --- the loop -------------------------------------------------------------------------
    def before_step(self, step: int) -> StepAction:
        return StepAction.TRAIN

    def after_step(self, done: int) -> None:
        pass

    def evaluate_now(self, done: int) -> bool:
        return done % self.config.eval_interval == 0 or done == self.steps()

    def at_target(self, step: int) -> bool:
        """Whether the model after `step` steps is at the run's target sparsity."""
        return True

    def selectable(self, step: int) -> bool:
        """Whether the model after `step` steps may be selected at all."""
        return True

    def on_evaluation(self, row: dict) -> None:
        """Called with every logged evaluation (IMP keeps one result per sparsity level)."""

    def reads_ood(self, step: int) -> bool:
        """Whether the evaluation after `step` steps is a result besides the selected
        checkpoint (IMP's levels), so its OOD scores are needed with eval_ood=selected too."""
        return False

    def levels(self) -> dict:
        """Extra results per sparsity level for final.json (IMP); empty for the others."""
        return {}

    # --- resume ---------------------------------------------------------------------------
    def state(self) -> dict:
        return {}

    def load_state(self, state: dict) -> None:
        pass
