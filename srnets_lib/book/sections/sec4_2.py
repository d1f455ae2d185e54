"""Section 4.2 (figures 2 and 3): subnetworks from the std- and the PoE-fine-tuned BERT, by mask
training and IMP with the std or the PoE loss."""

from __future__ import annotations

from srnets_lib.book.sections.base import Section, levels, references
from srnets_lib.book.sections.point import Point
from srnets_lib.book.sections.srnet_claims import FullModels, SubnetworkVsFull
from srnets_lib.book.sections.series import POE, STD, imp, mask

IMP_SETTINGS = (("std", "std", imp("std")), ("poe", "std", imp("poe")), ("poe", "poe", imp("poe", " on poe ft")))


class FromFineTuned(Section):
    name, number, title = "sec4_2", "4.2", "Subnetworks from fine-tuned BERT"
    reproduces = "figures 2 and 3"
    figure_title = "Subnetworks from fine-tuned models (cf. paper figures 2, 3)"
    claims = (SubnetworkVsFull(mask("poe")), SubnetworkVsFull(imp("poe")))
    reference_claims = (FullModels(),)
    subset_series = (STD, POE, mask("poe"), mask("std"), imp("poe"))
    structure_against = mask("poe")

    def tasks(self, params) -> list[str]:
        """sections.sec4_2.tasks, else the preset's (figure 2 shows every task, whatever
        sections.tasks chooses for the other pages)."""
        return list(params.sections.sec4_2.tasks or params.preset.tasks)

    def points(self, recipes, tasks, seeds, sparsities):
        """The pruned `tasks`, then the full models of every other preset task (the ID-OOD gap of
        each task is reported here even when only some are pruned)."""
        others = [t for t in recipes.p.preset.tasks if t not in tasks]
        return super().points(recipes, tasks, seeds, sparsities) + [
            p for task in others for seed in seeds for p in references(recipes, task, seed)]

    def subnetworks(self, recipes, task, seed, sparsities):
        """Mask training with each loss on the std model and with PoE on the PoE model; one IMP run
        per (loss, start) setting, read at each sparsity."""
        points = []
        for s in sparsities:
            for loss in ("std", "poe"):
                points.append(Point(mask(loss), task, seed, s, recipes.prune_ft(task, "mask", loss, s, seed)))
            points.append(Point(mask("poe", " on poe ft"), task, seed, s,
                                recipes.prune_ft(task, "mask", "poe", s, seed, full_loss="poe")))
        for loss, start, name in IMP_SETTINGS:
            points += levels(name, task, seed, sparsities, recipes.imp(task, loss, seed, start))
        return points


SECTION = FromFineTuned()
