"""Sentences that compare a build's measured values with the paper's claims.

They are computed from the results, never written by hand: a claim is "confirmed", "not
confirmed" or "not measurable" here, with the numbers that decide it.
"""

from __future__ import annotations

import pandas as pd

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


# A model whose ID score is below this fraction of the std full model's has not learned the task;
# a better OOD score from it is not robustness (a constant predictor scores ~50% on a balanced
# OOD set whatever the bias). Verdicts say so instead of calling it a win.
LEARNED = 0.8
STD = "full bert (std)"


def _mean(df, task, series, column, x=None):
    sub = df[(df.task == task) & (df.series == series)]
    if x is not None:
        sub = sub[(sub.x - x).abs() < 1e-9]
    values = sub[column].dropna()
    return None if values.empty else float(values.mean())


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
                verdict = "confirmed" if poe_ood > std_ood + 0.01 else "not confirmed"
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
            srnet = retained >= 0.95 and gained > 0.01
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
        lines.append(text + f"'gradual beats fixed' is **{'confirmed' if better else 'not confirmed'}** here.")
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
