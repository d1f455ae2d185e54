"""Parameter files (params/*.yaml): a preset's grid plus the hyper-parameters of its runs.

A file may start from another (`base: paper.yaml`, relative to the file): mappings merge key
by key, lists are replaced, and its `overrides` come after the base's. A file's blocks:
  preset:    seeds, sparsities, tasks (the grid the notebooks sweep)
  defaults:  RunConfig fields shared by every run (its scientific settings: the run key)
  overrides: a list of {when: {...}, set: {...}}; `when` matches the run's facts (SELECTORS: task,
             stage, method, loss, start, ...; a value or a list); later entries win
  execution: how runs execute, not part of their key (evaluation batch size, OOD evaluations)
  sections, tamt: the pages' own settings (settings/pages.py; each page reads its tasks, seeds and
             sparsities there: book/sections/)
Command-line style overrides (`key=value`, dotted for nested fields) are applied last,
after the file's overrides, so they win; a dotted key reaches any block (`execution.eval_ood=every`,
`tamt.sparsities=[0.7]`), and an error it causes is blamed on the command line.
Everything is validated on load, before any work starts. A key given twice in one mapping, YAML
anchors and aliases, and numbers that are not finite are refused.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import Field, PrivateAttr, ValidationError, field_validator

from srnets_lib import methods, paths
from srnets_lib.settings.config import LOSSES, PRETRAINING_LOSSES, AnyTask, RunConfig, Task, stage_of
from srnets_lib.settings.pages import Sections, Tamt
from srnets_lib.settings.reading import (Block, ParamsError, blamed, cut, deep_copy, deep_update, explain,
                                         parse_overrides, read, set_dotted, shown)
from srnets_lib.settings.request import Request

# What an override's `when` may select on: task, stage (full | retrain | prune), method, loss,
# start ("pt": the run starts from the pre-trained weights, "ft": from a fine-tuned run),
# source (the method of the run whose weights or mask it starts from: finetune, mask, imp-rw, ...;
# "pt" for none), ood (section 4.5's ID+OOD training data: true | false) and sparsity.
# source_task: the task of that run ("corpus": a task-agnostic mask, TAMT's transfer runs; "pt" for none).
# checkpoint: the run starts from its init run's weights after init_step steps (section 5.1): true | false.
SELECTORS = ("task", "stage", "method", "loss", "start", "source", "source_task", "ood", "sparsity", "checkpoint")
# the values a selector can match (sparsity: any number); "pt": the run starts from the pre-trained model
SELECTOR_VALUES = {"task": AnyTask.__args__, "stage": ("full", "retrain", "prune"), "method": tuple(methods.METHODS),
                   "loss": LOSSES + PRETRAINING_LOSSES, "start": ("pt", "ft"), "source": tuple(methods.METHODS) + ("pt",),
                   "source_task": AnyTask.__args__ + ("pt",), "ood": (True, False), "checkpoint": (True, False)}


class Preset(Block):
    seeds: list[Annotated[int, Field(ge=0, lt=2**32)]] = Field(min_length=1)
    sparsities: list[float] = Field(min_length=1)
    tasks: list[Task] = Field(min_length=1)

    @field_validator("sparsities")
    @classmethod
    def _in_range(cls, values):
        for s in values:
            if not 0.0 < s < 1.0:
                raise ValueError(f"sparsity {s} is outside (0, 1)")
        return values


class Override(Block):
    when: dict[str, Any]
    set: dict[str, Any]

    @field_validator("when")
    @classmethod
    def _known_selectors(cls, when):
        unknown = set(when) - set(SELECTORS)
        if unknown:
            raise ValueError(f"unknown selector(s) {sorted(unknown)}; accepted: {list(SELECTORS)}")
        for name, wanted in when.items():
            known = SELECTOR_VALUES.get(name)
            for value in (wanted if isinstance(wanted, list) else [wanted]):
                if known is not None and value not in known:
                    raise ValueError(f"selector {name}: {shown(value)} never matches; accepted: {list(known)}")
        return when

    def matches(self, facts: dict[str, str]) -> bool:
        for name, wanted in self.when.items():
            options = wanted if isinstance(wanted, list) else [wanted]
            if facts[name] not in options:
                return False
        return True


class Execution(Block):
    """How runs are executed: the same results (to float noise), so not part of a run's key."""

    eval_batch_size: int = Field(256, gt=0)
    # score the OOD sets only where a result reads them: the selected checkpoint (selection reads
    # ID dev only) and IMP's levels; or at every evaluation (the authors', 2.3x the evaluated
    # examples of the paper plan). The same results (tested); training curves ask for every.
    eval_ood: Literal["every", "selected"] = "selected"
    # OOD sets runs may go without while their files are missing (PAWS-qqp, which users generate):
    # a sweep refuses to start without them otherwise; `python -m srnets_lib evaluate` adds them later
    skip_ood: list[Literal["paws_qqp"]] = []

    def request(self, **fields) -> Request:
        """The request every run gets unless a section asks for more."""
        return Request(**{"ood_every": self.eval_ood == "every", "eval_batch_size": self.eval_batch_size, **fields})


class Params(Block):
    name: str
    description: str
    preset: Preset
    defaults: dict[str, Any]
    overrides: list[Override] = []
    execution: Execution = Execution()
    sections: Sections = Sections()
    tamt: Tamt = Tamt()
    forced: dict[str, Any] = {}  # command-line run-field overrides: applied after `overrides`
    source: str = "<memory>"
    _given: dict[str, str] = PrivateAttr(default_factory=dict)  # forced's command-line keys -> key=value

    def run(self, task: str, method: str = "finetune", loss: str = "std", **fields) -> RunConfig:
        """Resolve one run's config: defaults, then matching overrides, then `fields`."""
        stage = stage_of(method, fields.get("mask_from") is not None)
        start = "pt" if fields.get("init_from") is None else "ft"
        origin = fields.get("init_from") or fields.get("mask_from")
        facts = {"task": task, "stage": stage, "method": method, "loss": loss, "start": start,
                 "source": origin.method if origin is not None else "pt",
                 "source_task": origin.task if origin is not None else "pt",
                 "ood": bool(fields.get("data", {}).get("ood_train", False)),
                 "sparsity": fields.get("sparsity", 0.0), "checkpoint": fields.get("init_step") is not None}
        values = deep_copy(self.defaults)
        for override in self.overrides:
            if override.matches(facts):
                deep_update(values, override.set)
        deep_update(values, deep_copy(self.forced))
        deep_update(values, {"task": task, "method": method, "loss": loss, **fields})
        try:
            return RunConfig(**values)
        except ValidationError as err:
            raise ParamsError(f"{self.source}: invalid run config for {facts}:\n{explain(err, self._given)}") from None




def load(path: str | Path, overrides: list[str] | dict[str, Any] | None = None) -> Params:
    """Load and validate a params file; `overrides` are `key=value` strings or a dict."""
    path = paths.project_file(path)
    raw = read(path)
    items = parse_overrides(overrides) if isinstance(overrides, list) else dict(overrides or {})
    texts = dict(zip(items, overrides)) if isinstance(overrides, list) else {k: f"{k}={v}" for k, v in items.items()}
    for key in items:
        _drop_section_choices(raw, key.removeprefix("preset."))
    given, run_given = {}, {}  # where each command-line key went (Params / RunConfig) -> its key=value
    for key, value in items.items():
        head = key.split(".")[0]
        if head in Preset.model_fields:
            where = f"preset.{key}"
        elif head in Sections.model_fields:
            where = f"sections.{key}"
        elif head in Execution.model_fields:
            where = f"execution.{key}"
        elif head in Params.model_fields and head != "source":  # execution.eval_ood=every, tamt.sparsities=[0.7]
            where = key
        else:
            where, run_given[key] = f"forced.{key}", cut(texts[key])
        set_dotted(raw, where, value)
        given[where] = cut(texts[key])
    try:
        params = Params(**raw, source=str(path))
    except ValidationError as err:
        header = f"{path} with the command line's overrides" if blamed(err, given) else str(path)
        raise ParamsError(f"{header}:\n{explain(err, given)}") from None
    params._given = run_given
    _validate_runs(params)
    return params


def _drop_section_choices(raw: dict, head: str) -> None:
    """A command-line `tasks=`, `seeds=` or `sparsities=` applies to every Part I page: the file's
    per-page choices (sections.tasks and each page's tasks or seeds, sections.judged_only) give
    way to it."""
    sections = raw.get("sections") or {}
    if head == "sparsities":
        sections.pop("judged_only", None)
    if head not in ("tasks", "seeds"):
        return
    if head == "tasks":
        sections.pop("tasks", None)
    for page in (v for v in sections.values() if isinstance(v, dict)):
        page.pop(head, None)


def write_resolved(params: Params, path: str | Path) -> str:
    """`params` with its command-line overrides as one self-contained params file (for notebooks,
    which take a params file, not overrides: sweep --by notebooks --set ...); returns its path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    values = params.model_dump(mode="json", exclude={"source"})
    values["description"] = f"{params.description.strip()} (resolved from {params.source} with command-line overrides)"
    path.write_text(yaml.safe_dump(values, sort_keys=False))
    return str(path)


def _validate_runs(params: Params) -> None:
    """Build one config per (task, stage, loss) so any bad value stops us before work starts."""
    sparsity = params.preset.sparsities[0]
    for task in params.preset.tasks:
        params.run(task, "finetune", "std")
        params.run(task, "finetune", "poe")
        params.run(task, "mask", "poe", sparsity=sparsity)


