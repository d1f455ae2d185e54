"""What a run trains and how it prunes, one module per method (the open_lth layout):

  finetune     all weights, or those of a fixed subnetwork (mask_from)    finetune.py
  mask         only the mask scores; every weight frozen (algorithm 2)    mask_training.py
  imp, imp-rw  weights, magnitude-pruned every delta_t (algorithm 1)      imp.py
  omp, random  a one-shot mask, no training                               oneshot.py

The one training loop (train.py) calls the hooks of `Method`; a new method is one module
defining a subclass plus one entry in METHODS.
"""

from __future__ import annotations

from .base import Method, StepAction
from .finetune import Finetune
from .imp import IMP
from .mask_training import MaskTraining
from .oneshot import OneShot

METHODS: dict[str, type[Method]] = {
    "finetune": Finetune, "mask": MaskTraining, "imp": IMP, "imp-rw": IMP, "omp": OneShot, "random": OneShot,
}


def create(trainer) -> Method:
    return METHODS[trainer.config.method](trainer)


__all__ = ["METHODS", "Method", "StepAction", "create"]
