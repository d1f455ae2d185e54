"""What a sweep will compute, before computing it: the distinct runs behind a set of notebooks,
their optimizer steps and evaluations (from the configured or published dataset sizes,
never by loading data), the disk their kept files need, and their GPU-hours (cost.py).

    python -m srnets_lib plan book/*.ipynb --params params/paper.yaml

prints every distinct run under the first section that needs it (its optimiser and, for IMP,
whether its weights are rewound or kept after each pruning), then totals; its last line
is exactly `TOTAL: <N> runs, <M> optimizer steps`.
"""

from __future__ import annotations

from dataclasses import dataclass

from srnets_lib import methods
from srnets_lib.data.tasks import planned_eval_rows
from srnets_lib.methods.schedule import Schedule
from srnets_lib.model.sizes import REFERENCE_BACKBONE, parameters
from srnets_lib.settings.config import RunConfig
from srnets_lib.settings.request import Request
from srnets_lib.sweeps import cost



# --- the plan -----------------------------------------------------------------------------------

@dataclass
class PlannedRun:
    section: str
    config: RunConfig
    request: Request
    schedule: Schedule

    @property
    def steps(self) -> int:
        return self.schedule.steps

    @property
    def evaluations(self) -> int:
        return len(self.schedule.evaluated(self.request.ood_every, self.request.levels))

    def evaluated_rows(self, ood_every: bool | None = None) -> int:
        """Examples the run evaluates: the dev set at each evaluation, the OOD sets (and the ID
        test split) as often as the schedule scores them; as requested, or with `ood_every`
        (True: the authors' way, every OOD set at every evaluation)."""
        every = self.request.ood_every if ood_every is None else ood_every or self.request.ood_every
        dev, ood = planned_eval_rows(self.config.task, self.config.data)
        levels = self.request.levels
        return len(self.schedule.evaluated(every, levels)) * dev + self.schedule.ood_evaluations(every, levels) * ood


def plan(sections: dict[str, list], graph) -> list[PlannedRun]:
    """Every run of `graph` (with its merged request) under the first section that needs it;
    `sections` maps a section to the configs it shows (dict order)."""
    seen, planned = set(), []
    for section, configs in sections.items():
        for config in configs:
            for key in _with_dependencies(config):
                if key not in seen:
                    seen.add(key)
                    node = graph[key]
                    planned.append(PlannedRun(section, node.config, node.request, methods.planned_schedule(node.config)))
    return planned


def _with_dependencies(config: RunConfig) -> list[str]:
    keys = [k for dependency in config.dependencies() for k in _with_dependencies(dependency)]
    return keys + [config.key()]


def disk_bytes(planned: list[PlannedRun]) -> dict[str, int]:
    """Bytes kept in the run store: fp32 weights where a request asks for them (a later run
    reads them), weights kept after steps (section 5.1), bit-packed masks (one per pruning run,
    one per level where levels are kept)."""
    weights = kept_steps = masks = 0
    for p in planned:
        config = p.config
        total, matrices = parameters(config.backbone, config.num_layers, config.train_embeddings)
        weights += 4 * total * p.request.weights
        kept_steps += 4 * total * len(p.request.keep_steps)
        if config.is_pruning:
            masks += (len(p.schedule.levels) + 1) * matrices // 8  # IMP: each level's, then the run's own
    return {"weights": weights, "kept steps (5.1)": kept_steps, "masks": masks}


def _describe(p: PlannedRun) -> list[str]:
    c = p.config
    origin = c.init_from or c.mask_from
    if origin is None:
        start = "pt"
    elif c.mask_from is not None:
        level = c.mask_level if c.mask_level is not None else c.mask_from.sparsity
        start = f"{origin.loss}-{origin.method}@{level:g}" + ("+ood" if origin.data.ood_train else "")
    else:
        start = f"{origin.loss}-{origin.method}" + (f"@step{c.init_step}" if c.init_step else "")
    x = methods.describe(c)
    extra = "+ood" if c.data.ood_train else ""
    return [c.method, c.loss, start, x, c.task + extra, str(c.seed), f"{c.epochs:g}", str(p.steps),
            c.optimizer if p.steps else "-", rewinding(c), c.backbone if c.backbone != REFERENCE_BACKBONE else ""]


def rewinding(config: RunConfig) -> str:
    """IMP's weights after each pruning: rewound to their initial values, or kept (trained on); '-'
    for a run that never prunes as it trains."""
    if config.method not in ("imp", "imp-rw"):
        return "-"
    return "rewound" if config.imp_rewind else "kept"


def _count(n: int) -> str:
    return f"{n / 1e9:.2f}B" if n >= 1e8 else f"{n:,}"


def report(planned: list[PlannedRun], rates=None, runs_per_gpu: int = 1) -> str:
    """Every run under its section, then totals: steps by length, disk, evaluation, GPU-hours
    (cost.lines: `rates`, bench's measured rates or cost.Assumed), and last `TOTAL: ...`."""
    header = ["method", "loss", "start", "sparsity", "task", "seed", "epochs", "steps", "optimizer", "imp weights",
              "backbone"]
    lines = []
    for section in dict.fromkeys(p.section for p in planned):
        rows = [_describe(p) for p in planned if p.section == section]
        section_steps = sum(p.steps for p in planned if p.section == section)
        lines.append(f"== {section}: {len(rows)} runs, {section_steps} optimizer steps ==")
        widths = [max(len(r[i]) for r in rows + [header]) for i in range(len(header))]
        lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip() for row in [header, *rows]]
        lines.append("")
    lengths: dict[int, list[int]] = {}
    for p in planned:
        lengths.setdefault(p.config.max_length, [0, 0])
        lengths[p.config.max_length][0] += p.steps
        lengths[p.config.max_length][1] += p.steps * p.config.batch_size
    lines.append("training by sequence length: " + "; ".join(f"{n} tokens: {steps} steps, {examples} examples"
                                                              for n, (steps, examples) in sorted(lengths.items())))
    disk = disk_bytes(planned)
    lines.append("disk: " + ", ".join(f"{k} {v / 1e9:.1f} GB" for k, v in disk.items())
                 + f"; total {sum(disk.values()) / 1e9:.1f} GB (plus one resume checkpoint per running run)")
    evaluated, every = (sum(p.evaluated_rows(mode) for p in planned) for mode in (None, True))
    lines.append(f"evaluation: {_count(evaluated)} examples evaluated as requested (execution.eval_ood), "
                 f"{_count(every)} with every OOD set at every evaluation (eval_ood: every, the authors')")
    lines += cost.lines(planned, rates, runs_per_gpu)
    total_steps = sum(p.steps for p in planned)
    lines.append(f"TOTAL: {len(planned)} runs, {total_steps} optimizer steps")
    return "\n".join(lines)
