"""TAMT figures 1, 5, 12 and 13, and figure 8's masks at the end of their search: each task-agnostic
subnetwork's held-out pre-training losses (MLM and KD, with the pre-trained MLM head, as the authors'
eval_mlm.py and eval_kd.py; the KD loss as the run's kd_eval_loss measures it) against its downstream
score, and its mask's distance to the OMP mask (1 - Jaccard similarity, section 4.2.5).

Figure 1: OMP and random subnetworks against sparsity. Figure 5 (section 4.2.2): every subnetwork's
loss against its mean score over tamt.figure_tasks (the paper's CoLA, SST-2, MNLI, STS-B and SQuAD);
with make book-full also TAMT's masks along training (tamt.iteration_steps at
tamt.trajectory_sparsities, as shell_scripts/eval_{mlm,kd}/tamt_*.sh evaluate them), each one a
trajectory. Figures 12 and 13: the same per task. The verdicts read the default build's points only
(the scorecard's)."""

from __future__ import annotations

import pandas as pd

from srnets_lib.book import columns, plots
from srnets_lib.model import pruning
from srnets_lib.store.runs import Run
from srnets_lib.book.sections.base import Point
from srnets_lib.book.sections.tamt import (FULL, PROBE_TASK, SERIES, TamtSection, draw, judged_rows,
                                           mean_over_tasks, per_seed_means, subnetworks)
from srnets_lib.book.sections.tamt_transfer import SECTION as TRANSFER
from srnets_lib.book.sections.verdict import Statement, Verdict, with_seed_margins

RANK = -0.5  # a "clear" rank correlation between loss and score: fixed before any result
LOSSES = ("mlm_loss", "kd_loss")
CORRELATES = Statement("tamt-loss-correlates", "'the pre-training performance correlates with the downstream "
                       "transferability'", "Spearman rank correlation of held-out loss and mean score <= RANK",
                       {"RANK": RANK}, unit="rho")
OWN_LOWEST = Statement("tamt-own-loss-lowest", "'TAMT-MLM and TAMT-KD have the lowest MLM and KD loss'",
                       "its objective's held-out loss below every other method's (TAMT-MLM+KD aside)", unit="loss")
KD_CLOSER = Statement("tamt-kd-near-omp", "'KD masks stay close to the OMP init, MLM masks deviate from it'",
                      "TAMT-KD's distance to the OMP mask (a share of the weights) < TAMT-MLM's", unit="share")
TRAJECTORY = " iterations"  # a trajectory point's group: "<steps> iterations" (the default masks' group is "")


def analysis(page, seed: int | None = None, masks: pd.DataFrame | None = None, frame: pd.DataFrame | None = None,
             tasks=None) -> pd.DataFrame:
    """Per series, sparsity and group (a trajectory's steps): mean held-out MLM and KD loss, mean
    downstream score over `tasks` (None: tamt.figure_tasks), mean distance of the mask to the OMP mask
    at that sparsity, and the fewest finished runs behind one of those values (`runs`: the probes on
    the corpus, the transfers on one task); of `frame` (None: the page's), of one seed's runs alone
    with `seed`; `masks`: distances(page), if at hand."""
    df = page.frame if frame is None else frame
    df = df if seed is None else df[df.seed == seed]
    masks = distances(page) if masks is None else masks
    masks = masks if seed is None else masks[masks.seed == seed]
    tasks = tasks or [t for t in page.section.tasks(page.params) if t in set(df.task)] or None
    keys = ["series", "x", "group"]
    corpus = df[df.task == PROBE_TASK]
    losses = corpus.groupby(keys)[[columns.score(k) for k in LOSSES if columns.score(k) in corpus]].mean()
    losses.columns = [columns.name(c) for c in losses.columns]
    subnets = df[(df.series != FULL) & (df.task != PROBE_TASK)]
    scores = pd.concat([mean_over_tasks(rows, tasks).assign(group=g) for g, rows in subnets.groupby("group")]
                       ) if not subnets.empty else pd.DataFrame(columns=[*keys, "score"])
    transfers = subnets.groupby([*keys, "task"]).id.count().groupby(keys).min()
    runs = pd.concat([corpus.groupby(keys).size(), transfers], axis=1).min(axis=1)
    table = losses.join(scores.set_index(keys), how="outer").join(runs.rename("runs").astype("Int64"), how="left")
    table = table.reset_index()
    distance = masks.groupby(["series", "x"])["distance to OMP"].mean()
    table["distance to OMP"] = [distance.get((s, x)) if g == "" else None for s, x, g in zip(table.series, table.x, table.group)]
    return table.astype({"distance to OMP": float})


def finished_masks(page) -> dict:
    """(series, sparsity, mask seed) -> the mask of each probed subnetwork of the page's default points
    whose run is finished."""
    masks = {}
    for p in page.points:
        if p.task != PROBE_TASK:
            continue
        source, level = (p.config.mask_from, p.config.mask_level) if p.config.mask_from else (p.config, None)
        run = Run(source)
        if run.served():  # finished, its masks whole
            masks[(p.series, p.x, p.seed)] = run.masks(level)
    return masks


def distances(page) -> pd.DataFrame:
    """Per mask of the default points (series, sparsity, mask seed) of a finished run: 1 - Jaccard to the
    OMP mask of the same sparsity (OMP has one mask: its first seed's)."""
    masks = finished_masks(page)
    omp = {x: m for (series, x, _), m in masks.items() if series == "OMP"}
    rows = [(series, x, seed, 1 - pruning.jaccard(m, omp[x])) for (series, x, seed), m in masks.items() if x in omp]
    return pd.DataFrame(rows, columns=["series", "x", "seed", "distance to OMP"]).astype({"distance to OMP": float})



COMPARED = ("OMP", "TAMT-KD", "TAMT-MLM", "IMP")  # mask_training/compare_mask.py's (TAMT figure 17)


def similarities(page) -> pd.DataFrame:
    """TAMT figure 17 (appendix A.5; mask_training/compare_mask.py): per sparsity and pair of COMPARED
    methods, the mean Jaccard similarity over every pair of their finished masks (mask seeds; a mask
    never with itself)."""
    masks = finished_masks(page)
    rows = []
    for x in sorted({x for (_, x, _) in masks}):
        of = {name: [m for (series, at, _), m in masks.items() if series == name and at == x] for name in COMPARED}
        for a in COMPARED:
            for b in COMPARED:
                pairs = [(m, n) for i, m in enumerate(of[a]) for j, n in enumerate(of[b]) if a != b or i < j]
                value = sum(pruning.jaccard(m, n) for m, n in pairs) / len(pairs) if pairs else (1.0 if of[a] else None)
                rows.append((x, a, b, value))
    return pd.DataFrame(rows, columns=["x", "a", "b", "similarity"]).astype({"similarity": float})


def similarity_figure(page):
    """Figure 17: one heat map per sparsity of the methods' pairwise mask similarity."""
    plt = plots.pyplot()
    table = similarities(page)
    xs = sorted(set(table.x)) or [None]
    fig, axes = plt.subplots(1, len(xs), figsize=(3.4 * len(xs), 3.2), squeeze=False)
    for ax, x in zip(axes[0], xs):
        grid = table[table.x == x].pivot(index="a", columns="b", values="similarity").reindex(
            index=list(COMPARED), columns=list(COMPARED)) if x is not None else None
        if grid is not None:
            ax.imshow(grid.to_numpy(dtype=float), vmin=0, vmax=1, cmap="viridis")
            for i in range(len(COMPARED)):
                for j in range(len(COMPARED)):
                    value = grid.iat[i, j]
                    ax.text(j, i, "" if pd.isna(value) else f"{value:.2f}", ha="center", va="center", fontsize=7, color="w")
            ax.set_title(f"{x:.0%} sparsity", fontsize=10)
        ax.set_xticks(range(len(COMPARED)), COMPARED, rotation=35, ha="right", fontsize=8)
        ax.set_yticks(range(len(COMPARED)), COMPARED, fontsize=8)
    fig.suptitle("Pairwise Jaccard similarity of the masks (cf. TAMT figure 17)" + (" (synthetic)" if page.synthetic else ""))
    fig.tight_layout()
    plt.close(fig)
    return fig

def loss_correlates(table: pd.DataFrame) -> list[Verdict]:
    """Section 4.2.2: across the subnetworks, a lower held-out pre-training loss goes with a higher
    mean downstream score (per loss: MLM, KD)."""
    verdicts = []
    for loss in LOSSES:
        subject = f"{loss.replace('_', ' ')} vs mean score over tasks"
        rows = table.dropna(subset=[loss, "score"]) if loss in table else table.iloc[0:0]
        if len(rows) < 4:
            verdicts.append(_verdict(CORRELATES, subject, None, reason=f"{len(rows)} subnetworks with both values (4 needed)"))
            continue
        rho = float(rows[loss].rank().corr(rows["score"].rank()))
        verdicts.append(_verdict(CORRELATES, subject, rho <= RANK, RANK - rho, {"spearman": rho, "subnetworks": len(rows)},
                                 f"Spearman {rho:+.2f} over {len(rows)} subnetworks", seeds=_runs(rows)))
    return verdicts


def own_loss_lowest(table: pd.DataFrame) -> list[Verdict]:
    """Section 4.2.2: TAMT-MLM has the lowest MLM loss, TAMT-KD the lowest KD loss, at each sparsity
    (among TAMT-MLM, TAMT-KD, IMP, OMP and Rand)."""
    verdicts = []
    for series, loss in ((SERIES["mlm"], "mlm_loss"), (SERIES["kd"], "kd_loss")):
        for x in sorted(set(table.x[table.series == series])):
            rows = table[(table.x == x) & (table.series != SERIES["mlm+kd"])]
            at = rows.set_index("series")[loss].dropna() if loss in rows else pd.Series(dtype=float)
            subject = f"{loss.replace('_', ' ')} at sparsity {x:g}"
            if series not in at or len(at) < 2:
                verdicts.append(_verdict(OWN_LOWEST, subject, None, reason="runs missing"))
                continue
            others = at.drop(series)
            margin = float(others.min() - at[series])
            verdicts.append(_verdict(OWN_LOWEST, subject, margin > 0, margin, dict(at),
                                     f"{series} {at[series]:.3f}; lowest other {others.idxmin()} {others.min():.3f}",
                                     seeds=_runs(rows[rows.series.isin([series, others.idxmin()])])))
    return verdicts


def kd_closer(table: pd.DataFrame) -> list[Verdict]:
    """Section 4.2.5 (figure 8): TAMT-KD's masks are nearer the OMP mask than TAMT-MLM's."""
    column = "distance to OMP"
    found = table.set_index(["series", "x"])[column].dropna() if column in table else pd.Series(dtype=float)
    verdicts = []
    for x in sorted(set(table.x[table.series == SERIES["kd"]])):
        kd, mlm = found.get((SERIES["kd"], x)), found.get((SERIES["mlm"], x))
        subject = f"mask distance to OMP at sparsity {x:g}"
        if kd is None or mlm is None:
            verdicts.append(_verdict(KD_CLOSER, subject, None, reason="runs missing"))
            continue
        verdicts.append(_verdict(KD_CLOSER, subject, kd < mlm, float(mlm - kd), {"TAMT-KD": kd, "TAMT-MLM": mlm},
                                 f"TAMT-KD {kd:.3f}, TAMT-MLM {mlm:.3f}",
                                 seeds=_runs(table[(table.x == x) & table.series.isin([SERIES["kd"], SERIES["mlm"]])])))
    return verdicts


def _verdict(statement: Statement, subject: str, holds, margin=None, values=None, measured="", reason="",
             seeds=0) -> Verdict:
    return statement.judged("all", subject, holds, margin, values=values or {}, measured=measured, seeds=seeds,
                            reason=reason)


def _runs(rows: pd.DataFrame) -> int:
    """The fewest runs behind the analysis rows a verdict reads."""
    return int(rows.runs.min()) if "runs" in rows and rows.runs.notna().any() else 0


def distance_figure(page):
    """Figure 8 at the end of the searches: each method's mask distance to the OMP mask of its
    sparsity (mean ± sd over mask seeds); the iterations page draws it along the searches."""
    plt = plots.pyplot()
    masks = distances(page)
    masks = masks[masks.series != "OMP"]
    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    if not masks.empty:
        names = list(dict.fromkeys(masks.series))
        palette = plots.palette_of(names)
        xs = sorted(set(masks.x))
        width = 0.8 / len(names)
        for i, name in enumerate(names):
            stats = masks[masks.series == name].groupby("x")["distance to OMP"].agg(["mean", "std"]).reindex(xs)
            ax.bar([k + i * width for k in range(len(xs))], stats["mean"], width, yerr=stats["std"].fillna(0),
                   capsize=2, color=palette[name], label=name)
        ax.set_xticks([k + width * (len(names) - 1) / 2 for k in range(len(xs))], [f"{x:g}" for x in xs])
        ax.legend(fontsize=8)
    ax.set_xlabel("sparsity")
    ax.set_ylabel("1 - Jaccard to the OMP mask")
    fig.suptitle("Mask distance to OMP, masks at the end of their search (cf. TAMT figure 8)")
    fig.tight_layout()
    plt.close(fig)
    return fig


class PretrainingLoss(TamtSection):
    name, number, title = "tamt_pretraining", "TAMT 4.2.2, 4.2.5, A.1, A.3", "Pre-training loss, transfer and mask distance"
    reproduces = "TAMT figures 1, 5, 12, 13 and 17 (and figure 8's final masks)"
    figure_title = "Held-out pre-training loss vs mean downstream score (cf. TAMT figure 5)"

    def points(self, recipes, tasks, seeds, sparsities):
        """Each subnetwork on the corpus (OMP and random runs score their losses themselves; TAMT's
        masks and IMP's levels are probed with the pre-trained MLM head), then the transfer page's
        points of the same backbone (figures 1, 5 and 8 are BERT's)."""
        probes = [Point(n.series, PROBE_TASK, n.seed, n.sparsity,
                        n.run if n.series in ("OMP", "Rand") else recipes.probe(n.run, n.level))
                  for n in subnetworks(recipes, seeds, sparsities)]
        return probes + TRANSFER.of_backbone(recipes, tasks, seeds, sparsities)

    def opt_in_points(self, recipes, tasks, seeds, sparsities):
        """Figure 5's trajectories (make book-full): TAMT-MLM's and TAMT-KD's masks after each of
        tamt.iteration_steps at each of tamt.trajectory_sparsities, probed and fine-tuned on the figure's
        tasks (group "<steps> iterations"); IMP, OMP and Rand at those sparsities where the default
        points lack them."""
        tamt, figure = recipes.p.tamt, self.figure_tasks_of(recipes.p)
        extra = [s for s in tamt.trajectory_sparsities  # IMP's levels end at tamt.imp_target
                 if not any(abs(s - x) < 1e-9 for x in sparsities) and s <= tamt.imp_target + 1e-9]
        points = []
        for n in subnetworks(recipes, seeds, extra, asked=True) if extra else []:
            if n.series in ("IMP", "OMP", "Rand"):
                probe = n.run if n.series in ("OMP", "Rand") else recipes.probe(n.run, n.level)
                points.append(Point(n.series, PROBE_TASK, n.seed, n.sparsity, probe))
                points += [Point(n.series, task, ft, n.sparsity, recipes.transfer(task, n.run, ft, n.level))
                           for task in figure for ft in tamt.finetune_seeds]
        for s in tamt.trajectory_sparsities:
            for seed in seeds:
                for objective in ("mlm", "kd"):
                    for steps in tamt.iteration_steps:
                        mask, group = recipes.tamt(objective, s, seed, steps=steps), f"{steps}{TRAJECTORY}"
                        points.append(Point(SERIES[objective], PROBE_TASK, seed, s, recipes.probe(mask), group=group))
                        points += [Point(SERIES[objective], task, ft, s, recipes.transfer(task, mask, ft), group=group)
                                   for task in figure for ft in tamt.finetune_seeds]
        return points

    def figure_tasks_of(self, params) -> list[str]:
        return list(params.tamt.figure_tasks or params.tamt.tasks)

    def judge(self, page) -> list[Verdict]:
        """Figures 1/5 and 8's claims, judged on the analysis table of the page's default points (the
        scorecard's), and on each seed's alone."""
        def judged(table):
            return loss_correlates(table) + own_loss_lowest(table) + kd_closer(table)

        frame, masks = judged_rows(page), distances(page)
        tasks = [t for t in self.figure_tasks_of(page.params) if t in page.tasks] or None
        seeds = sorted(set(frame.seed)) if not frame.empty else []
        return with_seed_margins(judged(analysis(page, masks=masks, frame=frame, tasks=tasks)),
                                 [judged(analysis(page, s, masks, frame, tasks)) for s in seeds])

    def figure(self, page):
        figures = [self.oneshot_figure(page), self.loss_figure(page)]
        return figures + [self.per_task_figure(page), distance_figure(page), similarity_figure(page)]

    def oneshot_figure(self, page):
        """Figure 1: OMP and random subnetworks against sparsity: the mean score over every task (its
        spread over fine-tuning seeds), then each held-out loss (over mask seeds)."""
        plt = plots.pyplot()
        rows = page.frame[page.frame.series.isin(["OMP", "Rand"]) & (page.frame.group == "")]
        fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
        palette = plots.palette_of(["OMP", "Rand"])
        tasks = [t for t in page.tasks if t in set(rows.task)]
        means = per_seed_means(rows, tasks) if tasks else rows.iloc[0:0]
        draw(axes[0], means.assign(id=100 * means.id), rows.iloc[0:0], palette)
        axes[0].set_ylabel(f"mean score over {len(tasks)} tasks (x100)")
        corpus = rows[rows.task == PROBE_TASK]
        for ax, loss in zip(axes[1:], LOSSES):
            column = columns.score(loss)
            draw(ax, corpus.assign(id=corpus[column]) if column in corpus else corpus.iloc[0:0], corpus.iloc[0:0], palette)
            ax.set_ylabel(f"held-out {loss.replace('_', ' ')}")
        xs = sorted(set(rows.x.dropna()))
        for ax in axes:  # one sparsity: bars per series, the sparsity said below them
            ax.set_xlabel("sparsity" if len(xs) != 1 else f"at {xs[0]:.0%} sparsity")
            ax.set_title(ax.get_ylabel() + (" (synthetic)" if page.synthetic else ""), fontsize=10)
        plots.palette_legend(fig, palette, 2, -0.05)
        fig.suptitle("OMP and random subnetworks: downstream and pre-training performance (cf. TAMT figure 1)")
        fig.tight_layout()
        plt.close(fig)
        return fig

    def loss_figure(self, page):
        """Figure 5: every subnetwork's held-out loss against its mean score over the figure's tasks;
        TAMT's masks along training (make book-full) as one line per sparsity, from few to many steps."""
        plt = plots.pyplot()
        table = analysis(page).dropna(subset=["score"])
        fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
        palette = plots.palette_of(list(dict.fromkeys(table.series)))
        for ax, loss in zip(axes, LOSSES):
            rows = table.dropna(subset=[loss]) if loss in table else table.iloc[0:0]
            for (name, x), part in rows.groupby(["series", "x"]):
                trajectory = part[part.group != ""].assign(steps=lambda d: d.group.str.split().str[0].astype(int))
                if len(trajectory) > 1:
                    trajectory = trajectory.sort_values("steps")
                    ax.plot(trajectory[loss], 100 * trajectory.score, "-", color=palette[name], alpha=0.6, lw=1)
                ax.scatter(part[loss], 100 * part.score, color=palette[name], s=20 + 60 * (x - 0.4), alpha=0.8)
            ax.set_xlabel(f"held-out {loss.replace('_', ' ')}")
            ax.set_ylabel("mean score (x100) over " + ", ".join(self.figure_tasks_of(page.params)))
            ax.set_title(f"{loss.replace('_', ' ')} vs mean score" + (" (synthetic)" if page.synthetic else ""), fontsize=10)
        plots.palette_legend(fig, palette, max(1, min(6, len(palette))), -0.04, line=False)
        fig.suptitle(self.figure_title + "; marker size: sparsity; lines: TAMT's masks along training")
        fig.tight_layout()
        plt.close(fig)
        return fig

    def per_task_figure(self, page):
        """Figures 12 and 13: each held-out loss against each task's score (the figure's tasks)."""
        plt = plots.pyplot()
        probes = page.frame[page.frame.task == PROBE_TASK]
        losses = probes.groupby(["series", "x", "group"])[[columns.score(k) for k in LOSSES if columns.score(k) in probes]].mean()
        tasks = [t for t in self.figure_tasks_of(page.params) if t in set(page.frame.task)]
        scores = page.frame[page.frame.task.isin(tasks) & (page.frame.series != FULL)].groupby(
            ["series", "x", "group", "task"]).id.mean().unstack("task")
        table = losses.join(scores, how="inner").reset_index()
        fig, axes = plt.subplots(2, max(1, len(tasks)), figsize=(3.6 * max(1, len(tasks)), 6.4), squeeze=False)
        palette = plots.palette_of(list(dict.fromkeys(table.series)))
        for row, loss in enumerate(LOSSES):
            for ax, task in zip(axes[row], tasks):
                column = columns.score(loss)
                if column in table and task in table:
                    for name, part in table.groupby("series"):
                        ax.scatter(part[column], 100 * part[task], color=palette[name], s=14, label=name)
                ax.set_xlabel(f"held-out {loss.replace('_', ' ')}", fontsize=8)
                ax.set_ylabel("score (x100)", fontsize=8)
                ax.set_title(f"{task}" + (" (synthetic)" if page.synthetic else ""), fontsize=9)
        plots.palette_legend(fig, palette, max(1, min(6, len(palette))), -0.03, line=False)
        fig.suptitle("Held-out MLM (top) and KD (bottom) loss vs each task's score (cf. TAMT figures 12, 13)")
        fig.tight_layout()
        plt.close(fig)
        return fig

    def table(self, page):
        return analysis(page).round(3).set_index(["series", "x", "group"])


SECTION = PretrainingLoss()
