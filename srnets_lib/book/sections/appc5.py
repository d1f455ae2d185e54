"""Appendix C.5 (appendix table 6): other backbones (the params file's sections.appc5.backbones;
the paper: RoBERTa-base and BERT-large) on NLI: the std and PoE full models and mask training with
PoE at 0.5, 0.7 and gradual 0.5 -> 0.7. The authors left no scripts for it: their BERT-base NLI
settings are used."""

from __future__ import annotations

from dataclasses import replace

from srnets_lib.book import plots
from srnets_lib.settings.recipes import Recipes
from srnets_lib.book.sections.base import Section, references
from srnets_lib.book.sections.point import Point
from srnets_lib.book.sections.srnet_claims import FullModels, SubnetworkVsFull
from srnets_lib.book.sections.series import POE, STD


class OtherBackbones(Section):
    name, number, title = "appc5", "C.5", "Other backbones (paper: RoBERTa-base, BERT-large; toy: a 3-layer MiniLM)"
    reproduces = "appendix table 6"
    claims = (FullModels(), SubnetworkVsFull("mask 0.5", xs=(0.5,), names={STD: "full model (std)"}),
              SubnetworkVsFull("mask 0.7", xs=(0.7,), names={STD: "full model (std)"}))
    paper_table = "table6"
    subset_series = (STD, POE)

    def tasks(self, params) -> list[str]:
        """sections.appc5.tasks (table 6 is NLI only)."""
        return list(params.sections.appc5.tasks or params.preset.tasks)

    def subset_points(self, results, series, sparsity):
        """The full models of each backbone beside those of the book's own backbone (section 4.2's):
        where on the OOD set does each std model follow the cue?"""
        own = [(p, "section 4.2's backbone") for task in results.tasks for seed in results.seeds
               for p in references(Recipes(results.params), task, seed, keep_steps=False) if p.series in series]
        return [replace(p, series=f"{full_model(p.series)}, {backbone}")
                for p, backbone in own + [(p, p.group) for p in super().subset_points(results, series, sparsity)]]

    def points(self, recipes, tasks, seeds, sparsities):
        """One group of points per backbone; `sparsities` is not used (table 6 fixes them)."""
        points = []
        for choice in recipes.p.sections.appc5.backbones:
            forced = {**recipes.p.forced, **{k: v for k, v in choice.items() if k != "name"}}
            other = Recipes(recipes.p.model_copy(update={"forced": forced}))
            group = choice.get("name", choice["backbone"])
            for task in tasks:
                for seed in seeds:
                    points += [replace(p, group=group) for p in references(other, task, seed, keep_steps=False)]
                    for s in (0.5, 0.7):
                        points.append(Point(f"mask {s}", task, seed, s, other.prune_ft(task, "mask", "poe", s, seed),
                                            group=group))
                    points.append(Point("mask 0.5->0.7", task, seed, 0.7, other.gradual(task, 0.5, 0.7, seed),
                                        group=group))
        return points

    def figure(self, results):
        """Mask training with PoE against sparsity, one figure per backbone."""
        return [plots.sparsity_figure(named(sub), f"Mask training with PoE on {group}", synthetic=results.synthetic)
                for group, sub in results.frame.groupby("group", sort=False)]

    def table(self, results):
        return plots.table(named(results.frame), index=("group", "task", "series"))


def full_model(series: str) -> str:
    """A backbone's full model as table 6 names it ("full model, std"): not "full bert" on a
    RoBERTa or a MiniLM (the pages' other series names, and the colours, stay those of 4.2)."""
    return series.replace("full bert (", "full model (")


def named(frame):
    """The frame's series as C.5 names them (full_model)."""
    return frame.assign(series=frame.series.map(full_model))


SECTION = OtherBackbones()
