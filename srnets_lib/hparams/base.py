"""The machinery of settings groups, as open_lth's hparams (the groups every run has: common.py).
A plugin (a method, methods/; a task kind, engine/kinds/) declares the run settings only it reads
as a small frozen `Group` in its own module and lists the groups it reads (`Plugin.groups`: its
own, or one another plugin of its family declares and it shares). settings/config.py composes
every registered plugin's groups into RunConfig's flat fields (`fields`), so a run's key still
hashes the flat names and their values; `foreign` is the one rule that finds a setting of a group
the run's own plugin does not read, and a plugin's hooks read the run through `Settings`, which
holds back every other plugin's group."""

from __future__ import annotations

import functools
from typing import ClassVar, Iterable

from pydantic import BaseModel, ConfigDict
from pydantic.fields import FieldInfo


class Group(BaseModel):
    """Settings one plugin reads (or a few of one family share); each field with its default."""

    # allow_inf_nan: `epochs: .inf` would pass `gt=0`, then overflow counting steps
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


def fields(groups: Iterable[type[Group]]) -> dict[str, tuple[object, FieldInfo]]:
    """The flat fields of `groups` as pydantic.create_model takes them; a name two groups declare is refused."""
    found: dict[str, tuple[object, FieldInfo]] = {}
    owner: dict[str, type[Group]] = {}
    for group in dict.fromkeys(groups):
        for name, info in group.model_fields.items():
            if name in owner:
                raise ValueError(f"setting {name} is declared by {owner[name].__name__} and {group.__name__}")
            owner[name], found[name] = group, (info.annotation, info)
    return found


def foreign(plugin: type, family: Iterable[type], config) -> tuple[str, object, type] | None:
    """The first setting `config` sets away from its default of a group `plugin` does not read, with
    the plugin of `family` that lists that group in its own class body (None: there is none): the one
    rule by which a run refuses another plugin's settings (methods/base.py, engine/kinds/base.py)."""
    composed = type(config).model_fields  # a group not composed into config's class: unset
    for name, default, owner in _others(plugin, frozenset(family)):
        if name in composed and getattr(config, name) != default:
            return name, getattr(config, name), owner
    return None


def unread(plugin: type, family: Iterable[type]) -> frozenset[str]:
    """The settings of the groups plugins of `family` declare in their own class bodies that
    `plugin` does not read."""
    return frozenset(name for name, _, _ in _others(plugin, frozenset(family)))


@functools.lru_cache(maxsize=None)
def _others(plugin: type, family: frozenset[type]) -> tuple[tuple[str, object, type], ...]:
    """(setting, default, the plugin declaring its group) for every group of `family` that `plugin`
    does not read, in the plugins' name order (once per plugin and family: config validation asks
    it of every run)."""
    read = set(plugin.groups)
    return tuple((name, info.default, other) for other in sorted(family, key=lambda k: k.__name__)
                 for group in vars(other).get("groups", ()) if group not in read
                 for name, info in group.model_fields.items())


class Settings:
    """A run's settings as one plugin's hooks see them, never the whole RunConfig: the common
    settings and what the run derives from them (its key, its loss, its dependencies), and the
    settings of the groups the plugin reads. A setting of another plugin's group raises
    AttributeError naming it (`foreign` refuses a run that sets one). Read-only; `Plugin.settings`
    builds it (methods/base.py, engine/kinds/base.py)."""

    __slots__ = ("_config", "_unread", "_reader")

    def __init__(self, config, unread_names: frozenset[str], reader: str):
        object.__setattr__(self, "_config", config)
        object.__setattr__(self, "_unread", frozenset(unread_names))
        object.__setattr__(self, "_reader", reader)

    def __getattr__(self, name: str):
        if name.startswith("__") or name in Settings.__slots__:  # pickling's probes, before __init__ ran
            raise AttributeError(name)
        if name in self._unread:
            raise AttributeError(f"{self._reader} does not read {name}: another plugin's setting (hparams/)")
        return getattr(self._config, name)

    def __setattr__(self, name: str, value) -> None:
        raise AttributeError(f"a run's settings are read-only ({name})")

    def __reduce__(self):
        return Settings, (self._config, self._unread, self._reader)

    def __repr__(self) -> str:
        return f"Settings({self._reader}: {self._config!r})"


class Plugin:
    """A method (methods/base.py) or a task kind (engine/kinds/base.py) as the settings see it: the
    groups it reads, the one rule refusing a run that sets another plugin's (`check`, then its own
    rules, `validate`), and the view of a run its hooks read (`settings`). A plugin's family is the
    class that subclasses Plugin directly (Method, TaskKind): the rule compares it with the others
    of its family only."""

    # the settings groups it reads beyond the common ones: its own, declared in its module, or one
    # another plugin of its family declares and it shares; a run of another plugin leaves them unset
    groups: ClassVar[tuple[type[Group], ...]] = ()

    @classmethod
    def check(cls, config) -> None:
        """Raise ValueError naming the field when `config` is not a valid run of this plugin: it sets
        a setting of another plugin's group (`foreign`), or the plugin's own rules refuse it."""
        found = foreign(cls, cls.family(), config)
        if found:
            raise ValueError(cls.refusal(*found, config))
        cls.validate(cls.settings(config))

    @classmethod
    def settings(cls, config) -> Settings:
        """`config` as this plugin's hooks read it: the common settings and its groups'."""
        return Settings(config, unread(cls, cls.family()), cls.reader())

    @classmethod
    def validate(cls, config: Settings) -> None:
        """The plugin's own rules (check calls them): raise ValueError naming the field."""

    @classmethod
    def refusal(cls, name: str, value, owner: type, config) -> str:
        """The error for a run of `cls` that sets `owner`'s setting `name`."""
        raise NotImplementedError

    @classmethod
    def reader(cls) -> str:
        """How an error names this plugin ("method IMP", "the corpus kind")."""
        raise NotImplementedError

    @classmethod
    def family(cls) -> set[type]:
        """Every plugin of this one's family (the subclasses of its base, however deep)."""
        base = next(k for k in cls.__mro__ if Plugin in k.__bases__)
        return _subclasses(base)


def _subclasses(cls: type) -> set[type]:
    return {c for sub in cls.__subclasses__() for c in (sub, *_subclasses(sub))}
