"""The paper's paradigms as compositions of runs, one function per book section, wired as the
authors' scripts (llyx97/sparse-and-robust-PLM, scripts/) ran them.

Notation (section 3.4): A_L(f(theta)) trains with loss L; P^p_L(f(theta)) prunes with method
p and loss L; M(.) takes the mask. Each section function returns `Point`s: a named series
(the paper's legend), a task, a seed, an x value (sparsity, steps or epochs), the RunConfig,
and for IMP the sparsity `level` of the one run that yields every level. `compute` runs what
the store lacks; `frame` gathers final.json rows into a DataFrame.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from . import methods, plan
from .config import RunConfig
from .params import SECTIONS, Params
from .request import Request
from .runs import Run


@dataclass(frozen=True)
class Point:
    series: str
    task: str
    seed: int
    x: float
    config: RunConfig
    reference: bool = False  # a full-model reference line rather than a curve
    level: float | None = None  # the IMP level of `config` this point shows
    group: str = ""  # a facet of the section (C.5: the backbone)
    request: Request | None = None  # what the point reads beyond the params' execution defaults


class Recipes:
    def __init__(self, params: Params, keep_checkpoints: bool = True):
        self.p = params
        self.keep_checkpoints = keep_checkpoints  # std full models keep section 5.1's steps

    # --- building blocks -------------------------------------------------------------------
    def full(self, task, loss, seed) -> RunConfig:
        """A_L(f(theta_pt)): full fine-tuning on the ID data."""
        teacher = self.full(task, "std", seed) if loss == "confreg" else None
        return self.p.run(task, "finetune", loss, seed=seed, teacher=teacher)

    def prune_ft(self, task, method, loss, sparsity, seed, full_loss="std", ood=False, **fields) -> RunConfig:
        """P^p_L(f(theta_ft)): prune a fine-tuned model; mask training selects after 0.7 t_max.
        The fine-tuned model is the ID-only one also with OOD data (section 4.5: the authors'
        ood mask scripts load the ordinary std model)."""
        base = self.full(task, full_loss, seed)
        teacher = self.full(task, "std", seed) if loss == "confreg" else None
        return self.p.run(task, method, loss, seed=seed, sparsity=sparsity, init_from=base,
                          teacher=teacher, **self._ood(ood), **fields)

    def prune_pt(self, task, method, loss, sparsity, seed, ood=False, **fields) -> RunConfig:
        """P^p_L(f(theta_pt)): prune the pre-trained model (selection over the whole run)."""
        return self.p.run(task, method, loss, seed=seed, sparsity=sparsity, **self._ood(ood), **fields)

    def imp(self, task, loss, seed, start="std") -> RunConfig:
        """One IMP run to sections.imp_target, yielding every level: from the `start` ("std" or
        "poe") fine-tuned model, or from theta_pt (start="pt": imp-rw, the lottery tickets of 4.3)."""
        target = self.p.sections.imp_target
        if start == "pt":
            return self.prune_pt(task, "imp-rw", loss, target, seed)
        return self.prune_ft(task, "imp", loss, target, seed, full_loss=start)

    def isolate(self, task, subnetwork: RunConfig, loss, seed, level=None) -> RunConfig:
        """A_L(f(m . theta_pt)): fine-tune a subnetwork in isolation on the ID data (4.3, 4.5)."""
        return self.p.run(task, "finetune", loss, seed=seed, mask_from=subnetwork, mask_level=level)

    def gradual(self, task, start, final, seed, epochs=None) -> RunConfig:
        """Mask training with the poe loss, soft init, cubic sparsity start -> final (5.2, C.5)."""
        extra = {"epochs": epochs} if epochs is not None else {}
        return self.prune_ft(task, "mask", "poe", final, seed, sparsity_init=start, schedule="cubic",
                             mask_init="soft", **extra)

    @staticmethod
    def _ood(ood: bool) -> dict:
        return {"data": {"ood_train": True}} if ood else {}

    def _references(self, task, seed, losses=("std", "poe")) -> list[Point]:
        """The full models; the std model keeps its weights after section 5.1's steps, so 5.1
        starts from the same run as section 4.2."""
        keep = self.p.execution.request(keep_steps=tuple(self.p.sections.sec5_1_steps))
        return [Point(f"full bert ({loss})", task, seed, 0.0, self.full(task, loss, seed), True,
                      request=keep if loss == "std" and self.keep_checkpoints else None)
                for loss in losses]

    def _levels(self, series, task, seed, sparsities, config) -> list[Point]:
        """Points at the levels `sparsities` of one IMP run."""
        step = config.imp_delta_s
        for s in sparsities:
            if abs(s / step - round(s / step)) > 1e-6 or s > config.sparsity + 1e-9:
                raise ValueError(f"sparsity {s}: an IMP run yields multiples of imp_delta_s={step} up to "
                                 f"{config.sparsity} (sections.imp_target)")
        return [Point(series, task, seed, s, config, level=round(s, 6)) for s in sparsities]

    # --- sections ---------------------------------------------------------------------------
    def sec4_2(self, tasks, seeds, sparsities) -> list[Point]:
        """Figures 2 and 3: mask training and IMP on the std- and the poe-fine-tuned model."""
        points = []
        for task in tasks:
            for seed in seeds:
                points += self._references(task, seed)
                for s in sparsities:
                    for loss in ("std", "poe"):
                        points.append(Point(f"mask train ({loss})", task, seed, s,
                                            self.prune_ft(task, "mask", loss, s, seed)))
                    points.append(Point("mask train (poe), poe ft", task, seed, s,
                                        self.prune_ft(task, "mask", "poe", s, seed, full_loss="poe")))
                for loss, start, name in (("std", "std", "imp (std)"), ("poe", "std", "imp (poe)"),
                                          ("poe", "poe", "imp (poe), poe ft")):
                    points += self._levels(name, task, seed, sparsities, self.imp(task, loss, seed, start))
        return points

    def sec4_3(self, tasks, seeds, sparsities) -> list[Point]:
        """Figure 4: subnetworks fine-tuned in isolation from theta_pt: IMP lottery tickets found
        with poe (scripts/imp/lt) and the poe masks of 4.2 (scripts/mask_train/.../poe/*/retrain)."""
        points = []
        for task in tasks:
            for seed in seeds:
                points += self._references(task, seed)
                tickets = self.imp(task, "poe", seed, start="pt")
                for s in sparsities:
                    self._levels("imp-rw (poe)", task, seed, [s], tickets)  # checks s is a level
                    masks = self.prune_ft(task, "mask", "poe", s, seed)
                    for loss in ("std", "poe"):
                        points.append(Point(f"imp-rw (poe) + {loss} ft", task, seed, s,
                                            self.isolate(task, tickets, loss, seed, level=round(s, 6))))
                        points.append(Point(f"mask train (poe) + {loss} ft", task, seed, s,
                                            self.isolate(task, masks, loss, seed)))
        return points

    def sec4_4(self, tasks, seeds, sparsities) -> list[Point]:
        """Figure 5: mask training on theta_pt, no weight training; 4.2's poe masks for reference."""
        points = []
        for task in tasks:
            for seed in seeds:
                points += self._references(task, seed)
                for s in sparsities:
                    for loss in ("std", "poe"):
                        points.append(Point(f"mask train ({loss}), pt", task, seed, s,
                                            self.prune_pt(task, "mask", loss, s, seed)))
                    points.append(Point("mask train (poe), ft", task, seed, s,
                                        self.prune_ft(task, "mask", "poe", s, seed)))
        return points

    def sec4_5(self, tasks, seeds, sparsities) -> list[Point]:
        """Figure 6 and appendix figure 2: mask training (std loss) with ID+OOD training data on
        the ID-only std model ("bert-ft subnet") and on theta_pt ("bert-pt subnet"); "+ ft"
        fine-tunes the bert-ft masks in isolation on ID data only (the authors' ood/*/retrain)."""
        points = []
        for task in tasks:
            for seed in seeds:
                points += self._references(task, seed, ("std",))
                for s in sparsities:
                    ft_subnet = self.prune_ft(task, "mask", "std", s, seed, ood=True)
                    points += [
                        Point("bert-ft subnet", task, seed, s, ft_subnet),
                        Point("bert-pt subnet", task, seed, s, self.prune_pt(task, "mask", "std", s, seed, ood=True)),
                        Point("bert-pt subnet + ft", task, seed, s, self.isolate(task, ft_subnet, "std", seed)),
                    ]
        return points

    def sec5_1(self, tasks, seeds) -> list[Point]:
        """Figure 7: mask training (poe) from the 4.2 std run's weights after t steps; t = 0 is
        4.4's poe mask on theta_pt and "ft to end" is 4.2's (the same runs unless eval_ood is
        `selected`: these evaluate OOD throughout, for the curves). x = fine-tuning steps."""
        points = []
        s = self.p.sections.sec5_1_sparsity
        for task in tasks:
            for seed in seeds:
                base = self.full(task, "std", seed)
                end = methods.schedule(base, plan.train_rows(base)).steps
                curves = self.p.execution.request(ood_every=True)  # figure 7's curves read OOD at every evaluation
                points.append(Point("ft step=0", task, seed, 0, self.prune_pt(task, "mask", "poe", s, seed),
                                    request=curves))
                for step in self.p.sections.sec5_1_steps:
                    if step >= end:
                        raise ValueError(f"sections.sec5_1_steps: step {step} is not before the end of the std "
                                         f"fine-tuning run of {task} ({end} steps)")
                    points.append(Point(f"ft step={step}", task, seed, step, self.prune_ft(
                        task, "mask", "poe", s, seed, init_step=step), request=curves))
                points.append(Point("ft to end", task, seed, end, self.prune_ft(task, "mask", "poe", s, seed),
                                    request=curves))
        return points

    def sec5_2(self, tasks, seeds, final=0.9) -> list[Point]:
        """Figure 8: fixed 0.9 vs gradual 0.7 -> 0.9 at several mask-training lengths (x = epochs);
        table 5: hard/soft init and gradual 0.2/0.5/0.7 -> 0.9 at the caption's epochs."""
        points = []
        sections = self.p.sections
        for task in tasks:
            for seed in seeds:
                points += self._references(task, seed, ("std",))
                for epochs in sections.sec5_2_epochs[task]:
                    points.append(Point("fixed", task, seed, epochs,
                                        self.prune_ft(task, "mask", "poe", final, seed, epochs=epochs)))
                    points.append(Point("gradual 0.7->0.9", task, seed, epochs,
                                        self.gradual(task, 0.7, final, seed, epochs)))
                epochs = sections.table5_epochs[task]
                points.append(Point("fixed, soft init", task, seed, epochs, self.prune_ft(
                    task, "mask", "poe", final, seed, epochs=epochs, mask_init="soft")))
                for start in sections.table5_inits:
                    if start != 0.7 or epochs not in sections.sec5_2_epochs[task]:
                        points.append(Point(f"gradual {start}->0.9", task, seed, epochs,
                                            self.gradual(task, start, final, seed, epochs)))
                if epochs not in sections.sec5_2_epochs[task]:
                    points.append(Point("fixed", task, seed, epochs,
                                        self.prune_ft(task, "mask", "poe", final, seed, epochs=epochs)))
        return points

    def appc1(self, tasks, seeds, sparsities) -> list[Point]:
        """Appendix figure 1: reweight and confreg as the pruning loss (from the std model)."""
        points = []
        for task in tasks:
            for seed in seeds:
                points += self._references(task, seed, ("std", "poe", "reweight", "confreg"))
                for s in sparsities:
                    for loss in ("std", "poe", "reweight", "confreg"):
                        points.append(Point(f"mask train ({loss})", task, seed, s,
                                            self.prune_ft(task, "mask", loss, s, seed)))
        return points

    def appc5(self, tasks, seeds) -> list[Point]:
        """Table 6: on each other backbone (sections.appc5_backbones), the std and poe full models
        and mask training with poe at 0.5, 0.7 and gradual 0.5 -> 0.7. The authors left no
        scripts for it: their BERT-base NLI settings are used."""
        points = []
        for choice in self.p.sections.appc5_backbones:
            forced = {**self.p.forced, **{k: v for k, v in choice.items() if k != "name"}}
            other = Recipes(self.p.model_copy(update={"forced": forced}), keep_checkpoints=False)
            name = choice.get("name", choice["backbone"])
            for task in tasks:
                for seed in seeds:
                    for loss in ("std", "poe"):
                        points.append(Point(f"full bert ({loss})", task, seed, 0.0, other.full(task, loss, seed),
                                            True, group=name))
                    for s in (0.5, 0.7):
                        points.append(Point(f"mask {s}", task, seed, s, other.prune_ft(task, "mask", "poe", s, seed),
                                            group=name))
                    points.append(Point("mask 0.5->0.7", task, seed, 0.7, other.gradual(task, 0.5, 0.7, seed),
                                        group=name))
        return points

    # --- one notebook's points ----------------------------------------------------------------
    def section(self, name: str, tasks=None, seeds=None, sparsities=None) -> list[Point]:
        """Every point the notebook `name` shows; the sweep plans its runs from the same list.

        None means the params file's choice. Section 4.2 adds the full models of every preset
        task (the ID-OOD gap of each task is reported there even when only some are pruned).
        """
        if name not in SECTIONS:
            raise ValueError(f"unknown section {name!r}; accepted: {', '.join(SECTIONS)}")
        tasks = list(tasks or self.p.tasks_for(name))
        seeds = list(seeds or self.p.seeds_for(name))
        sparsities = list(self.p.preset.sparsities if sparsities is None else sparsities)
        if name in ("sec5_1", "sec5_2", "appc5"):
            return getattr(self, name)(tasks, seeds)
        points = getattr(self, name)(tasks, seeds, sparsities)
        if name == "sec4_2":
            others = [t for t in self.p.preset.tasks if t not in tasks]
            points += [p for p in self.sec4_2(others, seeds, []) if p.reference]
        return points


def graph(points: list[Point], params: Params):
    """The runs behind `points`, each once, dependencies first, with what each must leave behind."""
    from .graph import RunGraph

    runs = RunGraph(params.execution.request())
    for point in points:
        runs.add(point.config, point.request)
    return runs


def compute(points: list[Point], params: Params, root=None, progress: bool = True) -> None:
    """Run every point the store lacks, in this process (dependencies first; shared runs once)."""
    from pathlib import Path

    from . import paths
    from .executors import LocalExecutor
    from .models import check_backbones

    runs = graph(points, params)
    check_backbones([node.config for node in runs])
    LocalExecutor(progress=progress).run(runs, Path(root) if root else paths.runs_root())


def frame(points: list[Point], root=None) -> pd.DataFrame:
    """One row per finished point: series, task, seed, x, id, each OOD set, sparsity."""
    rows = []
    for p in points:
        run = Run(p.config, root)
        if not run.done:
            continue
        final = run.result()
        result = final if p.level is None else final.levels[f"{p.level:g}"]
        row = {"series": p.series, "task": p.task, "seed": p.seed, "x": p.x, "reference": p.reference, "group": p.group,
               "id": result.id, "sparsity": result.sparsity, "key": run.key, "metric": final.metric,
               "ood_metric": final.ood_metric}
        row.update({f"ood:{k}": v for k, v in result.ood.items()})
        rows.append(row)
    return pd.DataFrame(rows)


def curves(points: list[Point], root=None) -> pd.DataFrame:
    """Every evaluation (metrics.jsonl) of each point's run: for training-curve figures."""
    rows = []
    for p in points:
        for r in Run(p.config, root).metrics():
            rows.append({"series": p.series, "task": p.task, "seed": p.seed, "x": p.x, **r})
    return pd.DataFrame(rows)
