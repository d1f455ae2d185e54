"""What a task kind is to the rest of the library: the strategy behind a run of a labelled task, a
span-extraction task or the unlabelled corpus. A kind declares which losses its runs train with and
whether its masks serve every task (config validation), the bench workload its steps cost (`plan`),
and builds what the one training loop calls: batches, the objective of a batch, the evaluator. A
new kind (say token classification) is one module with a TaskKind subclass and one registry entry
(kinds/__init__.py); nothing else branches on kinds."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Iterator, Protocol

import torch

from srnets_lib.data.tasks import planned_train_rows
from srnets_lib.hparams import Plugin, Settings


class Stored(Protocol):
    """What a kind's parts read of the run store (store/runs.py's Run): another run's weights."""

    def of(self, config) -> "Stored": ...

    def load_weights(self, model: torch.nn.Module, step: int | None = None) -> None: ...


class Asked(Protocol):
    """What a kind's parts read of what a run is asked for beyond its settings (settings/request.py)."""

    eval_batch_size: int


class Batches(Protocol):
    """The training batches on the device: (step, batch) for steps start..end-1, an epoch being
    `per_epoch` steps (the run's Schedule); a resumed run sees the same batches."""

    def __call__(self, start: int, end: int, per_epoch: int) -> Iterator[tuple[int, dict]]: ...


class Objective(Protocol):
    """The loss of a batch; where it runs compiled and that fails, `fall_back` goes on eagerly (True)
    and `fallback` keeps why (final.json's execution.compile_fallback)."""

    fallback: str | None

    def __call__(self, batch: dict) -> torch.Tensor: ...

    def fall_back(self, err: Exception, run: str) -> bool: ...


class Evaluator(Protocol):
    """A run's scores after some steps: `dev` (the selection metric) and the others; `ood` and
    `reported` name the splits scored only where a result reads them, `id_split` the one the
    reported ID score is read from, `predictions` the last scores' per-example predictions."""

    ood: tuple[str, ...]
    reported: tuple[str, ...]
    id_split: str
    predictions: dict
    fallback: str | None

    def scores(self, model, splits=None) -> dict[str, float]: ...


@dataclass
class Parts:
    """What the loop calls that depends on the kind of task."""

    train_rows: int  # training examples (a corpus: blocks; SQuAD: windows), which the Schedule counts
    batches: Batches
    objective: Objective
    evaluator: Evaluator
    bias_source: str | None = None  # where the bias probabilities the loss reads came from


class Eager:
    """An objective or evaluator that never compiles: nothing to fall back from."""

    fallback: str | None = None

    def fall_back(self, err: Exception, run: str) -> bool:
        return False


class TaskKind(Plugin):
    """One kind of task, declared to config validation, `plan` and the training set-up."""

    name: ClassVar[str]
    losses: ClassVar[tuple[str, ...]]  # what its runs may train with (RunConfig.loss)
    task_agnostic: ClassVar[bool] = False  # its runs' masks serve every task (TAMT's corpus)
    lengths: ClassVar[str] = "mnli-like"  # bench's lengths of its steps (mnli-like, or full: every token real)
    # its trained model as a Hugging Face folder (export/): the transformers Auto class it loads as,
    # the Hub's pipeline tag, the inputs of an example call, and whether its runs store per-example
    # predictions the exported folder is checked against
    auto_class: ClassVar[str]
    pipeline_tag: ClassVar[str]
    example_inputs: ClassVar[str]
    stores_predictions: ClassVar[bool] = False
    # groups, check, settings: hparams.Plugin's (the settings it reads, the one rule refusing another's)

    @classmethod
    def refusal(cls, name: str, value, owner: type, config) -> str:
        return f"{name}={value} is a setting of the {owner.name} kind: task={config.task} ({cls.name}) does not read it"

    @classmethod
    def reader(cls) -> str:
        return f"the {cls.name} kind"

    @classmethod
    def validate(cls, config: Settings) -> None:
        """This kind's own rules (check calls it): raise ValueError naming the field."""
        if config.loss not in cls.losses:
            raise ValueError(f"loss={config.loss} does not go with task={config.task} ({cls.name}): it trains "
                             f"with {', '.join(cls.losses)}")

    @classmethod
    def planned_rows(cls, config: Settings) -> int:
        """The training examples a run counts its steps from, without loading data (`plan`)."""
        return planned_train_rows(config.task, config.data)

    @classmethod
    def workload(cls, config: Settings) -> str:
        """The bench workload whose step a run of this kind takes (sweeps/cost.py)."""
        raise NotImplementedError

    @classmethod
    def load_model(cls, config: Settings, data) -> torch.nn.Module:
        """The model a run trains, its head initialised from the run's seed."""
        raise NotImplementedError

    @classmethod
    def parts(cls, config: Settings, store: Stored, request: Asked, data, tokenizer, model) -> Parts:
        raise NotImplementedError
