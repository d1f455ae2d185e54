"""TAMT figures 3, 4 and 11: downstream scores of subnetworks found without a task, against sparsity:
masks trained on MLM, KD or both (TAMT), IMP on MLM, one-shot magnitude (OMP) and random pruning,
each fine-tuned on every downstream task; the full model for reference. Figure 3 is the params'
backbone (BERT), figure 4 each of tamt.other_backbones (RoBERTa-base), one group of points each;
figure 11 sets the backbones' OMP subnetworks and full models side by side (appendix A.2)."""

from __future__ import annotations

import pandas as pd

from srnets_lib.book import plots
from srnets_lib.book.sections import claims
from srnets_lib.book.verdicts import noise
from srnets_lib.book.sections.point import Point
from srnets_lib.book.sections.tamt import FULL, PROBE_TASK, TamtSection, judged_rows, scores_only, subnetworks
from srnets_lib.book.sections.tamt_figures import score_figure
from srnets_lib.book.sections.tamt_score_claims import AboveMagnitude
from srnets_lib.book.verdicts.verdict import Verdict
from srnets_lib.settings.recipes import Recipes

class Transfer(TamtSection):
    name, number, title = "tamt_transfer", "TAMT 4.2.1, A.2", "Task-agnostic subnetworks, fine-tuned on each task"
    reproduces = "TAMT figures 3, 4 and 11"
    figure_title = "Downstream score of task-agnostic subnetworks (cf. TAMT figure 3)"
    claims = (AboveMagnitude(),)

    def points(self, recipes, tasks, seeds, sparsities):
        """The params' backbone's points (group ""), then each of tamt.other_backbones' (its
        name; the opt-in ones with make book-full)."""
        return self._points(recipes, tasks, seeds, sparsities, opt_in=False)

    def opt_in_points(self, recipes, tasks, seeds, sparsities):
        return self._points(recipes, tasks, seeds, sparsities, opt_in=True)

    def _points(self, recipes, tasks, seeds, sparsities, opt_in: bool) -> list[Point]:
        """The backbones' points on the same settings but the backbone, each at its own sparsities
        unless the page was asked for some (`opt_in`: those of the opt-in backbones only)."""
        tamt = recipes.p.tamt
        asked = list(sparsities) != list(tamt.sparsities)
        points = [] if opt_in else self.of_backbone(recipes, tasks, seeds, sparsities, asked)
        for other in (o for o in tamt.other_backbones if o.opt_in == opt_in):
            forced = {**recipes.p.forced, "backbone": other.backbone, **other.set}
            theirs = Recipes(recipes.p.model_copy(update={"forced": forced}))
            own = sparsities if asked or other.sparsities is None else other.sparsities
            points += self.of_backbone(theirs, tasks, seeds, own, asked, other.name, other.series)
        return points

    @staticmethod
    def of_backbone(recipes, tasks, seeds, sparsities, asked: bool | None = None, group: str = "",
                    only=None) -> list[Point]:
        """The points of `recipes`' backbone: for each task, fine-tuning seed and subnetwork (of the
        series `only`, None: all), the subnetwork fine-tuned on the task; the full model fine-tuned
        with each seed."""
        found = [n for n in subnetworks(recipes, seeds, sparsities, asked) if only is None or n.series in only]
        points = []
        for task in tasks:
            for ft in recipes.p.tamt.finetune_seeds:
                points.append(Point(FULL, task, ft, 0.0, recipes.full(task, "std", ft), reference=True, group=group))
                points += [Point(n.series, task, ft, n.sparsity, recipes.transfer(task, n.run, ft, n.level), group=group)
                           for n in found]
        return points

    def figure(self, results):
        """Per backbone: one panel per task and one for the mean over tasks, ID score vs sparsity
        (a bar per series where each has one sparsity); with two backbones or more, figure 11."""
        groups = list(dict.fromkeys(results.frame.group))
        figures = [score_figure(results, self._title(group), "sparsity", results.frame[results.frame.group == group])
                   for group in groups]
        return figures + ([self.backbones_figure(results)] if len(groups) > 1 else [])

    def backbones_figure(self, results):
        """Figure 11 (appendix A.2): each backbone's OMP subnetworks and full model, per task and the
        mean over tasks."""
        name = results.params.run("corpus", "omp", "mlm", sparsity=0.5).backbone
        rows = results.frame[results.frame.series.isin(["OMP", FULL])]
        rows = rows.assign(series=[f"{s}, {g or name}" for s, g in zip(rows.series, rows.group)], group="")
        return score_figure(results, "OMP subnetworks and full models of each backbone (cf. TAMT figure 11)", "sparsity",
                            rows.assign(reference=rows.series.str.startswith(FULL)))

    def _title(self, group: str) -> str:
        return self.figure_title if not group else f"Downstream score of task-agnostic {group} subnetworks (cf. TAMT figure 4)"

    def table(self, results):
        index = ("group", "task", "series", "x") if results.frame.group.nunique() > 1 else ("task", "series", "x")
        return plots.table(scores_only(results.frame), index=index)

    def remarks(self, results) -> str:
        """The tasks on which no two subnetworks' scores differ by more than twice the standard error
        of their difference (from their stored predictions) at any sparsity, random pruning included:
        such a task separates no method, and its panel's spread is noise."""
        rows = scores_only(judged_rows(results))
        rows = rows[~rows.reference.astype(bool) & (rows.task != PROBE_TASK)] if not rows.empty else rows
        flat = []
        for (group, task), of_task in (rows.groupby(["group", "task"], sort=False) if not rows.empty else []):
            spreads = [separation(of_x) for _, of_x in of_task.groupby("x")]
            if spreads and all(s is not None and not s[0] for s in spreads):
                flat.append(f"{task}{f' ({group})' if group else ''}: {max(s[1] for s in spreads):.1f} points at most "
                            "between two of them")
        if not flat:
            return ""
        rand = ", random pruning included" if "Rand" in set(rows.series) else ""
        return (f"**Separates no method** ({'; '.join(flat)}): there the subnetworks' scores at each sparsity lie "
                f"within twice the standard error of their differences (from the stored predictions){rand}; "
                "differences on that panel are noise.")

    def judge(self, results) -> list[Verdict]:
        """The claims on the page's own points (not the opt-in backbones'), as the scorecard judges them."""
        return claims.judge(results, self.claims, judged_rows(results), results.tasks)


def separation(rows: pd.DataFrame) -> tuple[bool, float] | None:
    """Of one task's subnetworks at one sparsity: whether some two differ by more than twice the
    standard error of their difference, and the largest difference (points); None where a score
    has no stored predictions or fewer than two series are there."""
    scores = {series: noise.mean(noise.scores(group, "id")) for series, group in rows.groupby("series")}
    if len(scores) < 2 or any(s.se is None for s in scores.values()):
        return None
    pairs = [(a - b) for a in scores.values() for b in scores.values() if float(a) > float(b)]
    return any(abs(float(d)) > 2 * (d.se or 0.0) for d in pairs), 100 * max((float(d) for d in pairs), default=0.0)


SECTION = Transfer()
