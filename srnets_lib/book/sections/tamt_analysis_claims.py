"""Part II's claims on the analyses (tamt_analyses.py's table): the held-out pre-training loss
correlates with the downstream score, each objective's own loss is lowest (TAMT section 4.2.2),
and KD's masks stay nearer the OMP mask than MLM's (4.2.5)."""

from __future__ import annotations

import pandas as pd

from srnets_lib.book.sections.tamt import SERIES
from srnets_lib.book.sections.tamt_analyses import LOSSES
from srnets_lib.book.verdicts.verdict import Statement, Verdict

RANK = -0.5  # a "clear" rank correlation between loss and score: fixed before any result


CORRELATES = Statement("tamt-loss-correlates", "'the pre-training performance correlates with the downstream "
                       "transferability'", "Spearman rank correlation of held-out loss and mean score <= RANK",
                       {"RANK": RANK}, unit="rho")


OWN_LOWEST = Statement("tamt-own-loss-lowest", "'TAMT-MLM and TAMT-KD have the lowest MLM and KD loss'",
                       "its objective's held-out loss below every other method's (TAMT-MLM+KD aside)", unit="loss")


KD_CLOSER = Statement("tamt-kd-near-omp", "'KD masks stay close to the OMP init, MLM masks deviate from it'",
                      "TAMT-KD's distance to the OMP mask (a share of the weights) < TAMT-MLM's", unit="share")


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
