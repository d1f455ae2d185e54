"""TAMT figures 6 and 7 (opt-in: make book-full): the downstream score of 70% subnetworks against
the pre-training iterations spent finding them: TAMT's masks after more and more steps, from the
OMP mask or from a random one (figure 7, whose step 0 is each initial mask itself: a search run
stopped after 0 updates), against IMP pruning more or less often (figure 6)."""

from __future__ import annotations

import pandas as pd

from srnets_lib.book import plots
from srnets_lib.book.sections.base import Point
from srnets_lib.book.sections.claims import GAIN
from srnets_lib.book.sections.tamt import (FULL, PROBE_TASK, SERIES, TamtSection, fewest, overall, overall_scores,
                                           runs_behind, score_figure, scores_only, seed_margins)
from srnets_lib.book.sections.verdict import Statement, Verdict, pct
from srnets_lib import methods
from srnets_lib.model import pruning
from srnets_lib.store.runs import Run

OBJECTIVES = ("mlm", "kd")  # figures 6 and 7 show TAMT-MLM and TAMT-KD
RANDOM = " (Rand_init)"
FEWER = Statement("tamt-fewer-iterations", "'TAMT reaches IMP's best score with fewer iterations' (8.4x fewer)",
                  "the fewest iterations at which TAMT's mean score >= IMP's best < the iterations of IMP's best "
                  "(margin: the share of IMP's iterations saved)", unit="share",
                  words="TAMT reaches IMP's best mean score after fewer pre-training iterations than IMP took to reach "
                        "it (the margin: the share of IMP's iterations saved)")
OMP_INIT = Statement("tamt-omp-init", "'OMP initialisation beats random initialisation'",
                     "at the most iterations, mean score from the OMP mask > from a random mask + GAIN", {"GAIN": GAIN},
                     words="after the most iterations, the search from the OMP mask beats the same search from a "
                           "random mask by more than {GAIN}")


def imp_iterations(recipes, config, sparsity: float) -> int:
    """The iterations IMP spends before its mask reaches `sparsity` (it prunes to it then)."""
    steps = methods.planned_schedule(config).sparsity_steps
    return next(step for step, level in steps.items() if abs(level - sparsity) < 1e-9)



def distance_curves(page) -> pd.DataFrame:
    """Figure 8 (section 4.2.5; mask_training/mask_dist.py): per finished mask of the page (TAMT-MLM's
    and TAMT-KD's from OMP after each step count, IMP's level at each pruning interval), 1 - Jaccard to
    the OMP mask of its sparsity and mask seed (the searches' step 0 from OMP: the OMP mask itself)."""
    masks = {}
    for p in page.points:
        key = (p.series, p.x, p.config.mask_from.seed if p.config.mask_from else None, p.group)
        if p.reference or RANDOM in p.series or key in masks:
            continue
        run = Run(p.config.mask_from)
        if run.served():
            masks[key] = run.masks(p.config.mask_level)
    omp = {(seed, group): m for (series, x, seed, group), m in masks.items() if series == SERIES["mlm"] and x == 0}
    rows = [(series, x, group, seed, 1 - pruning.jaccard(m, omp[(seed, group)]))
            for (series, x, seed, group), m in masks.items() if (seed, group) in omp and x > 0]
    return pd.DataFrame(rows, columns=["series", "x", "group", "mask seed", "distance to OMP"])


def distance_figure(page, sparsity: float):
    """Figure 8: each search's distance to the OMP mask against its iterations, one panel per
    sparsity whose searches the store has (mean +- sd over mask seeds); None where it has none."""
    plt = plots.pyplot()
    table = distance_curves(page)
    groups = [g for g in dict.fromkeys(p.group for p in page.points if not p.reference)
              if not table.empty and (table.group == g).any()]
    if not groups:
        return None
    fig, axes = plt.subplots(1, len(groups), figsize=(4.6 * len(groups), 3.6), squeeze=False)
    palette = plots.palette_of([SERIES[o] for o in OBJECTIVES] + ["IMP"])
    for ax, group in zip(axes[0], groups):
        for name, rows in table[table.group == group].groupby("series"):
            stats = rows.groupby("x")["distance to OMP"].agg(["mean", "std"]).sort_index()
            ax.errorbar(stats.index, stats["mean"], yerr=stats["std"].fillna(0), marker="o", ms=3, capsize=2,
                        color=palette[name], label=name, ls="-" if name != "IMP" else ":")
        ax.set_title(group or f"{sparsity:.0%} sparsity", fontsize=10)
        ax.set_xlabel("pre-training iterations")
        ax.set_ylabel("1 - Jaccard to the OMP mask")
        ax.legend(fontsize=8)
    fig.suptitle("Mask distance to OMP along the searches (cf. TAMT figure 8)" + (" (synthetic)" if page.synthetic else ""))
    fig.tight_layout()
    plt.close(fig)
    return fig


class Iterations(TamtSection):
    name, number, title = "tamt_iterations", "TAMT 4.2.3, 4.2.4", "Pre-training iterations and mask initialisation"
    figure_tasks = True
    reproduces = "TAMT figures 6, 7, 8 and 14-16"
    x_name = "pre-training iterations"
    figure_title = "Downstream score vs pre-training iterations at 70% sparsity (cf. TAMT figures 6, 7)"
    opt_in = True

    def points(self, recipes, tasks, seeds, sparsities):
        """Each mask at tamt.iteration_sparsity (group "") and at each other of tamt.iteration_sparsities
        (group "<s> sparsity": figures 14-16): a TAMT run stopped after 0 steps (its initial mask) and
        after each of tamt.iteration_steps, from OMP or random; IMP pruning every tamt.imp_intervals
        steps, at its level s), fine-tuned on each task and seed; and figure 8's IMP masks at
        tamt.distance_imp_intervals, probed on the corpus only."""
        tamt = recipes.p.tamt
        chosen = [tamt.iteration_sparsity] + [s for s in tamt.iteration_sparsities  # IMP's levels end at imp_target
                                              if abs(s - tamt.iteration_sparsity) > 1e-9 and s <= tamt.imp_target + 1e-9]
        points = []
        for s in chosen:
            group = "" if s == tamt.iteration_sparsity else f"{s:.0%} sparsity"
            masks = []
            for seed in seeds:
                for o in OBJECTIVES:
                    masks += [(SERIES[o] + suffix, n, recipes.tamt(o, s, seed, init, steps=n), None)
                              for n in (0, *tamt.iteration_steps) for suffix, init in (("", "hard"), (RANDOM, "random"))]
                for interval in tamt.imp_intervals:
                    imp = recipes.tamt_imp(seed, interval)
                    masks.append(("IMP", imp_iterations(recipes, imp, s), imp, s))
                for interval in [n for n in tamt.distance_imp_intervals if n not in tamt.imp_intervals]:
                    imp = recipes.tamt_imp(seed, interval)  # figure 8 only: its mask, probed on the corpus
                    points.append(Point("IMP", PROBE_TASK, seed, imp_iterations(recipes, imp, s),
                                        recipes.probe(imp, s), group=group))
            for task in tasks:
                for ft in tamt.finetune_seeds:
                    if not group:
                        points.append(Point(FULL, task, ft, 0.0, recipes.full(task, "std", ft), reference=True))
                    points += [Point(series, task, ft, n, recipes.transfer(task, mask, ft, level), group=group)
                               for series, n, mask, level in masks]
        return points

    def figure(self, page):
        """Figures 6 and 7 at tamt.iteration_sparsity, then figures 14-16's other sparsities (the full
        model beside each)."""
        frame, full = page.frame, page.frame[page.frame.series == FULL]
        distance = distance_figure(page, page.params.tamt.iteration_sparsity)
        return [score_figure(page, self.figure_title if not group else
                             f"Downstream score vs pre-training iterations at {group} (cf. TAMT figures 14-16)",
                             "pre-training iterations",
                             frame[frame.group == group] if not group else pd.concat([frame[frame.group == group], full]))
                for group in dict.fromkeys(frame.group)] + ([distance] if distance is not None else [])

    def table(self, page):
        index = ("group", "task", "series", "x") if page.frame.group.nunique() > 1 else ("task", "series", "x")
        frame = page.frame[page.frame.task != PROBE_TASK] if not page.frame.empty else page.frame
        return plots.table(scores_only(frame), index=index)

    def judge(self, page) -> list[Verdict]:
        """Sections 4.2.3 and 4.2.4's claims at tamt.iteration_sparsity (figures 6 and 7)."""
        frame = page.frame[page.frame.group == ""] if not page.frame.empty else page.frame
        runs = runs_behind(frame) if not frame.empty else pd.Series(dtype=int)
        return [v for o in OBJECTIVES for v in (fewer_iterations(frame, SERIES[o], runs), omp_init(frame, SERIES[o], runs))]


def _series(scores: pd.Series, series: str) -> pd.Series:
    """x -> mean score of one series (finished points only)."""
    if scores.empty or series not in scores.index.get_level_values(0):
        return pd.Series(dtype=float)
    return scores.xs(series).dropna().sort_index()


def _reached(df: pd.DataFrame, series: str):
    """(IMP's iterations at its best mean score, that score, the fewest iterations at which `series`
    reaches it (None: never), `series`' curve); None where either curve is missing or is one point
    (another page's run at one iteration count: no pace to read)."""
    scores = overall(df)
    imp, tamt = _series(scores, "IMP"), _series(scores, series)
    if len(imp) < 2 or len(tamt) < 2:
        return None
    reached = tamt[(tamt >= imp.max()) & (tamt.index > 0)]  # a search, not its initial mask
    return imp.idxmax(), imp.max(), (reached.index.min() if not reached.empty else None), tamt


def _saved(df: pd.DataFrame, series: str) -> float | None:
    """The share of IMP's iterations `series` saves reaching IMP's best (FEWER's margin)."""
    found = _reached(df, series)
    return None if found is None or found[2] is None else float(1 - found[2] / found[0])


def fewer_iterations(df: pd.DataFrame, series: str, runs: pd.Series) -> Verdict:
    """Section 4.2.3: TAMT reaches IMP's best mean score in fewer iterations (the paper: 8.4x); the
    margin is the share of IMP's iterations it saves."""
    subject = f"mean over tasks, {series} vs IMP"
    found = _reached(df, series)
    if found is None:
        return FEWER.unmeasurable("all", subject, "runs missing: IMP's and its curve need two iteration counts or more")
    best_at, best, at, tamt = found
    measured = f"IMP's best {pct(best)} after {best_at:g} iterations"
    if at is None:
        return FEWER.judged("all", subject, False, None, values={"imp best": best},
                            measured=measured + f"; {series} never reaches it (its best {pct(tamt.max())})",
                            seeds=fewest(runs, [("IMP", best_at), (series, tamt.idxmax())]))
    margin = _saved(df, series)
    return FEWER.judged("all", subject, at < best_at, margin,
                        values={"imp best": best, "imp iterations": best_at, "tamt iterations": at},
                        measured=measured + f"; {series} reaches it after {at:g} ({best_at / at:.1f}x fewer)",
                        seeds=fewest(runs, [("IMP", best_at), (series, at)]),
                        seed_margins=seed_margins(df, lambda rows: _saved(rows, series)))


def _last(df: pd.DataFrame, series: str):
    """(the most iterations both curves reach, OMP's score there, random's), or None."""
    scores = overall(df)
    omp, rand = _series(scores, series), _series(scores, series + RANDOM)
    if omp.empty or rand.empty or omp.index.max() != rand.index.max():
        return None
    last = omp.index.max()
    return last, float(omp[last]), float(rand[last])


def omp_init(df: pd.DataFrame, series: str, runs: pd.Series) -> Verdict:
    """Section 4.2.4: from the OMP mask TAMT ends higher than from a random mask."""
    subject = f"mean over tasks, {series}: OMP vs random mask initialisation"
    found = _last(df, series)
    if found is None:
        return OMP_INIT.unmeasurable("all", subject)
    last, omp, rand = found

    def margin_of(rows):
        there = _last(rows, series)
        return None if there is None else there[1] - there[2] - GAIN

    scores = overall_scores(df)  # with their stored predictions' noise
    margin = scores.get((series, last), omp) - scores.get((series + RANDOM, last), rand) - GAIN
    return OMP_INIT.judged("all", subject, margin > 0, margin, values={"omp init": omp, "random init": rand},
                           measured=f"after {last:g} iterations: from OMP {pct(omp)}, from random {pct(rand)}",
                           seeds=fewest(runs, [(series, last), (series + RANDOM, last)]),
                           seed_margins=seed_margins(df, margin_of))


SECTION = Iterations()
