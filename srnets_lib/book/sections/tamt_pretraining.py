"""TAMT figures 1, 5 and 8: each task-agnostic subnetwork's held-out pre-training losses (MLM and
KD, with the pre-trained MLM head, as the authors' eval_mlm.py and eval_kd.py) against its mean
downstream score, and its mask's distance to the OMP mask (1 - Jaccard similarity, section 4.2.5)."""

from __future__ import annotations

import pandas as pd

from srnets_lib.book import columns, plots
from srnets_lib.model import pruning
from srnets_lib.store.runs import Run
from srnets_lib.book.sections.base import Point
from srnets_lib.book.sections.tamt import FULL, PROBE_TASK, SERIES, TamtSection, mean_over_tasks, runs_behind, subnetworks
from srnets_lib.book.sections.tamt_transfer import SECTION as TRANSFER
from srnets_lib.book.sections.verdict import Statement, Verdict, with_seed_margins

RANK = -0.5  # a "clear" rank correlation between loss and score: fixed before any result
LOSSES = ("mlm_loss", "kd_loss")
CORRELATES = Statement("tamt-loss-correlates", "'the pre-training performance correlates with the downstream "
                       "transferability'", "Spearman rank correlation of held-out loss and mean score <= RANK",
                       {"RANK": RANK}, unit="rho")
OWN_LOWEST = Statement("tamt-own-loss-lowest", "'TAMT-MLM and TAMT-KD have the lowest MLM and KD loss'",
                       "its objective's held-out loss below every other method's (TAMT-MLM+KD aside)", unit="nats")
KD_CLOSER = Statement("tamt-kd-near-omp", "'KD masks stay close to the OMP init, MLM masks deviate from it'",
                      "TAMT-KD's distance to the OMP mask (a share of the weights) < TAMT-MLM's", unit="share")


def analysis(page, seed: int | None = None, masks: pd.DataFrame | None = None) -> pd.DataFrame:
    """Per series and sparsity: mean held-out MLM and KD loss, mean downstream score over tasks,
    mean distance of the mask to the OMP mask at that sparsity, and the fewest finished runs
    behind one of those values (`runs`: the probes on the corpus, the transfers on one task); of
    one seed's runs alone with `seed` (verdict.with_seed_margins); `masks`: distances(page), if at hand."""
    df = page.frame if seed is None else page.frame[page.frame.seed == seed]
    masks = distances(page) if masks is None else masks
    masks = masks if seed is None else masks[masks.seed == seed]
    corpus = df[df.task == PROBE_TASK]
    losses = corpus.groupby(["series", "x"])[[columns.score(k) for k in LOSSES if columns.score(k) in corpus]].mean()
    losses.columns = [columns.name(c) for c in losses.columns]
    scores = mean_over_tasks(df[df.series != FULL]).set_index(["series", "x"])
    runs = pd.concat([corpus.groupby(["series", "x"]).size(), runs_behind(df[df.series != FULL])], axis=1).min(axis=1)
    distance = masks.groupby(["series", "x"])["distance to OMP"].mean()
    table = losses.join(scores, how="outer").join(distance, how="left").join(runs.rename("runs").astype("Int64"), how="left")
    return table.reset_index()


def distances(page) -> pd.DataFrame:
    """Per mask (series, sparsity, mask seed) of a finished run: 1 - Jaccard to the OMP mask of the
    same sparsity (OMP has one mask: its first seed's)."""
    masks = {}
    for p in page.points:
        if p.task != PROBE_TASK:
            continue
        source, level = (p.config.mask_from, p.config.mask_level) if p.config.mask_from else (p.config, None)
        run = Run(source)
        if run.served():  # finished, its masks whole
            masks[(p.series, p.x, p.seed)] = run.masks(level)
    omp = {x: m for (series, x, _), m in masks.items() if series == "OMP"}
    rows = [(series, x, seed, 1 - pruning.jaccard(m, omp[x])) for (series, x, seed), m in masks.items() if x in omp]
    return pd.DataFrame(rows, columns=["series", "x", "seed", "distance to OMP"]).astype({"distance to OMP": float})


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


class PretrainingLoss(TamtSection):
    name, number, title = "tamt_pretraining", "TAMT 4.2.2, 4.2.5", "Pre-training loss, transfer and mask distance"
    reproduces = "TAMT figures 1, 5 and 8"
    figure_title = "Held-out pre-training loss vs mean downstream score (cf. TAMT figures 1, 5)"

    def points(self, recipes, tasks, seeds, sparsities):
        """Each subnetwork on the corpus (OMP and random runs score their losses themselves; TAMT's
        masks and IMP's levels are probed with the pre-trained MLM head), then the transfer page's
        points of the same backbone (figures 1, 5 and 8 are BERT's)."""
        probes = [Point(n.series, PROBE_TASK, n.seed, n.sparsity,
                        n.run if n.series in ("OMP", "Rand") else recipes.probe(n.run, n.level))
                  for n in subnetworks(recipes, seeds, sparsities)]
        return probes + TRANSFER.of_backbone(recipes, tasks, seeds, sparsities)

    def judge(self, page) -> list[Verdict]:
        """Figures 1/5 and 8's claims, judged on the analysis table of the page's subnetworks, and
        on each seed's alone."""
        def judged(table):
            return loss_correlates(table) + own_loss_lowest(table) + kd_closer(table)

        masks = distances(page)
        seeds = sorted(set(page.frame.seed)) if not page.frame.empty else []
        return with_seed_margins(judged(analysis(page, masks=masks)),
                                 [judged(analysis(page, s, masks)) for s in seeds])

    def figure(self, page):
        plt, sns = plots.pyplot(), plots.seaborn()
        table = analysis(page)
        fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
        for ax, loss in zip(axes, LOSSES):
            if loss in table:
                sns.scatterplot(data=table, x=loss, y="score", hue="series", size="x", ax=ax, legend=ax is axes[0])
            ax.set_title(f"held-out {loss.replace('_', ' ')} vs mean score" + (" (synthetic)" if page.synthetic else ""))
        if "distance to OMP" in table:
            sns.barplot(data=table[table.series != "OMP"], x="x", y="distance to OMP", hue="series", ax=axes[2])
        axes[2].set_title("mask distance to OMP (cf. TAMT figure 8)")
        fig.suptitle(self.figure_title)
        fig.tight_layout()
        plt.close(fig)
        return [fig]

    def table(self, page):
        return analysis(page).round(3).set_index(["series", "x"])


SECTION = PretrainingLoss()
