"""Parameter files (params/*.yaml): a preset's grid plus the hyper-parameters of its runs.

A file may start from another (`base: paper.yaml`, relative to the file): mappings merge key
by key, lists are replaced, and its `overrides` come after the base's. A file has five parts:
  preset:    seeds, sparsities, tasks (the grid the notebooks sweep)
  defaults:  RunConfig fields shared by every run (its scientific settings: the run key)
  overrides: a list of {when: {...}, set: {...}}; `when` matches task, stage (full: dense
             fine-tuning, retrain: a fixed subnetwork fine-tuned alone, prune), method, loss
             and start (pt|ft) (a value or a list); later entries win
  execution: how runs execute, not part of their key (evaluation batch size, OOD evaluations)
  sections:  per-notebook settings (e.g. section 5.1's fine-tuning fractions)
Command-line style overrides (`key=value`, dotted for nested fields) are applied last,
after the file's overrides, so they win; a dotted key reaches any block (`execution.eval_ood=every`,
`tamt.sparsities=[0.7]`), and an error it causes is blamed on the command line.
Everything is validated on load, before any work starts. A key given twice in one mapping, YAML
anchors and aliases, and numbers that are not finite are refused.
"""

from __future__ import annotations

import reprlib
from pathlib import Path
from typing import Annotated, Any, Literal, Optional, Union

import yaml
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator, model_validator

from srnets_lib import paths
from srnets_lib import methods
from srnets_lib.settings.config import LOSSES, PRETRAINING_LOSSES, AnyTask, RunConfig, Task, TransferTask, stage_of
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


class ParamsError(ValueError):
    """A parameter file or override is wrong; the message names the file and the key."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class _Refused(yaml.YAMLError):
    """What _Loader refuses, with where (mark: the line)."""

    def __init__(self, mark, message: str):
        super().__init__(message)
        self.line = mark.line + 1


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing what would silently change what a params file says: a key
    given twice in one mapping (PyYAML keeps the last, so a second `defaults:` block replaces the
    whole first one), and anchors and aliases (nested, a few lines expand to gigabytes, and
    nothing in a params file needs them), refused before anything expands."""

    def compose_node(self, parent, index):
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
            raise _Refused(event.start_mark, "YAML anchors and aliases (&name, *name) are not accepted in params; "
                                             "write the values out")
        return super().compose_node(parent, index)

    def construct_mapping(self, node, deep=False):
        first = {}  # key -> the line it was first given on
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if not isinstance(key, (str, int, float, bool)):  # not hashable; pydantic refuses it later
                continue
            if key in first:
                raise _Refused(key_node.start_mark, f"key {shown(key)} is given twice (first on line {first[key]})")
            first[key] = key_node.start_mark.line + 1
        return super().construct_mapping(node, deep)


def _yaml(text: str):
    return yaml.load(text, Loader=_Loader)


_SHORT = reprlib.Repr()
_SHORT.maxlevel, _SHORT.maxstring, _SHORT.maxother = 3, 60, 60
_SHORT.maxlist = _SHORT.maxtuple = _SHORT.maxdict = _SHORT.maxset = 6


def shown(value, limit: int = 60) -> str:
    """`value` as an error quotes it: at most about a line, a longer string cut with its length."""
    if isinstance(value, str) and len(value) > limit:
        return f"{value[:limit]!r}... ({len(value)} characters)"
    return _SHORT.repr(value)


def _cut(text: str, limit: int = 60) -> str:
    """Command-line text as an error quotes it (unquoted), cut like `shown`."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


class Preset(_Strict):
    seeds: list[Annotated[int, Field(ge=0)]] = Field(min_length=1)
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


# the book's section notebooks (book/<name>.ipynb), in the papers' order: Part I (SRNets), Part II (TAMT)
SECTIONS = ("sec4_2", "sec4_3", "sec4_4", "sec4_5", "sec5_1", "sec5_2", "appc1", "appc5",
            "tamt_transfer", "tamt_pretraining", "tamt_iterations", "tamt_data")
Section = Literal[SECTIONS]
# book notebooks that show no runs of their own (they read the other pages' results): a sweep skips them
RUNLESS_PAGES = ("scorecard",)


class Sections(_Strict):
    """Settings a single notebook needs beyond the run hyper-parameters (defaults: the authors')."""

    sec4_2_tasks: Optional[list[Task]] = None  # default: preset.tasks
    other_tasks: Optional[list[Task]] = None  # tasks of the other sections; default preset.tasks
    seeds: dict[Section, Optional[list[int]]] = {}  # a section's seeds where not the preset's (None: the preset's)
    # a section's sparsities in the default build where fewer than the preset's (the CPU budget): those
    # its claims judge. The preset's others are opt-in: `make book-full` computes them, and the page
    # draws them once they are in the store
    sparsities: dict[Section, list[float]] = {}
    imp_target: float = Field(0.9, gt=0, lt=1)  # one IMP run per setting prunes to it, yielding every level
    # 5.1: mask training from the 4.2 std fine-tuning run's weights after these absolute steps
    # (the authors' mask_on_checkpoints scripts), at this sparsity: one for every task, or per task
    # (figure 7 and appendix figure 3: 70%, 90% for FEVER; the scripts use 0.7 for every task)
    sec5_1_steps: list[int] = [5000, 10000, 15000, 20000]
    sec5_1_sparsity: Union[Annotated[float, Field(gt=0, lt=1)], dict[Task, Annotated[float, Field(gt=0, lt=1)]]] = 0.7

    def sec5_1_sparsity_of(self, task: str) -> float:
        s = self.sec5_1_sparsity
        if not isinstance(s, dict):
            return s
        if task not in s:
            raise ValueError(f"sections.sec5_1_sparsity gives no sparsity for task {task}: add it, or give one number")
        return s[task]
    # 5.2: figure 8 compares fixed and gradual 0.7 -> 0.9 at these mask-training epochs per task (table 5's
    # caption, then the gradual scripts'); table 5 compares init and schedule variants at its caption's
    sec5_2_epochs: dict[Task, list[float]] = {"nli": [3, 5], "paraphrase": [5, 7], "factcheck": [5, 7]}
    table5_epochs: dict[Task, float] = {"nli": 3, "paraphrase": 5, "factcheck": 5}
    table5_inits: list[float] = [0.2, 0.5, 0.7]  # gradual s_init -> 0.9
    # table 6: each entry names a backbone and the run fields that select it
    appc5_backbones: list[dict[str, Any]] = [{"name": "RoBERTa-base", "backbone": "roberta-base"},
                                             {"name": "BERT-large", "backbone": "bert-large-uncased"}]
    appc5_tasks: list[Task] = ["nli"]  # table 6 is NLI only

    @field_validator("sec5_1_steps")
    @classmethod
    def _positive(cls, steps):
        if any(s <= 0 for s in steps) or steps != sorted(set(steps)):
            raise ValueError(f"sec5_1_steps must be increasing positive step counts, got {steps}")
        return steps


class OtherBackbone(_Strict):
    """A backbone whose task-agnostic subnetworks are searched and transferred beside the params'
    own (TAMT figure 4: RoBERTa-base), on the same settings."""

    name: str  # the page's label: "RoBERTa-base"
    backbone: str  # a hub name or a local path (models.resolve)
    sparsities: Optional[list[float]] = None  # TAMT's and IMP's; None: tamt.sparsities
    set: dict[str, Any] = {}  # other run settings it needs (e.g. pooling: cls where the defaults pool BERT's way)


class Tamt(_Strict):
    """Part II, task-agnostic mask training (TAMT, Liu et al. NAACL 2022): which masks are
    searched on the corpus and which tasks they transfer to (defaults: the authors' BERT runs)."""

    tasks: list[TransferTask] = ["cola", "sst2", "rte", "mrpc", "stsb", "mnli", "squad"]
    objectives: list[Literal[PRETRAINING_LOSSES]] = list(PRETRAINING_LOSSES)
    sparsities: list[float] = [0.5, 0.6, 0.7, 0.8, 0.9]  # TAMT and IMP (figure 3)
    oneshot_sparsities: list[float] = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]  # OMP and random
    mask_seeds: list[int] = [1, 2, 3]  # TAMT, IMP, random: 3 masks; OMP: one (the first seed)
    finetune_seeds: list[int] = [1, 2, 3]  # each mask fine-tuned 3 times (section 4.1)
    imp_target: float = Field(0.9, gt=0, lt=1)  # one IMP run yields every level up to it
    head: bool = False  # train an MLM head first (a backbone without one: the packaged MiniLM)
    # TAMT's iterations per sparsity (run_glue/train_mlm/main_result/*: table 2); none given: the
    # iterations IMP takes to reach that sparsity, (s / delta_s - 1) S
    steps: dict[float, int] = {}
    other_backbones: list[OtherBackbone] = []  # figure 4 (paper scale only: the toy packages one backbone)
    # the opt-in pages (make book-full). Figures 6 and 7 at iteration_sparsity: TAMT's masks after these
    # steps (run_glue/train_mlm/steps/*), IMP pruning every imp_intervals steps (imp/bert/prun_step*/),
    # TAMT from a random mask (shell_scripts/train_mlm/bert/rand_init_mask/0.7.sh); figure 9: each task
    # fine-tuned on the first data_sizes examples of its training set (run_glue/few_shot/*)
    iteration_sparsity: float = Field(0.7, gt=0, lt=1)
    iteration_steps: list[int] = [1000, 2000, 3000, 5000, 10000, 20000, 25000]
    imp_intervals: list[int] = [200, 300, 500, 900, 2792]
    figure_tasks: Optional[list[TransferTask]] = ["cola", "sst2", "mnli", "stsb", "squad"]  # None: tasks
    data_sizes: dict[TransferTask, list[int]] = {"cola": [1000, 2000, 5000], "sst2": [1000, 5000, 10000, 30000],
                                                 "mnli": [1000, 5000, 10000, 50000, 100000],
                                                 "squad": [1000, 5000, 10000, 20000, 40000]}


class Execution(_Strict):
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


class Params(_Strict):
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
        values = _deep_copy(self.defaults)
        for override in self.overrides:
            if override.matches(facts):
                _deep_update(values, override.set)
        _deep_update(values, _deep_copy(self.forced))
        _deep_update(values, {"task": task, "method": method, "loss": loss, **fields})
        try:
            return RunConfig(**values)
        except ValidationError as err:
            raise ParamsError(f"{self.source}: invalid run config for {facts}:\n{_explain(err, self._given)}") from None

    def seeds_for(self, section: str) -> list[int]:
        """A section's seeds (Part II: the mask seeds; each mask is fine-tuned with tamt.finetune_seeds)."""
        default = self.tamt.mask_seeds if section.startswith("tamt") else self.preset.seeds
        return list(self.sections.seeds.get(section) or default)

    def sparsities_for(self, section: str, full: bool = False) -> list[float]:
        """A section's sparsities: the default build's (sections.sparsities, else the preset's), or
        with `full` the preset's (Part II: tamt.sparsities either way)."""
        if section.startswith("tamt"):
            return list(self.tamt.sparsities)
        chosen = None if full else self.sections.sparsities.get(section)
        return list(chosen or self.preset.sparsities)

    @model_validator(mode="after")
    def _section_sparsities_in_preset(self):
        for section, chosen in self.sections.sparsities.items():
            outside = [s for s in chosen if not any(abs(s - p) < 1e-9 for p in self.preset.sparsities)]
            if outside:
                raise ValueError(f"sections.sparsities.{section}: {outside} not in preset.sparsities "
                                 f"{self.preset.sparsities} (a section's default sparsities are a subset of them)")
        return self

    def tasks_for(self, section: str) -> list[str]:
        if section in ("tamt_iterations", "tamt_data"):  # figures 6, 7 and 9: the paper's five tasks
            return list(self.tamt.figure_tasks or self.tamt.tasks)
        if section.startswith("tamt"):
            return list(self.tamt.tasks)
        if section == "appc5":
            return list(self.sections.appc5_tasks)
        chosen = self.sections.sec4_2_tasks if section == "sec4_2" else self.sections.other_tasks
        return list(chosen or self.preset.tasks)


def _read(path: Path, seen: tuple[Path, ...] = ()) -> dict:
    """A params file's mapping, merged over its `base` file if it names one."""
    if not path.is_file():
        raise ParamsError(f"params file {path} does not exist")
    if path.resolve() in seen:
        raise ParamsError(f"{path}: `base` files form a cycle")
    try:
        raw = _yaml(path.read_text(encoding="utf-8"))
    except _Refused as err:
        raise ParamsError(f"{path}, line {err.line}: {err}") from None
    except yaml.YAMLError as err:
        raise ParamsError(f"{path}: not valid YAML: {err}") from None
    except UnicodeDecodeError as err:
        raise ParamsError(f"{path}: not UTF-8 text ({err.reason}: bytes {err.object[err.start:err.end]!r})") from None
    if not isinstance(raw, dict):
        raise ParamsError(f"{path}: expected a mapping with preset, defaults, overrides")
    if "base" not in raw:
        return raw
    base = _read(path.parent / str(raw.pop("base")), seen + (path.resolve(),))
    overrides = base.pop("overrides", []) + raw.pop("overrides", [])
    _deep_update(base, raw)
    return {**base, "overrides": overrides}


def load(path: str | Path, overrides: list[str] | dict[str, Any] | None = None) -> Params:
    """Load and validate a params file; `overrides` are `key=value` strings or a dict."""
    path = paths.project_file(path)
    raw = _read(path)
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
            where, run_given[key] = f"forced.{key}", _cut(texts[key])
        _set_dotted(raw, where, value)
        given[where] = _cut(texts[key])
    try:
        params = Params(**raw, source=str(path))
    except ValidationError as err:
        header = f"{path} with the command line's overrides" if _blamed(err, given) else str(path)
        raise ParamsError(f"{header}:\n{_explain(err, given)}") from None
    params._given = run_given
    _validate_runs(params)
    return params


def _drop_section_choices(raw: dict, head: str) -> None:
    """A command-line `tasks=`, `seeds=` or `sparsities=` applies to every Part I section: the
    file's per-section choices (sections.sec4_2_tasks and other_tasks, sections.seeds,
    sections.sparsities) give way to it."""
    sections = raw.get("sections") or {}
    if head == "tasks":
        sections.pop("sec4_2_tasks", None)
        sections.pop("other_tasks", None)
    if head in ("seeds", "sparsities"):
        sections.pop(head, None)


def write_resolved(params: Params, path: str | Path) -> str:
    """`params` with its command-line overrides as one self-contained params file (for notebooks,
    which take a params file, not overrides: sweep --by notebooks --set ...); returns its path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    values = params.model_dump(mode="json", exclude={"source"})
    values["description"] = f"{params.description.strip()} (resolved from {params.source} with command-line overrides)"
    path.write_text(yaml.safe_dump(values, sort_keys=False))
    return str(path)


def parse_overrides(items: list[str]) -> dict[str, Any]:
    """`["sparsity=0.7", "data.bias_strength=0.8"]` -> dict with YAML-typed values."""
    parsed = {}
    for item in items:
        if "=" not in item:
            raise ParamsError(f"override {shown(item)} is not of the form key=value")
        key, value = item.split("=", 1)
        try:
            parsed[key.strip()] = _yaml(value)
        except yaml.YAMLError as err:
            raise ParamsError(f"override {shown(item)}: {str(err).splitlines()[0]}") from None
    return parsed


def _validate_runs(params: Params) -> None:
    """Build one config per (task, stage, loss) so any bad value stops us before work starts."""
    sparsity = params.preset.sparsities[0]
    for task in params.preset.tasks:
        params.run(task, "finetune", "std")
        params.run(task, "finetune", "poe")
        params.run(task, "mask", "poe", sparsity=sparsity)


def _explain(err: ValidationError, given: dict[str, str] | None = None) -> str:
    """One line per error, naming the key, what was expected and the value (shown: at most a
    line); an error a command-line override caused (`given`: its key -> key=value) says so."""
    lines = []
    for e in err.errors():
        where = ".".join(str(p) for p in e["loc"]) or "(top level)"
        origin = _origin(where, given)
        blame = f", set on the command line ({origin})" if origin else ""
        if e["type"] == "extra_forbidden":
            lines.append(f"  unknown key '{where.removeprefix('forced.')}' (typo?){blame}")
        elif not e["loc"]:  # a rule across fields: its message names them
            lines.append(f"  {e['msg'].removeprefix('Value error, ')}")
        else:
            lines.append(f"  {where}: {e['msg']} (got {shown(e.get('input'))}){blame}")
    return "\n".join(lines)


def _origin(where: str, given: dict[str, str] | None) -> str | None:
    """The command-line key=value that set `where` (or a key inside it, or a block holding it)."""
    return next((text for key, text in (given or {}).items()
                 if where == key or where.startswith(key + ".") or key.startswith(where + ".")), None)


def _blamed(err: ValidationError, given: dict[str, str]) -> bool:
    return any(_origin(".".join(str(p) for p in e["loc"]), given) for e in err.errors())


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
