"""Sentences that compare a build's measured values with the paper's claims.

They are computed from the results, never written by hand: a claim is "confirmed", "not
confirmed" or "not measurable" here, with the numbers that decide it. Every threshold below
was fixed before the results it judges were computed, and none is tuned to a result:
  LEARNED      a model below 80% of the std full model's ID has not learned the task
  RETAINED     a sparse subnetwork "keeps" the full model's ID at >= 95% of it (section 4.2)
  GAIN         "improves OOD" means by more than 1 point
  COMPETITIVE  section 4.4's "competitive": >= 90% of the full model's ID (and OOD within 2 points)
  NEARLY_ALL   section 4.5's "nearly 100% OOD": >= 90% OOD
  EARLY        section 5.1's "competitive" start: >= 98% of "ft to end"'s ID, OOD >= its OOD - 2
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from . import paths

SYNTHETIC_NOTE = ("**These results come from synthetic planted-bias data and a small backbone "
                  "(all-MiniLM-L6-v2, a sentence embedder trained on sentence pairs including NLI "
                  "data, truncated to its first layers). They are not the paper's numbers.**")


def banner(params) -> str:
    """What the numbers on a page are: synthetic toy results, a derived params file's, or a
    paper-scale reproduction (never the paper's own published numbers)."""
    data = params.defaults.get("data", {}).get("source", "synthetic")
    if data == "synthetic":
        return SYNTHETIC_NOTE
    if params.name != "paper":
        return (f"**These results come from `{params.source}` ({params.name}: {params.description.strip()}). "
                "They are not the paper's settings and not the paper's numbers.**")
    return ("**These results are this build's reproduction at the paper's settings (`params/paper.yaml`), "
            "computed from the run store; the paper's own figures are not reproduced here.**")


def scope(params, tasks, seeds) -> str:
    """A line for a page whose tasks or seeds are not the preset's (the params file's `sections`)."""
    parts = []
    for what, chosen, preset in (("task", list(tasks), list(params.preset.tasks)),
                                 ("seed", list(seeds), list(params.preset.seeds))):
        if chosen != preset:
            parts.append(f"{what}{'s' if len(chosen) > 1 else ''} {', '.join(map(str, chosen))} "
                         f"(the preset's: {', '.join(map(str, preset))})")
    if not parts:
        return ""
    source = Path(params.source).resolve()
    shown = source.relative_to(paths.PROJECT_ROOT) if source.is_relative_to(paths.PROJECT_ROOT) else source
    return f"\n\nThis page shows {' and '.join(parts)}, as `sections` in `{shown}` chooses."


# A model whose ID score is below this fraction of the std full model's has not learned the task;
# a better OOD score from it is not robustness (a constant predictor scores ~50% on a balanced
# OOD set whatever the bias). Verdicts say so instead of calling it a win.
LEARNED = 0.8
RETAINED = 0.95
GAIN = 0.01
COMPETITIVE = 0.9
NEARLY_ALL = 0.9
EARLY = (0.98, 0.02)
STD = "full bert (std)"


def _values(df, task, series, column, x=None) -> pd.Series:
    """One value per seed of a series' column (at x, if given)."""
    sub = df[(df.task == task) & (df.series == series)]
    if x is not None:
        sub = sub[(sub.x - x).abs() < 1e-9]
    return sub[column].dropna()


def _mean(df, task, series, column, x=None):
    values = _values(df, task, series, column, x)
    return None if values.empty else float(values.mean())


def _spread(df, task, series, column, x=None) -> float:
    """The seeds' standard deviation, as the tables print it after ± (ddof 0; 0 for one seed)."""
    values = _values(df, task, series, column, x)
    return float(values.std(ddof=0)) if len(values) > 1 else 0.0


def _ood_column(df, task) -> str | None:
    cols = [c for c in df.columns if c.startswith("ood:") and df[df.task == task][c].notna().any()]
    return cols[0] if cols else None


def _pct(v) -> str:
    return "n/a" if v is None else f"{100 * v:.1f}"


def full_models(df: pd.DataFrame) -> str:
    """(a) the std model's ID-OOD gap; (b) poe vs std on OOD, per task."""
    lines = []
    for task in dict.fromkeys(df.task):
        ood = _ood_column(df, task)
        std_id, std_ood = _mean(df, task, STD, "id"), _mean(df, task, STD, ood)
        poe_id, poe_ood = _mean(df, task, "full bert (poe)", "id"), _mean(df, task, "full bert (poe)", ood)
        if None in (std_id, std_ood):
            lines.append(f"- {task}: not measurable (no finished full models).")
            continue
        gap = std_id - std_ood
        text = (f"- {task}: std full model ID {_pct(std_id)} vs OOD {_pct(std_ood)} ({ood[4:]}): gap "
                f"{100 * gap:+.1f} points, so the planted bias {'is' if gap > 0.05 else 'is NOT clearly'} "
                "exploited by standard fine-tuning.")
        if poe_ood is not None:
            if poe_id < LEARNED * std_id:
                verdict = (f"not confirmed: the PoE model did not learn the task (ID below {LEARNED:.0%} of "
                           "the std model's), so its OOD score is that of a near-constant predictor")
            else:
                verdict = "confirmed" if poe_ood > std_ood + GAIN else "not confirmed"
            text += (f" PoE full model: ID {_pct(poe_id)}, OOD {_pct(poe_ood)}: the paper's 'PoE improves "
                     f"OOD' is **{verdict}** here.")
        lines.append(text)
    return "\n".join(lines)


def subnetworks_vs_full(df: pd.DataFrame, series: str, reference: str = STD,
                        xs=(0.5, 0.7)) -> str:
    """(c) a subnetwork series vs the full model: ID retained, OOD gained? A reference that did
    not learn the task (a collapsed PoE full model) is replaced by the std full model."""
    lines = []
    for task in dict.fromkeys(df.task):
        ood = _ood_column(df, task)
        name = reference
        ref_id, ref_ood = _mean(df, task, reference, "id"), _mean(df, task, reference, ood)
        std_id, std_ood = _mean(df, task, STD, "id"), _mean(df, task, STD, ood)
        if reference != STD and None not in (ref_id, std_id) and ref_id < LEARNED * std_id:
            lines.append(f"- {task}: {reference} did not learn the task (ID {_pct(ref_id)}, below "
                         f"{LEARNED:.0%} of {STD}'s {_pct(std_id)}), so {series} is compared with {STD}.")
            name, ref_id, ref_ood = STD, std_id, std_ood
        for x in xs:
            sub_id, sub_ood = _mean(df, task, series, "id", x), _mean(df, task, series, ood, x)
            if None in (ref_id, ref_ood, sub_id, sub_ood):
                lines.append(f"- {task}, {series} at {x}: not measurable (runs missing).")
                continue
            retained = sub_id / ref_id if ref_id else float("nan")
            gained = sub_ood - ref_ood
            srnet = retained >= RETAINED and gained > GAIN
            lines.append(f"- {task}, {series} at sparsity {x}: ID {_pct(sub_id)} ({100 * retained:.0f}% of "
                         f"{name}), OOD {_pct(sub_ood)} ({100 * gained:+.1f} points): a sparse *and* "
                         f"robust subnetwork is **{'confirmed' if srnet else 'not confirmed'}** here.")
    return "\n".join(lines)


def gradual_vs_fixed(df: pd.DataFrame, reference: str = STD) -> str:
    """(d) section 5.2: gradual 0.7 -> 0.9 vs fixed 0.9 at the longest mask training."""
    lines = []
    for task in dict.fromkeys(df.task):
        ood = _ood_column(df, task)
        fixed_x = df[(df.task == task) & (df.series == "fixed")].x
        longest = fixed_x.max() if len(fixed_x) else 0
        fixed = (_mean(df, task, "fixed", "id", longest), _mean(df, task, "fixed", ood, longest))
        grad = (_mean(df, task, "gradual 0.7->0.9", "id", longest), _mean(df, task, "gradual 0.7->0.9", ood, longest))
        if None in fixed + grad:
            lines.append(f"- {task}: not measurable (runs missing).")
            continue
        text = (f"- {task}, {longest:g} epochs: fixed 0.9 ID {_pct(fixed[0])} / OOD {_pct(fixed[1])}; "
                f"gradual 0.7->0.9 ID {_pct(grad[0])} / OOD {_pct(grad[1])}: ")
        ref_id = _mean(df, task, reference, "id")
        if ref_id is not None and max(fixed[0], grad[0]) < LEARNED * ref_id:
            lines.append(text + f"'gradual beats fixed' is **not measurable** here: at 90% sparsity neither "
                         f"subnetwork keeps the task (ID below {LEARNED:.0%} of the {reference} model's "
                         f"{_pct(ref_id)}).")
            continue
        better = grad[0] > fixed[0] and grad[1] >= fixed[1]
        text += f"'gradual beats fixed' is **{'confirmed' if better else 'not confirmed'}** here."
        spread = max(_spread(df, task, name, column, longest)
                     for name in ("fixed", "gradual 0.7->0.9") for column in ("id", ood))
        margin = min(abs(grad[0] - fixed[0]), abs(grad[1] - fixed[1]))
        if margin < spread:
            text += (f" The smaller margin ({100 * margin:.1f} points) is within the seeds' spread "
                     f"(up to ±{100 * spread:.1f}), so this verdict rests on noise at this budget.")
        lines.append(text)
    return "\n".join(lines)


def competitive_without_finetuning(df: pd.DataFrame, xs=(0.2, 0.5)) -> str:
    """Section 4.4: under 50% sparsity, masks trained on theta_pt (no weight trained) with CE are
    competitive with the CE fine-tuned full model, and with PoE comparable to the PoE one: at
    every sparsity in `xs`, ID >= COMPETITIVE of that model's and OOD >= its OOD - EARLY[1]. A
    reference that did not learn the task is replaced by the std model (as subnetworks_vs_full)."""
    lines = []
    for task in dict.fromkeys(df.task):
        ood = _ood_column(df, task)
        std_id = _mean(df, task, STD, "id")
        for loss in ("std", "poe"):
            name, ref = f"mask train ({loss}), pt", f"full bert ({loss})"
            ref_id, ref_ood = _mean(df, task, ref, "id"), _mean(df, task, ref, ood)
            if None not in (ref_id, std_id) and ref_id < LEARNED * std_id:
                ref, ref_id, ref_ood = STD, std_id, _mean(df, task, STD, ood)
            values = [(_mean(df, task, name, "id", x), _mean(df, task, name, ood, x)) for x in xs]
            if None in (ref_id, ref_ood) or any(v is None for pair in values for v in pair):
                lines.append(f"- {task}, {name}: not measurable (runs missing).")
                continue
            ok = all(i >= COMPETITIVE * ref_id and o >= ref_ood - EARLY[1] for i, o in values)
            shown = "; ".join(f"{x}: ID {_pct(i)} ({100 * i / ref_id:.0f}%), OOD {_pct(o)}" for x, (i, o) in zip(xs, values))
            lines.append(f"- {task}, {name}: {shown}; {ref}: ID {_pct(ref_id)}, OOD {_pct(ref_ood)}: "
                         f"'competitive under 50% sparsity' is **{'confirmed' if ok else 'not confirmed'}** here.")
    return "\n".join(lines)


def ood_upper_bound(df: pd.DataFrame, series=("bert-ft subnet", "bert-pt subnet", "bert-pt subnet + ft"),
                    xs=(0.2, 0.5, 0.7)) -> str:
    """Section 4.5: with OOD training data, subnetworks at 20-70% sparsity reach nearly 100% OOD
    (mean over `xs` >= NEARLY_ALL), in all three paradigms."""
    lines = []
    for task in dict.fromkeys(df.task):
        ood = _ood_column(df, task)
        std_ood = _mean(df, task, STD, ood)
        for name in series:
            values = [_mean(df, task, name, ood, x) for x in xs]
            if any(v is None for v in values):
                lines.append(f"- {task}, {name}: not measurable (runs missing).")
                continue
            mean_ood = sum(values) / len(values)
            lines.append(f"- {task}, {name}: OOD {', '.join(_pct(v) for v in values)} at {', '.join(map(str, xs))} "
                         f"(mean {_pct(mean_ood)}; {STD}: {_pct(std_ood)}): 'nearly 100% OOD' is "
                         f"**{'confirmed' if mean_ood >= NEARLY_ALL else 'not confirmed'}** here.")
    return "\n".join(lines)


def early_start(df: pd.DataFrame, fraction: float = 0.55) -> str:
    """Section 5.1: mask training started after ~55% of fine-tuning is competitive with starting
    at the end (the checkpoint closest to `fraction` of it: ID >= EARLY[0] of "ft to end"'s, OOD
    >= its OOD - EARLY[1]); and starting from the pre-trained model ("ft step=0") is worse."""
    lines = []
    for task in dict.fromkeys(df.task):
        ood = _ood_column(df, task)
        end_rows = df[(df.task == task) & (df.series == "ft to end")]
        if end_rows.empty:
            lines.append(f"- {task}: not measurable (runs missing).")
            continue
        end = float(end_rows.x.iloc[0])
        steps = sorted(x for x in df[(df.task == task) & df.series.str.startswith("ft step=")].x.unique() if x > 0)
        if not steps:
            lines.append(f"- {task}: not measurable (no intermediate checkpoint).")
            continue
        at = min(steps, key=lambda x: abs(x - fraction * end))
        series = next(s for s in df[(df.task == task) & (df.x == at)].series if s.startswith("ft step="))
        end_id, end_ood = _mean(df, task, "ft to end", "id"), _mean(df, task, "ft to end", ood)
        mid_id, mid_ood = _mean(df, task, series, "id"), _mean(df, task, series, ood)
        zero_id, zero_ood = _mean(df, task, "ft step=0", "id"), _mean(df, task, "ft step=0", ood)
        ok = mid_id >= EARLY[0] * end_id and mid_ood >= end_ood - EARLY[1]
        text = (f"- {task}: from step {at:g} ({100 * at / end:.0f}% of fine-tuning) ID {_pct(mid_id)}, OOD "
                f"{_pct(mid_ood)}; from the end ID {_pct(end_id)}, OOD {_pct(end_ood)}: 'competitive after ~55%' "
                f"is **{'confirmed' if ok else 'not confirmed'}** here.")
        if zero_id is not None:
            worse = zero_id < end_id and zero_ood < end_ood
            text += (f" From the pre-trained model: ID {_pct(zero_id)}, OOD {_pct(zero_ood)}: 'worse than from the "
                     f"end' is **{'confirmed' if worse else 'not confirmed'}** here.")
        lines.append(text)
    return "\n".join(lines)


def other_losses(df: pd.DataFrame, xs=(0.5, 0.7)) -> str:
    """Appendix C.1: every debiasing loss used in mask training gains OOD over the std full model
    while keeping its ID (as subnetworks_vs_full), and confreg keeps more ID but gains less OOD
    than poe (means over `xs`)."""
    lines = [subnetworks_vs_full(df, f"mask train ({loss})", xs=xs) for loss in ("poe", "reweight", "confreg")]
    for task in dict.fromkeys(df.task):
        ood = _ood_column(df, task)

        def mean(series, column):
            values = [_mean(df, task, series, column, x) for x in xs]
            return None if None in values else sum(values) / len(values)

        poe, conf = (mean("mask train (poe)", "id"), mean("mask train (poe)", ood)), \
            (mean("mask train (confreg)", "id"), mean("mask train (confreg)", ood))
        if None in poe + conf:
            lines.append(f"- {task}: confreg vs poe not measurable (runs missing).")
            continue
        ok = conf[0] >= poe[0] and conf[1] <= poe[1]
        lines.append(f"- {task}: confreg ID {_pct(conf[0])} / OOD {_pct(conf[1])}, poe ID {_pct(poe[0])} / OOD "
                     f"{_pct(poe[1])}: 'confreg keeps more ID but gains less OOD' is "
                     f"**{'confirmed' if ok else 'not confirmed'}** here.")
    return "\n".join(lines)


def series_overview(df: pd.DataFrame) -> str:
    """Each series' mean ID and OOD over sparsities, beside the std full model."""
    lines = []
    for task in dict.fromkeys(df.task):
        ood = _ood_column(df, task)
        for series in dict.fromkeys(df[df.task == task].series):
            lines.append(f"- {task}, {series}: mean ID {_pct(_mean(df, task, series, 'id'))}, "
                         f"mean OOD {_pct(_mean(df, task, series, ood))}")
    return "\n".join(lines)
