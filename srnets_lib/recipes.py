"""The paper's paradigms as compositions of runs, one function per book section.

Notation (section 3.4): A_L(f(theta)) trains with loss L; P^p_L(f(theta)) prunes with method
p and loss L; M(.) takes the mask. Each section function returns `Point`s: a named series
(the paper's legend), a task, a seed, an x value (sparsity, or epochs) and the RunConfig.
`compute` runs what the store lacks; `frame` gathers final.json rows into a DataFrame.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
from tqdm.auto import tqdm

from .config import RunConfig
from .params import Params
from .runs import Run


SECTIONS = ("sec4_2", "sec4_3", "sec4_4", "sec4_5", "sec5_1", "sec5_2", "appc1", "appc5")


@dataclass(frozen=True)
class Point:
    series: str
    task: str
    seed: int
    x: float
    config: RunConfig
    reference: bool = False  # a full-model reference line rather than a curve


class Recipes:
    def __init__(self, params: Params):
        self.p = params

    # --- building blocks -------------------------------------------------------------------
    def full(self, task, loss, seed, ood=False) -> RunConfig:
        """A_L(f(theta_pt)): full fine-tuning."""
        teacher = self.full(task, "std", seed, ood) if loss == "confreg" else None
        return self.p.run(task, "finetune", loss, seed=seed, teacher=teacher, **self._ood(ood))

    def prune_ft(self, task, method, loss, sparsity, seed, full_loss="std", ood=False, **fields) -> RunConfig:
        """P^p_L(f(theta_ft)): prune a fine-tuned model (mask training selects after 0.7 t_max)."""
        base = self.full(task, full_loss, seed, ood)
        teacher = self.full(task, "std", seed, ood) if loss == "confreg" else None
        select = {"select": "best_after_0.7"} if method == "mask" else {}
        return self.p.run(task, method, loss, seed=seed, sparsity=sparsity, init_from=base,
                          teacher=teacher, **select, **self._ood(ood), **fields)

    def prune_pt(self, task, method, loss, sparsity, seed, ood=False, **fields) -> RunConfig:
        """P^p_L(f(theta_pt)): prune the pre-trained model (mask training: section 4.4)."""
        return self.p.run(task, method, loss, seed=seed, sparsity=sparsity, **self._ood(ood), **fields)

    def isolate(self, task, subnetwork: RunConfig, loss, seed, ood=False) -> RunConfig:
        """A_L(f(m . theta_pt)): fine-tune a subnetwork in isolation (section 4.3)."""
        return self.p.run(task, "finetune", loss, seed=seed, mask_from=subnetwork, **self._ood(ood))

    @staticmethod
    def _ood(ood: bool) -> dict:
        return {"data": {"ood_train": True}} if ood else {}

    def _references(self, task, seed, losses=("std", "poe"), ood=False) -> list[Point]:
        return [Point(f"full bert ({loss})", task, seed, 0.0, self.full(task, loss, seed, ood), True)
                for loss in losses]

    # --- sections ---------------------------------------------------------------------------
    def sec4_2(self, tasks, seeds, sparsities) -> list[Point]:
        """Figures 2 and 3: subnetworks from the std- and poe-fine-tuned model."""
        points = []
        for task in tasks:
            for seed in seeds:
                points += self._references(task, seed)
                for s in sparsities:
                    for method, name in (("mask", "mask train"), ("imp", "imp")):
                        for loss in ("std", "poe"):
                            points.append(Point(f"{name} ({loss})", task, seed, s,
                                                self.prune_ft(task, method, loss, s, seed)))
                        points.append(Point(f"{name} (poe), poe ft", task, seed, s,
                                            self.prune_ft(task, method, "poe", s, seed, full_loss="poe")))
        return points

    def sec4_3(self, tasks, seeds, sparsities) -> list[Point]:
        """Figure 4: masks found on theta_pt (imp-rw) or theta_ft (mask train), fine-tuned alone."""
        points = []
        for task in tasks:
            for seed in seeds:
                points += self._references(task, seed)
                for s in sparsities:
                    sources = {"imp-rw (poe)": self.prune_pt(task, "imp-rw", "poe", s, seed),
                               "mask train (poe)": self.prune_ft(task, "mask", "poe", s, seed)}
                    for name, source in sources.items():
                        for loss in ("std", "poe"):
                            points.append(Point(f"{name} + {loss} ft", task, seed, s,
                                                self.isolate(task, source, loss, seed)))
        return points

    def sec4_4(self, tasks, seeds, sparsities) -> list[Point]:
        """Figure 5: mask training on theta_pt, no weight training; 4.2's orange line for reference."""
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
        """Figure 6: the three paradigms with OOD training data mixed in (std loss only)."""
        points = []
        for task in tasks:
            for seed in seeds:
                points += self._references(task, seed, ("std",))
                points.append(Point("full bert (std, +ood data)", task, seed, 0.0,
                                    self.full(task, "std", seed, ood=True), True))
                for s in sparsities:
                    pt_subnet = self.prune_pt(task, "mask", "std", s, seed, ood=True)
                    points += [
                        Point("bert-ft subnet", task, seed, s, self.prune_ft(task, "mask", "std", s, seed, ood=True)),
                        Point("bert-pt subnet", task, seed, s, pt_subnet),
                        Point("bert-pt subnet + ft", task, seed, s, self.isolate(task, pt_subnet, "std", seed, ood=True)),
                    ]
        return points

    def sec5_1(self, tasks, seeds) -> list[Point]:
        """Figure 7: mask training (poe) from checkpoints after a fraction of std fine-tuning."""
        points = []
        for task in tasks:
            s = self.p.sections.sec5_1_sparsity[task]
            for seed in seeds:
                probe = self.full(task, "std", seed)
                t_max = self.t_max(probe)
                steps = sorted({round(f * t_max) for f in self.p.sections.sec5_1_fractions})
                base = probe.model_copy(update={"keep_steps": tuple(steps)})
                for step in steps:
                    label = "ft to end" if step == t_max else f"ft step={step}"
                    config = self.p.run(task, "mask", "poe", seed=seed, sparsity=s, init_from=base,
                                        init_step=None if step == t_max else step, select="best_after_0.7")
                    points.append(Point(label, task, seed, step / t_max, config))
        return points

    def sec5_2(self, tasks, seeds, final=0.9) -> list[Point]:
        """Figure 8 and table 5: fixed vs gradual sparsity at 90%, over mask-training epochs."""
        points = []
        for task in tasks:
            for seed in seeds:
                points += self._references(task, seed, ("std",))
                for epochs in self.p.sections.sec5_2_epochs:
                    points.append(Point("fixed", task, seed, epochs,
                                        self.prune_ft(task, "mask", "poe", final, seed, epochs=epochs)))
                    points.append(Point("gradual 0.7->0.9", task, seed, epochs, self.gradual(task, 0.7, final, seed, epochs)))
                longest = max(self.p.sections.sec5_2_epochs)
                points.append(Point("fixed, soft init", task, seed, longest,
                                    self.prune_ft(task, "mask", "poe", final, seed, epochs=longest, mask_init="soft")))
                for start in self.p.sections.sec5_2_inits:
                    points.append(Point(f"gradual {start}->0.9", task, seed, longest,
                                        self.gradual(task, start, final, seed, longest)))
        return points

    def gradual(self, task, start, final, seed, epochs=None) -> RunConfig:
        extra = {"epochs": epochs} if epochs else {}
        return self.prune_ft(task, "mask", "poe", final, seed, sparsity_init=start, schedule="cubic",
                             mask_init="soft", **extra)

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

    def appc5(self, tasks, seeds, backbone=None) -> list[Point]:
        """Table 6: mask training with poe at 0.5, 0.7 and gradual 0.5->0.7 on another backbone."""
        recipes = self if backbone is None else Recipes(self.p.model_copy(
            update={"forced": {**self.p.forced, "backbone": backbone}}))
        points = []
        for task in tasks:
            for seed in seeds:
                points += recipes._references(task, seed)
                for s in (0.5, 0.7):
                    points.append(Point(f"mask {s}", task, seed, s, recipes.prune_ft(task, "mask", "poe", s, seed)))
                points.append(Point("mask 0.5->0.7", task, seed, 0.7, recipes.gradual(task, 0.5, 0.7, seed)))
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
        seeds = list(seeds or self.p.preset.seeds)
        sparsities = list(self.p.preset.sparsities if sparsities is None else sparsities)
        if name in ("sec5_1", "sec5_2", "appc5"):
            return getattr(self, name)(tasks, seeds)
        points = getattr(self, name)(tasks, seeds, sparsities)
        if name == "sec4_2":
            others = [t for t in self.p.preset.tasks if t not in tasks]
            points += [p for p in self.sec4_2(others, seeds, []) if p.reference]
        return points

    # --- helpers --------------------------------------------------------------------------
    def t_max(self, config: RunConfig) -> int:
        import math

        from .data import load_task

        n = len(load_task(config.task, config.data).train)
        return max(1, round(config.epochs * math.ceil(n / config.batch_size)))


def runs_in_order(points: list[Point]) -> list[RunConfig]:
    """The distinct runs behind `points` and all their dependencies, each after what it needs."""
    ordered: dict[str, RunConfig] = {}

    def visit(config: RunConfig):
        for dependency in config.dependencies():
            visit(dependency)
        ordered.setdefault(config.key(), config)

    for point in points:
        visit(point.config)
    return list(ordered.values())


def compute(points: list[Point], root=None, progress: bool = True) -> None:
    """Run every point the store lacks (dependencies first; shared runs once)."""
    from .train import execute

    todo = [c for c in runs_in_order(points) if not Run(c, root).done]
    for config in tqdm(todo, desc="runs", disable=not progress or not todo):
        execute(config, root, progress=False)


def frame(points: list[Point], root=None) -> pd.DataFrame:
    """One row per (point, metric set): series, task, seed, x, id, each OOD set, sparsity."""
    rows = []
    for p in points:
        run = Run(p.config, root)
        if not run.done:
            continue
        final = run.final()
        row = {"series": p.series, "task": p.task, "seed": p.seed, "x": p.x, "reference": p.reference,
               "id": final["id"], "sparsity": final["sparsity"], "key": run.key, "metric": final["metric"]}
        row.update({f"ood:{k}": v for k, v in final["ood"].items()})
        rows.append(row)
    return pd.DataFrame(rows)


def curves(points: list[Point], root=None) -> pd.DataFrame:
    """Every evaluation (metrics.jsonl) of each point's run: for training-curve figures."""
    rows = []
    for p in points:
        for r in Run(p.config, root).metrics():
            rows.append({"series": p.series, "task": p.task, "seed": p.seed, "x": p.x, **r})
    return pd.DataFrame(rows)
