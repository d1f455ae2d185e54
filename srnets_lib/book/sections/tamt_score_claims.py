"""Part II's claims on downstream scores: TAMT's subnetworks transfer better than magnitude
pruning's (TAMT section 4.2.1), reach IMP's best score after fewer pre-training iterations
(4.2.3), and search better from the OMP mask than from a random one (4.2.4)."""

from __future__ import annotations

import pandas as pd

from srnets_lib.book.sections.claims import GAIN, Claim
from srnets_lib.book.sections.tamt import (MAGNITUDE, RANDOM, SERIES, fewest, overall, overall_scores, runs_behind,
                                           seed_margins)
from srnets_lib.book.verdicts.verdict import Statement, Verdict, pct

ABOVE = Statement("tamt-above-magnitude", "'TAMT finds subnetworks that transfer better than magnitude pruning'",
                  "at 60-90% sparsity, mean score over tasks > OMP's + GAIN and > IMP's + GAIN", {"GAIN": GAIN})


CLAIMED = (0.6, 0.9)  # TAMT section 4.2.1: an advantage over IMP "across 60%~90% sparsity"


class AboveMagnitude(Claim):
    """TAMT sections 4.2.1 and 5: at each sparsity of the range the paper claims (CLAIMED), each
    objective's mean score over the tasks is above OMP's and IMP's (by more than GAIN)."""

    def evaluate(self, df, tasks=None) -> list[Verdict]:
        scores, runs = overall_scores(df), runs_behind(df) if not df.empty else pd.Series(dtype=int)
        objectives = [s for s in SERIES.values() if s in set(df.series)] or list(SERIES.values())
        xs = sorted({x for (series, x) in scores if series in objectives
                     and CLAIMED[0] - 1e-9 <= x <= CLAIMED[1] + 1e-9})
        return [self._at(df, scores, series, x, fewest(runs, [(s, x) for s in (series, *MAGNITUDE)]))
                for series in objectives for x in xs]

    @staticmethod
    def _values(scores: dict, series: str, x: float) -> dict | None:
        values = {name: scores.get((name, x)) for name in (series, *MAGNITUDE)}
        return None if any(v is None for v in values.values()) else values

    @classmethod
    def _parts(cls, scores: dict, series: str, x: float) -> dict | None:
        """The rule's parts: the series' mean score over tasks above each magnitude baseline's + GAIN."""
        values = cls._values(scores, series, x)
        return None if values is None else {f"above {m}": values[series] - values[m] - GAIN for m in MAGNITUDE}

    @classmethod
    def _at(cls, df: pd.DataFrame, scores: dict, series: str, x: float, seeds: int) -> Verdict:
        subject = f"mean over tasks, {series} at sparsity {x:g}"
        values = cls._values(scores, series, x)
        if values is None:
            return ABOVE.unmeasurable("all", subject)
        parts = cls._parts(scores, series, x)
        measured = f"{series} {pct(values[series])}, " + ", ".join(f"{m} {pct(values[m])}" for m in MAGNITUDE)
        each = [cls._parts(overall_scores(df[df.seed == s]), series, x) for s in sorted(set(df.seed))]
        return ABOVE.judged("all", subject, min(parts.values()) > 0, parts,
                            values={k: float(v) for k, v in values.items()}, measured=measured, seeds=seeds,
                            seed_margins=tuple(None if p is None else min(p.values()) for p in each) if len(each) > 1
                            else (), seed_parts=tuple(each) if len(each) > 1 else ())


FEWER = Statement("tamt-fewer-iterations", "'TAMT reaches IMP's best score with fewer iterations' (8.4x fewer)",
                  "the fewest iterations at which TAMT's mean score >= IMP's best < the iterations of IMP's best "
                  "(margin: the share of IMP's iterations saved)", unit="share",
                  words="TAMT reaches IMP's best mean score after fewer pre-training iterations than IMP took to reach "
                        "it (the margin: the share of IMP's iterations saved)")


OMP_INIT = Statement("tamt-omp-init", "'OMP initialisation beats random initialisation'",
                     "at the most iterations, mean score from the OMP mask > from a random mask + GAIN", {"GAIN": GAIN},
                     words="after the most iterations, the search from the OMP mask beats the same search from a "
                           "random mask by more than {GAIN}")


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
