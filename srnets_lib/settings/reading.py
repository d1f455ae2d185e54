"""How params files are read: YAML that refuses what would silently change what a file says, a
file merged over its `base`, command-line `key=value` overrides, and validation errors as one
line per key, naming the file and, where it caused the error, the command line."""

from __future__ import annotations

import reprlib
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError


class ParamsError(ValueError):
    """A parameter file or override is wrong; the message names the file and the key."""


class Block(BaseModel):
    """A block of a params file: unknown keys, changes after loading and non-finite numbers refused."""

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


def read_yaml(text: str):
    return yaml.load(text, Loader=_Loader)


_SHORT = reprlib.Repr()
_SHORT.maxlevel, _SHORT.maxstring, _SHORT.maxother = 3, 60, 60
_SHORT.maxlist = _SHORT.maxtuple = _SHORT.maxdict = _SHORT.maxset = 6


def shown(value, limit: int = 60) -> str:
    """`value` as an error quotes it: at most about a line, a longer string cut with its length."""
    if isinstance(value, str) and len(value) > limit:
        return f"{value[:limit]!r}... ({len(value)} characters)"
    return _SHORT.repr(value)


def cut(text: str, limit: int = 60) -> str:
    """Command-line text as an error quotes it (unquoted), cut like `shown`."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def read(path: Path, seen: tuple[Path, ...] = ()) -> dict:
    """A params file's mapping, merged over its `base` file if it names one."""
    if not path.is_file():
        raise ParamsError(f"params file {path} does not exist")
    if path.resolve() in seen:
        raise ParamsError(f"{path}: `base` files form a cycle")
    try:
        raw = read_yaml(path.read_text(encoding="utf-8"))
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
    base = read(path.parent / str(raw.pop("base")), seen + (path.resolve(),))
    overrides = base.pop("overrides", []) + raw.pop("overrides", [])
    deep_update(base, raw)
    return {**base, "overrides": overrides}


def parse_overrides(items: list[str]) -> dict[str, Any]:
    """`["sparsity=0.7", "data.bias_strength=0.8"]` -> dict with YAML-typed values."""
    parsed = {}
    for item in items:
        if "=" not in item:
            raise ParamsError(f"override {shown(item)} is not of the form key=value")
        key, value = item.split("=", 1)
        try:
            parsed[key.strip()] = read_yaml(value)
        except yaml.YAMLError as err:
            raise ParamsError(f"override {shown(item)}: {str(err).splitlines()[0]}") from None
    return parsed


def explain(err: ValidationError, given: dict[str, str] | None = None) -> str:
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


def blamed(err: ValidationError, given: dict[str, str]) -> bool:
    return any(_origin(".".join(str(p) for p in e["loc"]), given) for e in err.errors())


def set_dotted(target: dict, key: str, value: Any) -> None:
    """`key` (dotted: a field of a block) set to `value`; a dotted key through a value that is not a
    block (a list, a number, a string) is refused naming both."""
    *parents, last = key.split(".")
    for depth, part in enumerate(parents):
        target = target.setdefault(part, {})
        if not isinstance(target, dict):
            inside = ".".join(parents[:depth + 1])
            raise ParamsError(f"override {key}={value!r}: {inside} is {type(target).__name__} {target!r}, not a block "
                              f"of fields; set {inside} itself (e.g. {inside}={target!r})")
    target[last] = value


def deep_update(target: dict, updates: dict) -> None:
    for key, value in updates.items():
        if isinstance(value, dict) and isinstance(target.get(key), dict):
            deep_update(target[key], value)
        else:
            target[key] = value


def deep_copy(values: dict) -> dict:
    return {k: deep_copy(v) if isinstance(v, dict) else v for k, v in values.items()}
