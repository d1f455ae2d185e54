"""Part II's analyses of the subnetworks beyond their scores: each one's held-out pre-training
losses beside its mean downstream score, and its mask's distance to the OMP mask (1 - Jaccard,
TAMT section 4.2.5) or to the other methods' masks (figure 17), at the end of the search and along it."""

from __future__ import annotations

import pandas as pd

from srnets_lib.book import columns
from srnets_lib.book.sections.tamt import FULL, PROBE_TASK, RANDOM, SERIES, mean_over_tasks
from srnets_lib.model import pruning
from srnets_lib.store.runs import Run

LOSSES = ("mlm_loss", "kd_loss")


TRAJECTORY = " iterations"  # a trajectory point's group: "<steps> iterations" (the default masks' group is "")


def analysis(results, seed: int | None = None, masks: pd.DataFrame | None = None, frame: pd.DataFrame | None = None,
             tasks=None) -> pd.DataFrame:
    """Per series, sparsity and group (a trajectory's steps): mean held-out MLM and KD loss, mean
    downstream score over `tasks` (None: tamt.figure_tasks), mean distance of the mask to the OMP mask
    at that sparsity, and the fewest finished runs behind one of those values (`runs`: the probes on
    the corpus, the transfers on one task); of `frame` (None: the page's), of one seed's runs alone
    with `seed`; `masks`: distances(results), if at hand."""
    df = results.frame if frame is None else frame
    df = df if seed is None else df[df.seed == seed]
    masks = distances(results) if masks is None else masks
    masks = masks if seed is None else masks[masks.seed == seed]
    tasks = tasks or [t for t in results.tasks if t in set(df.task)] or None
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


def finished_masks(results) -> dict:
    """(series, sparsity, mask seed) -> the mask of each probed subnetwork of the page's default points
    whose run is finished."""
    masks = {}
    for p in results.points:
        if p.task != PROBE_TASK:
            continue
        source, level = (p.config.mask_from, p.config.mask_level) if p.config.mask_from else (p.config, None)
        run = Run(source)
        if run.served():  # finished, its masks whole
            masks[(p.series, p.x, p.seed)] = run.masks(level)
    return masks


def distances(results) -> pd.DataFrame:
    """Per mask of the default points (series, sparsity, mask seed) of a finished run: 1 - Jaccard to the
    OMP mask of the same sparsity (OMP has one mask: its first seed's)."""
    masks = finished_masks(results)
    omp = {x: m for (series, x, _), m in masks.items() if series == "OMP"}
    rows = [(series, x, seed, 1 - pruning.jaccard(m, omp[x])) for (series, x, seed), m in masks.items() if x in omp]
    return pd.DataFrame(rows, columns=["series", "x", "seed", "distance to OMP"]).astype({"distance to OMP": float})


COMPARED = ("OMP", "TAMT-KD", "TAMT-MLM", "IMP")  # mask_training/compare_mask.py's (TAMT figure 17)


def similarities(results) -> pd.DataFrame:
    """TAMT figure 17 (appendix A.5; mask_training/compare_mask.py): per sparsity and pair of COMPARED
    methods, the mean Jaccard similarity over every pair of their finished masks (mask seeds; a mask
    never with itself)."""
    masks = finished_masks(results)
    rows = []
    for x in sorted({x for (_, x, _) in masks}):
        of = {name: [m for (series, at, _), m in masks.items() if series == name and at == x] for name in COMPARED}
        for a in COMPARED:
            for b in COMPARED:
                pairs = [(m, n) for i, m in enumerate(of[a]) for j, n in enumerate(of[b]) if a != b or i < j]
                value = sum(pruning.jaccard(m, n) for m, n in pairs) / len(pairs) if pairs else (1.0 if of[a] else None)
                rows.append((x, a, b, value))
    return pd.DataFrame(rows, columns=["x", "a", "b", "similarity"]).astype({"similarity": float})


def distance_curves(results) -> pd.DataFrame:
    """Figure 8 (section 4.2.5; mask_training/mask_dist.py): per finished mask of the page (TAMT-MLM's
    and TAMT-KD's from OMP after each step count, IMP's level at each pruning interval), 1 - Jaccard to
    the OMP mask of its sparsity and mask seed (the searches' step 0 from OMP: the OMP mask itself)."""
    masks = {}
    for p in results.points:
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
