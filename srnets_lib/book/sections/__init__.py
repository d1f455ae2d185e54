"""The paper's sections as the book shows them: one Section object per notebook (its points,
figure, table and claims), by name, and the points each notebook shows; the sweep plans its runs
from the same points."""

from __future__ import annotations

from srnets_lib.settings.pages import SECTIONS
from srnets_lib.settings.params import Params
from srnets_lib.settings.recipes import Recipes
from srnets_lib.book.sections import appc1, appc5, sec4_2, sec4_3, sec4_4, sec4_5, sec5_1, sec5_2, tamt_data, tamt_iterations, tamt_pretraining, tamt_transfer
from srnets_lib.book.sections.base import Section
from srnets_lib.book.sections.point import Point

BY_NAME: dict[str, Section] = {module.SECTION.name: module.SECTION
                               for module in (sec4_2, sec4_3, sec4_4, sec4_5, sec5_1, sec5_2, appc1, appc5,
                                              tamt_transfer, tamt_pretraining, tamt_iterations, tamt_data)}


def get(name: str) -> Section:
    if name not in SECTIONS:
        raise ValueError(f"unknown section {name!r}; accepted: {', '.join(SECTIONS)}")
    return BY_NAME[name]


def resolve(name: str, params: Params, tasks=None, seeds=None, sparsities=None,
            full: bool = False) -> tuple[list, list, list]:
    """(tasks, seeds, sparsities) of the notebook `name`; None means the page's choice from the
    params file (Section.tasks, seeds, sparsities: with `full` the opt-in sparsities too)."""
    section = get(name)
    return (list(tasks or section.tasks(params)), list(seeds or section.seeds(params)),
            list(section.sparsities(params, full) if sparsities is None else sparsities))


def points(name: str, params: Params, tasks=None, seeds=None, sparsities=None, full: bool = False) -> list[Point]:
    """Every point the notebook `name` shows (None: the params file's tasks, seeds, sparsities;
    `full`: with the opt-in sparsities and the section's opt-in points)."""
    section, recipes, chosen = get(name), Recipes(params), resolve(name, params, tasks, seeds, sparsities, full)
    return section.points(recipes, *chosen) + (section.opt_in_points(recipes, *chosen) if full else [])


__all__ = ["BY_NAME", "SECTIONS", "Point", "Section", "get", "points", "resolve"]
