"""Typed, validated run configuration and its stable key.

A run is fully described by a `RunConfig`: its scientific settings, the ones that change what
it computes. Its key (`run_key`) hashes only the fields that differ from their defaults (plus
the algorithm version), so adding a field with a default renames no existing run (the open_lth
convention). Runs a run depends on (the fine-tuned model a mask is trained on, the subnetwork
fine-tuned in isolation, the confreg teacher) are nested configs, so the key covers the whole
chain. How a run is executed and what it leaves behind (the evaluation batch size, which
evaluations score the OOD sets, which weights are kept) is not part of it: request.Request.
"""

from __future__ import annotations

import hashlib
import json
from typing import Literal, Optional

from pydantic import Field, create_model, model_validator

from srnets_lib import ALGORITHM_VERSION, hparams, methods
from srnets_lib.data.tasks import spec
from srnets_lib.engine import kinds, losses
from srnets_lib.engine.kinds.corpus import OBJECTIVES
from srnets_lib.hparams import (BiasModelSettings, DataConfig, ModelSettings, OptimisationSettings, PruningSettings,
                               SelectionSettings)

Task = Literal["nli", "paraphrase", "factcheck"]  # the SRNets paper's tasks (section 4.1)
TamtTask = Literal["cola", "sst2", "rte", "mrpc", "stsb", "mnli", "squad"]  # TAMT's downstream tasks (section 4.1)
TransferTask = Literal[Task.__args__ + TamtTask.__args__]  # what a task-agnostic mask transfers to
# and the unlabelled corpus of TAMT's task-agnostic runs (WikiText-103; the toy's own language)
AnyTask = Literal[TransferTask.__args__ + ("corpus",)]
TASKS: tuple[str, ...] = Task.__args__
LOSSES: tuple[str, ...] = tuple(losses.LOSSES)  # the classification losses (section 3.3)
PRETRAINING_LOSSES: tuple[str, ...] = tuple(OBJECTIVES)  # TAMT's objectives on unlabelled text (section 3.4)
MethodName = Literal[tuple(methods.METHODS)]
METHODS: tuple[str, ...] = MethodName.__args__


class CommonSettings(ModelSettings, OptimisationSettings, SelectionSettings, BiasModelSettings, PruningSettings):
    """What every run has, whatever its method and task kind: what names it (task, method, loss,
    seed, its data and the runs it depends on) and the common groups (hparams/common.py);
    RunConfig adds the settings groups the methods and kinds declare."""

    task: AnyTask
    method: MethodName = "finetune"
    loss: Literal[LOSSES + PRETRAINING_LOSSES] = "std"
    seed: int = Field(1, ge=0, lt=2**32)  # numpy's and the data generators' seeds are 32-bit
    data: DataConfig = DataConfig(train_size=2000, dev_size=500, ood_size=500)
    # dependencies: None means the pre-trained backbone
    init_from: Optional["RunConfig"] = None  # start from this run's weights (theta_ft)
    init_step: Optional[int] = None  # ...as they were after this many steps (section 5.1)
    mask_from: Optional["RunConfig"] = None  # fine-tune this run's subnetwork in isolation (4.3)
    mask_level: Optional[float] = None  # ...at this sparsity level of an imp-rw run
    teacher: Optional["RunConfig"] = None  # confreg teacher (a std full model)

    @model_validator(mode="after")
    def _check(self):
        methods.get(self.method).check(self)  # what the method reads (methods/)
        kinds.of(self.task).check(self)  # the losses its kind trains with, the settings it reads (engine/kinds/)
        if self.select_metric is not None:
            recorded = spec(self.task).metrics or (spec(self.task).metric,)
            if self.select_metric not in recorded:
                raise ValueError(f"select_metric={self.select_metric!r} is not recorded for task {self.task}; "
                                 f"accepted: {', '.join(recorded)} (or null: the task's {spec(self.task).metric})")
        if self.data.mnli_dev != "matched" and self.task != "mnli":
            raise ValueError(f"data.mnli_dev={self.data.mnli_dev} picks MNLI's dev set: task={self.task} has none")
        if self.loss == "confreg" and self.teacher is None:
            raise ValueError("loss=confreg needs a teacher run (a std full model, appendix A.2)")
        check_dependencies(self)
        return self

    @property
    def stage(self) -> str:
        """'full' for dense fine-tuning, 'retrain' for fine-tuning a fixed subnetwork (4.3),
        'prune' otherwise."""
        return stage_of(self.method, self.mask_from is not None)

    @property
    def task_agnostic_mask(self) -> bool:
        """Whether this run fine-tunes a mask found on the corpus (TAMT's transfer)."""
        return self.mask_from is not None and kinds.of(self.mask_from.task).task_agnostic

    @property
    def training_loss(self) -> str:
        """The loss the run's updates minimise: its `loss`, but cross-entropy for IMP with
        imp_objective cross_entropy."""
        return "std" if self.imp_objective == "cross_entropy" else self.loss

    @property
    def is_pruning(self) -> bool:
        return methods.get(self.method).prunes

    def dependencies(self) -> list["RunConfig"]:
        return [d for d in (self.init_from, self.mask_from, self.teacher) if d is not None]

    def key(self) -> str:
        return run_key(self)


def compose(groups) -> type[CommonSettings]:
    """The run configuration with the flat fields of `groups` beside the common ones (hparams.fields)."""
    return create_model("RunConfig", __base__=CommonSettings, __module__=__name__,
                        __doc__="One training run: full fine-tuning, mask training or IMP (sections 3.2, 4).",
                        **hparams.fields(groups))


# every registered method's and task kind's settings groups (methods.groups, kinds.groups)
RunConfig = compose(methods.groups() + kinds.groups())
RunConfig.model_rebuild()


def check_dependencies(run: RunConfig) -> None:
    """A run's dependencies fit it: a mask_from run prunes (its level named where it keeps several), init_step
    goes with init_from, a dependency is of the same task unless task-agnostic."""
    if run.mask_from is not None:
        if run.is_pruning:
            raise ValueError("mask_from fine-tunes a fixed subnetwork: method must be finetune")
        if not run.mask_from.is_pruning:
            raise ValueError("mask_from must be a pruning run (its mask is the subnetwork)")
        source = methods.schedule(run.mask_from, 1)  # its levels do not depend on the data size
        kept = sorted(source.levels.values()) if source.pick_level else []
        if run.mask_level is not None and not any(abs(run.mask_level - level) < 1e-9 for level in kept):
            raise ValueError(f"mask_level picks a level of the mask_from run: one of "
                             f"{kept or 'none (it keeps one mask)'}, got {run.mask_level}")
        if run.mask_level is None and kept:
            raise ValueError(f"mask_from keeps one mask per level: set mask_level to one of {kept}")
    elif run.mask_level is not None:
        raise ValueError("mask_level picks a level of a mask_from run: set mask_from")
    if run.init_step is not None and run.init_from is None:
        raise ValueError("init_step needs init_from")
    for dep in (run.init_from, run.mask_from, run.teacher):
        if dep is not None and dep.task != run.task and not kinds.of(dep.task).task_agnostic:
            raise ValueError(f"a dependency is for task {dep.task}, this run is {run.task}")


def stage_of(method: str, isolated: bool = False) -> str:
    if methods.get(method).prunes:
        return "prune"
    return "retrain" if isolated else "full"


def run_key(config: RunConfig) -> str:
    """Stable short key: task-method-loss plus a hash of the non-default fields.

    The hash covers the nested dependency configs and ALGORITHM_VERSION, so a run
    computed by an older algorithm is never mistaken for a current one.
    """
    fields = config.model_dump(mode="json", exclude_defaults=True)
    blob = json.dumps({"v": ALGORITHM_VERSION, "config": fields}, sort_keys=True)
    digest = hashlib.sha256(blob.encode()).hexdigest()[:12]
    return f"{config.task}-{config.method}-{config.loss}-{digest}"


def describe(config: RunConfig) -> dict:
    """The fully resolved config as a plain dict (what config.yaml stores)."""
    return config.model_dump(mode="json")
