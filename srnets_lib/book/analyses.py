"""Analyses the paper does not give, drawn on a page from what its runs stored: the structure of
the subnetworks' masks (mask_structure.py) and the OOD score per subset of the OOD set (from each
run's predictions at its selected checkpoint, an IMP level's at the end of the level)."""

from __future__ import annotations

import pandas as pd

from srnets_lib.book import mask_structure
from srnets_lib.model import backbones
from srnets_lib.book import plots
from srnets_lib.book.shown import Shown
from srnets_lib.data import optimum, synthetic
from srnets_lib.book.sections import gather


def masks(page, sparsity: float | None, against: str) -> Shown:
    """Per layer, the heads and neurons each subnetwork series empties at `sparsity` (None: the
    page's highest), and its masks' Jaccard similarity to `against`'s."""
    sparsity = max(page.results.sparsities) if sparsity is None else sparsity
    shown = [p for p in page.results.points if p.task in page.results.tasks and not p.reference and abs(p.x - sparsity) < 1e-9]
    found = gather.masks(shown, sparsity)
    if not found:
        return Shown(f"*No finished subnetwork at sparsity {sparsity:g} has a stored mask to analyse.*")
    df = mask_structure.frame(found, backbones.num_heads(shown[0].config.backbone), against)
    return _show(mask_structure.figure(df, sparsity, against, page.results.synthetic), shown, df,
          f"No stored mask at sparsity {sparsity:g} for: {{}} (IMP runs computed before every level's mask "
          "was kept have only their last level's).")


def subsets(page, series: tuple, sparsity: float = 0.7) -> Shown:
    """Each task's OOD accuracy per subset (its heuristics, labels or members), for the full models
    and `series` at `sparsity`."""
    shown = page.section.subset_points(page.results, series, sparsity)
    df = gather.subsets(shown)
    if df.empty:
        return Shown("*No finished run of this figure stored its predictions.*")
    title = (f"OOD accuracy per subset: full models and subnetworks at sparsity {sparsity:g}"
             if any(not p.reference for p in shown) else "OOD accuracy per subset: the full models")
    return _show(plots.subset_figure(df, title, page.results.synthetic), shown, df,
          "No stored predictions for: {} (runs finished before predictions were kept).")


# how training_optimum names the row of each loss whose optimum is exact (optimum.EXACT_LOSSES)
OPTIMUM_OF = {"std": "", "reweight": ", reweighted (appendix eq. 3)", "poe": ", PoE's main model (section 3.3)",
              "confreg": ", confreg, its teacher the std optimum (appendix eq. 4)"}


def training_optimum(page) -> pd.DataFrame | Shown:
    """Synthetic data only: per task and training distribution of the page's points (the ID data;
    with section 4.5's OOD training data mixed in) and loss (std; example reweighting; PoE, whose
    main model is what remains; confreg, its teacher the std optimum), exactly
    (optimum.design_criteria): the best model of the data as the loss sees them (on how many of
    the ambiguous class's members it follows the cue, its OOD and ID accuracy), and the ID accuracy
    of the rule follower (ideal debiasing: 100% OOD), also as a share of the first's. A model scores
    above the first on the OOD set only by fitting its data less well; a fully debiased one keeps at
    most that share of the first's ID."""
    rows = {}
    for p in page.results.points:
        data, loss = p.config.data, p.config.loss
        if p.task not in page.results.tasks or data.source != "synthetic" or loss not in OPTIMUM_OF:
            continue
        key = (p.task, ("ID + OOD" if data.ood_train else "ID") + OPTIMUM_OF[loss])
        if key in rows:  # a page's many points train on a few distributions
            continue
        exact = optimum.design_criteria(p.task, data.bias_strength, data.ambiguity, data.member_skew,
                                          synthetic.OOD_TRAIN_SHARE if data.ood_train else 0.0, loss)
        rows[key] = {
            "bias strength": f"{data.bias_strength:g}",
            "follows the cue on": f"{exact['cue_members']:g} of {synthetic.MEMBERS} members",
            "OOD": f"{100 * exact['ood_cue']:.1f}", "ID": f"{100 * exact['id_cue']:.1f}",
            "rule follower's ID": f"{100 * exact['id_rule']:.1f}",
            "its share": f"{100 * exact['id_rule'] / exact['id_cue']:.1f}%"}
    if not rows:
        return Shown("*Only the synthetic tasks have an exact optimum.*")
    return pd.DataFrame(rows.values(), index=pd.MultiIndex.from_tuples(rows, names=["task", "data, as the loss sees them"]))


def _show(fig, shown: list, df, lacking: str) -> Shown:
    """The figure, then which of the shown series it lacks (`lacking` names them at {})."""
    plt = plots.pyplot()
    plt.close(fig)
    missing = sorted({p.series for p in shown} - set(df.series))
    return Shown(fig, lacking.format(", ".join(missing)) if missing else None)
