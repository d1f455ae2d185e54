"""What `python -m srnets_lib export` exports: a run by its key, or the points a book page shows
(section, series, task, sparsity, seed: sections.Section.points under a params file), each a
`Target`. A key or a point that does not exist is refused with one line naming what does.

A run found by its key is also looked up among the pages' points under the params file, so its
model card can say which section, series and point it is (the first page that shows it).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from srnets_lib import paths
from srnets_lib.book import sections
from srnets_lib.book.sections import Point
from srnets_lib.settings.config import RunConfig
from srnets_lib.settings.pages import SECTIONS
from srnets_lib.settings.params import Params
from srnets_lib.store.runs import Run


@dataclass(frozen=True)
class Target:
    config: RunConfig
    point: Point | None  # the page point it is, where one shows it
    page: str | None  # that page's section name (sec4_2, tamt_transfer, ...)

    @property
    def level(self) -> float | None:
        return None if self.point is None else self.point.level

    def name(self) -> str:
        """A folder name: series, task, sparsity and seed of its point, else the run key."""
        p = self.point
        if p is None:
            return self.config.key()
        series = "".join(c if c.isalnum() else "-" for c in p.series).strip("-")
        while "--" in series:
            series = series.replace("--", "-")
        return f"{series}-{p.task}-s{p.x:g}-seed{p.seed}" + (f"-{p.group}" if p.group else "")


def by_key(key: str, params: Params, root: Path | None = None) -> Target:
    """The finished run `key` of the store (or its folder, runs/<key>/); refused naming the store's
    runs if it has none such."""
    store = Path(root) if root is not None else paths.runs_root()
    key = run_key_of(key, store)
    where = paths.run_dir(key, store) / paths.CONFIG
    if not where.is_file():
        raise ValueError(f"run key {key!r} is not in the run store {store}; " + finished_runs(store, key))
    config = read_config(where)
    if config.key() != key:
        raise ValueError(f"{where}: its settings have key {config.key()}, not {key} (a store of another algorithm "
                         "version: python -m srnets_lib rekey)")
    if not Run(config, store).done:
        raise ValueError(f"run {key} has not finished ({Run(config, store).dir} has no {paths.FINAL}); "
                         + finished_runs(store, key))
    point, page = shown_by(config, params)
    return Target(config, point, page)


def run_key_of(given: str, store: Path) -> str:
    """A run key as given, or as its folder in the store names it (runs/<key>/, a trailing slash);
    a folder outside the store is refused naming the store."""
    path = Path(given)
    if len(path.parts) <= 1:
        return path.name or given
    if path.resolve().parent != store.resolve():
        raise ValueError(f"{given}: not a run folder of the run store {store} (SRNETS_RUNS chooses the store); "
                         "give its key, e.g. " + (path.name or given))
    return path.name


def read_config(where: Path) -> RunConfig:
    """A run's config.yaml as a RunConfig; a file that is not plain YAML settings is named."""
    try:
        return RunConfig(**yaml.safe_load(where.read_text()))
    except yaml.YAMLError as err:
        raise ValueError(f"{where}: not a run's settings ({type(err).__name__}: "
                         f"{str(err).splitlines()[0]}); the run store's config.yaml is plain YAML") from None
    except (TypeError, ValueError) as err:
        raise ValueError(f"{where}: not a run's settings ({str(err).splitlines()[0]})") from None


def finished_runs(store: Path, near: str) -> str:
    """'finished runs there: ...' (those of the same task, method and loss first; at most 8)."""
    keys = sorted(p.parent.name for p in store.glob(f"*/{paths.FINAL}")) if store.is_dir() else []
    if not keys:
        return "it holds no finished run"
    prefix = near.rsplit("-", 1)[0]
    ordered = [k for k in keys if k.startswith(prefix)] + [k for k in keys if not k.startswith(prefix)]
    more = f" and {len(keys) - 8} more" if len(keys) > 8 else ""
    return f"finished runs there: {', '.join(ordered[:8])}{more}"


def shown_by(config: RunConfig, params: Params) -> tuple[Point | None, str | None]:
    """The first page point (any sparsity of the preset) whose run is `config` at its own end."""
    key = config.key()
    for name in SECTIONS:
        for point in sections.points(name, params, full=True):
            if point.config.key() == key and (point.level is None or abs(point.level - config.sparsity) < 1e-9):
                return point, name
    return None, None


def by_point(page: str, params: Params, series: str | None = None, task: str | None = None,
             sparsity: float | None = None, seed: int | None = None) -> list[Target]:
    """The points of `page` (with the preset's opt-in sparsities) matching every filter given;
    a filter that matches none is refused naming the values the page has."""
    points = sections.points(page, params, full=True)
    for what, wanted, value in (("series", series, lambda p: p.series), ("task", task, lambda p: p.task),
                                ("sparsity", sparsity, lambda p: p.x), ("seed", seed, lambda p: p.seed)):
        if wanted is None:
            continue
        chosen = [p for p in points if _same(value(p), wanted)]
        if not chosen:
            shown = ", ".join(map(_shown, dict.fromkeys(value(p) for p in points)))
            raise ValueError(f"page {page} ({params.source}) has no point with {what} {_shown(wanted)} among those "
                             f"left; its {what} values: {shown}")
        points = chosen
    return [Target(p.config, p, page) for p in points]


def unfinished(targets: list[Target], root: Path | None = None) -> list[str]:
    """'<folder name> (run <key>)' for each target whose run has not finished."""
    return [f"{t.name()} (run {t.config.key()})" for t in targets if not Run(t.config, root).done]


def _same(a, b) -> bool:
    return abs(a - b) < 1e-9 if isinstance(a, float) and isinstance(b, (int, float)) else a == b


def _shown(value) -> str:
    return f"{value:g}" if isinstance(value, float) else (f"'{value}'" if isinstance(value, str) else str(value))
