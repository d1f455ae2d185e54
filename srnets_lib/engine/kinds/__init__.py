"""Task kinds as strategies (base.py): each task's kind (data/tasks.py, TaskSpec.kind) names the
module that builds what a run of it trains with, and declares what config validation and `plan`
read. A new kind is one module and one entry here."""

from __future__ import annotations

from srnets_lib.data.tasks import spec
from srnets_lib.engine.kinds.base import Batches, Evaluator, Objective, Parts, TaskKind
from srnets_lib.engine.kinds.classification import Classification
from srnets_lib.engine.kinds.corpus import Corpus
from srnets_lib.engine.kinds.span import Span

KINDS: dict[str, type[TaskKind]] = {"classify": Classification, "regress": Classification, "span": Span,
                                    "corpus": Corpus}


def groups() -> list:
    """Every kind's settings groups (hparams/), in registry order: RunConfig composes them."""
    return list(dict.fromkeys(g for kind in KINDS.values() for g in kind.groups))


def of(task: str) -> type[TaskKind]:
    """The kind of `task` (its TaskSpec's)."""
    return KINDS[spec(task).kind]


__all__ = ["Batches", "Evaluator", "KINDS", "Objective", "Parts", "TaskKind", "groups", "of"]
