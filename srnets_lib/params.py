"""Parameter files (params/*.yaml): a preset's grid plus the hyper-parameters of its runs.

A file has four parts:
  preset:    seeds, sparsities, tasks (the grid the notebooks sweep)
  defaults:  RunConfig fields shared by every run
  overrides: a list of {when: {...}, set: {...}}; `when` matches task, stage (full|prune),
             method and loss (a value or a list); later entries win
  sections:  per-notebook settings (e.g. section 5.1's fine-tuning fractions)
Command-line style overrides (`key=value`, dotted for nested fields) are applied last,
after the file's overrides, so they win.
Everything is validated on load, before any work starts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from . import paths
from .config import RunConfig, Task

# What an override's `when` may select on; `start` is "pt" for a run that starts from the
# pre-trained weights and "ft" for one that starts from a fine-tuned run (init_from).
SELECTORS = ("task", "stage", "method", "loss", "start")


class ParamsError(ValueError):
    """A parameter file or override is wrong; the message names the file and the key."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Preset(_Strict):
    seeds: list[int] = Field(min_length=1)
    sparsities: list[float] = Field(min_length=1)
    tasks: list[Task] = Field(min_length=1)

    @field_validator("sparsities")
    @classmethod
    def _in_range(cls, values):
        for s in values:
            if not 0.0 < s < 1.0:
                raise ValueError(f"sparsity {s} is outside (0, 1)")
        return values


class Override(_Strict):
    when: dict[str, Any]
    set: dict[str, Any]

    @field_validator("when")
    @classmethod
    def _known_selectors(cls, when):
        unknown = set(when) - set(SELECTORS)
        if unknown:
            raise ValueError(f"unknown selector(s) {sorted(unknown)}; accepted: {list(SELECTORS)}")
        return when

    def matches(self, facts: dict[str, str]) -> bool:
        for name, wanted in self.when.items():
            options = wanted if isinstance(wanted, list) else [wanted]
            if facts[name] not in options:
                return False
        return True


class Sections(_Strict):
    """Settings a single notebook needs beyond the run hyper-parameters."""

    sec4_2_tasks: Optional[list[Task]] = None  # default: preset.tasks
    other_tasks: Optional[list[Task]] = None  # tasks of the other sections; default preset.tasks
    sec5_1_fractions: list[float] = [0.0, 0.25, 0.5, 0.75, 1.0]  # of full fine-tuning
    sec5_1_sparsity: dict[str, float] = {"nli": 0.7, "paraphrase": 0.7, "factcheck": 0.9}
    sec5_2_epochs: list[float] = [1, 2, 3]  # mask-training lengths compared (figure 8)
    sec5_2_inits: list[float] = [0.2, 0.5, 0.7]  # table 5: gradual s_init -> 0.9
    appc5_backbones: list[str] = ["roberta-base", "bert-large-uncased"]


class Params(_Strict):
    name: str
    description: str
    preset: Preset
    defaults: dict[str, Any]
    overrides: list[Override] = []
    sections: Sections = Sections()
    forced: dict[str, Any] = {}  # command-line run-field overrides: applied after `overrides`
    source: str = "<memory>"

    def run(self, task: str, method: str = "finetune", loss: str = "std", **fields) -> RunConfig:
        """Resolve one run's config: defaults, then matching overrides, then `fields`."""
        stage = "full" if method == "finetune" else "prune"
        start = "pt" if fields.get("init_from") is None else "ft"
        facts = {"task": task, "stage": stage, "method": method, "loss": loss, "start": start}
        values = _deep_copy(self.defaults)
        for override in self.overrides:
            if override.matches(facts):
                _deep_update(values, override.set)
        _deep_update(values, _deep_copy(self.forced))
        _deep_update(values, {"task": task, "method": method, "loss": loss, **fields})
        try:
            return RunConfig(**values)
        except ValidationError as err:
            raise ParamsError(f"{self.source}: invalid run config for {facts}:\n{_explain(err)}") from None

    def tasks_for(self, section: str) -> list[str]:
        chosen = self.sections.sec4_2_tasks if section == "sec4_2" else self.sections.other_tasks
        return list(chosen or self.preset.tasks)


def load(path: str | Path, overrides: list[str] | dict[str, Any] | None = None) -> Params:
    """Load and validate a params file; `overrides` are `key=value` strings or a dict."""
    path = paths.project_file(path)
    if not path.is_file():
        raise ParamsError(f"params file {path} does not exist")
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as err:
        raise ParamsError(f"{path}: not valid YAML: {err}") from None
    if not isinstance(raw, dict):
        raise ParamsError(f"{path}: expected a mapping with preset, defaults, overrides")
    items = parse_overrides(overrides) if isinstance(overrides, list) else dict(overrides or {})
    for key, value in items.items():
        head = key.split(".")[0]
        if head in Preset.model_fields:
            raw.setdefault("preset", {})[head] = value
        elif head in Sections.model_fields:
            raw.setdefault("sections", {})[head] = value
        else:
            _set_dotted(raw.setdefault("forced", {}), key, value)
    try:
        params = Params(**raw, source=str(path))
    except ValidationError as err:
        raise ParamsError(f"{path}:\n{_explain(err)}") from None
    _validate_runs(params)
    return params


def parse_overrides(items: list[str]) -> dict[str, Any]:
    """`["sparsity=0.7", "data.bias_strength=0.8"]` -> dict with YAML-typed values."""
    parsed = {}
    for item in items:
        if "=" not in item:
            raise ParamsError(f"override {item!r} is not of the form key=value")
        key, value = item.split("=", 1)
        parsed[key.strip()] = yaml.safe_load(value)
    return parsed


def _validate_runs(params: Params) -> None:
    """Build one config per (task, stage, loss) so any bad value stops us before work starts."""
    sparsity = params.preset.sparsities[0]
    for task in params.preset.tasks:
        params.run(task, "finetune", "std")
        params.run(task, "finetune", "poe")
        params.run(task, "mask", "poe", sparsity=sparsity)


def _explain(err: ValidationError) -> str:
    lines = []
    for e in err.errors():
        where = ".".join(str(p) for p in e["loc"]) or "(top level)"
        if e["type"] == "extra_forbidden":
            lines.append(f"  unknown key '{where}' (typo?)")
        else:
            lines.append(f"  {where}: {e['msg']} (got {e.get('input')!r})")
    return "\n".join(lines)


def _set_dotted(target: dict, key: str, value: Any) -> None:
    *parents, last = key.split(".")
    for part in parents:
        target = target.setdefault(part, {})
    target[last] = value


def _deep_update(target: dict, updates: dict) -> None:
    for key, value in updates.items():
        if isinstance(value, dict) and isinstance(target.get(key), dict):
            _deep_update(target[key], value)
        else:
            target[key] = value


def _deep_copy(values: dict) -> dict:
    return {k: _deep_copy(v) if isinstance(v, dict) else v for k, v in values.items()}
