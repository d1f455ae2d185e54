"""Section 4.3 (figure 4): subnetworks fine-tuned in isolation from theta_pt: IMP lottery tickets
found with PoE (scripts/imp/lt) and the PoE masks of section 4.2
(scripts/mask_train/.../poe/*/retrain in github.com/llyx97/sparse-and-robust-PLM)."""

from __future__ import annotations

from srnets_lib.book.sections.base import Section, levels
from srnets_lib.book.sections.point import Point
from srnets_lib.book.sections.srnet_claims import SubnetworkVsFull
from srnets_lib.book.sections.series import POE, STD, mask


class InIsolation(Section):
    name, number, title = "sec4_3", "4.3", "Subnetworks fine-tuned in isolation"
    reproduces = "figure 4"
    figure_title = "Subnetworks fine-tuned in isolation (cf. paper figure 4)"
    claims = (SubnetworkVsFull(mask("poe", ", then std ft")),
              SubnetworkVsFull(mask("poe", ", then poe ft"), reference=POE))
    subset_series = (STD, POE, mask("poe", ", then std ft"), mask("poe", ", then poe ft"),
                     "imp-rw (poe), then poe ft")

    def subnetworks(self, recipes, task, seed, sparsities):
        points = []
        tickets = recipes.imp(task, "poe", seed, start="pt")
        for s in sparsities:
            levels("imp-rw (poe)", task, seed, [s], tickets)  # checks s is a level
            masks = recipes.prune_ft(task, "mask", "poe", s, seed)
            for loss in ("std", "poe"):
                points.append(Point(f"imp-rw (poe), then {loss} ft", task, seed, s,
                                    recipes.isolate(task, tickets, loss, seed, level=round(s, 6))))
                points.append(Point(mask("poe", f", then {loss} ft"), task, seed, s, recipes.isolate(task, masks, loss, seed)))
        return points


SECTION = InIsolation()
