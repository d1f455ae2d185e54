"""What a run trains and how it prunes, one module per method (the open_lth layout):

  finetune     all weights, or those of a fixed subnetwork (mask_from)    finetune.py
  mask         only the mask scores; every weight frozen (algorithm 2)    mask_training.py
  imp, imp-rw  weights, magnitude-pruned every delta_t (algorithm 1)      imp.py
  omp, random  a one-shot mask, no training                               oneshot.py
  head         only a model's head, the backbone frozen (the toy's MLM head) head.py

The one training loop (fit.py) calls the hooks of `Method` (base.py); a new method is one
module defining a subclass (and the settings group of its own settings, hparams/: RunConfig
gains its fields from the registry) plus one entry in METHODS.
"""

from __future__ import annotations

from srnets_lib.engine import kinds
from srnets_lib.methods.base import Method
from srnets_lib.methods.finetune import Finetune
from srnets_lib.methods.head import Head
from srnets_lib.methods.imp import IMP, IMPRewound
from srnets_lib.methods.mask_training import MaskTraining
from srnets_lib.methods.oneshot import OMP, RandomPruning

METHODS: dict[str, type[Method]] = {
    "finetune": Finetune, "mask": MaskTraining, "imp": IMP, "imp-rw": IMPRewound, "omp": OMP, "random": RandomPruning,
    "head": Head,
}


def groups() -> list:
    """Every method's settings groups (hparams/), in registry order: RunConfig composes them."""
    return list(dict.fromkeys(g for method in METHODS.values() for g in method.groups))


def get(name: str) -> type[Method]:
    try:
        return METHODS[name]
    except KeyError:
        raise ValueError(f"unknown method {name!r}; accepted: {', '.join(METHODS)}") from None


def schedule(config, train_rows: int):
    """The run's schedule (its method's)."""
    method = get(config.method)
    return method.schedule(method.settings(config), train_rows)


def describe(config) -> str:
    """The run's sparsity as `plan` prints it (its method's)."""
    method = get(config.method)
    return method.describe(method.settings(config))


def planned_schedule(config):
    """The run's schedule from its planned training-set size (its kind's: the configured or
    published one, data/tasks.py): what `plan` counts and what the paradigms read, without loading data."""
    kind = kinds.of(config.task)
    return schedule(config, kind.planned_rows(kind.settings(config)))


def create(config, train_rows: int) -> Method:
    """The run's method, its hooks reading the settings it reads (Method.settings)."""
    cls = get(config.method)
    settings = cls.settings(config)
    return cls(settings, cls.schedule(settings, train_rows))


__all__ = ["METHODS", "Method", "create", "describe", "get", "groups", "planned_schedule", "schedule"]
