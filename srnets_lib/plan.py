"""What a sweep will compute, before computing it: the distinct runs behind a set of notebooks,
their optimizer steps and evaluations (from the configured or published dataset sizes,
never by loading data), the disk their kept files need, and an estimate of GPU-hours.

    python -m srnets_lib plan book/*.ipynb --params params/paper.yaml

prints every distinct run under the first section that needs it, then totals; its last line
is exactly `TOTAL: <N> runs, <M> optimizer steps`.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from . import paths
from .config import RunConfig
from .data.tasks import spec

# Parameter shapes of the hub backbones (their config.json), so disk and cost need no download.
HUB_SHAPES = {
    "bert-base-uncased": dict(vocab_size=30522, hidden_size=768, num_hidden_layers=12, intermediate_size=3072,
                              max_position_embeddings=512, type_vocab_size=2),
    "roberta-base": dict(vocab_size=50265, hidden_size=768, num_hidden_layers=12, intermediate_size=3072,
                         max_position_embeddings=514, type_vocab_size=1),
    "bert-large-uncased": dict(vocab_size=30522, hidden_size=1024, num_hidden_layers=24, intermediate_size=4096,
                               max_position_embeddings=512, type_vocab_size=2),
}
REFERENCE = "bert-base-uncased"  # the bench's throughput is measured on this shape


def t_max(epochs: float, train_rows: int, batch_size: int) -> int:
    """Optimisation steps of `epochs` passes over `train_rows` examples (the last batch kept)."""
    return max(1, round(epochs * math.ceil(train_rows / batch_size)))


def train_rows(config: RunConfig) -> int:
    """Training examples of a run: the configured size, else the published one (appendix
    table 1), plus section 4.5's OOD mixture."""
    data = config.data
    if data.source == "synthetic":
        return data.train_size + (data.train_size // 4 if data.ood_train else 0)
    task = spec(config.task)
    rows = min(data.train_size or task.train_rows, task.train_rows)
    extra = min(data.train_size or task.ood_train_rows, task.ood_train_rows) if data.ood_train else 0
    return rows + extra


def eval_rows(config: RunConfig) -> tuple[int, int]:
    """(ID dev rows, OOD rows) of one evaluation."""
    data = config.data
    if data.source == "synthetic":
        return data.dev_size, data.ood_size
    return spec(config.task).dev_rows, spec(config.task).ood_rows


def evaluated_rows(config: RunConfig, evaluations: int) -> int:
    """Examples a run evaluates: the dev set at every evaluation, the OOD sets at every one or
    (eval_ood=selected) once for the selected checkpoint, or at each of IMP's levels."""
    dev, ood = eval_rows(config)
    if config.eval_ood == "every":
        return evaluations * (dev + ood)
    ood_evaluations = _imp_schedule(config).count if config.method in ("imp", "imp-rw") else 1
    return evaluations * dev + ood_evaluations * ood


def _imp_schedule(config: RunConfig):
    """The IMP schedule the run's method will follow (methods/imp.py)."""
    from .pruning import IMPSchedule

    total = t_max(config.epochs, train_rows(config), config.batch_size)
    return IMPSchedule(config.sparsity, config.imp_delta_s, config.imp_delta_t, total)


def steps(config: RunConfig) -> int:
    """Optimizer steps the run takes (its method's schedule: methods/)."""
    if config.method in ("omp", "random"):
        return 0
    if config.method in ("imp", "imp-rw"):
        return _imp_schedule(config).total_steps
    return t_max(config.epochs, train_rows(config), config.batch_size)


def evaluation_steps(config: RunConfig) -> list[int]:
    """The steps after which the run evaluates (train.Trainer): every eval_interval steps, at
    the end and at IMP's level ends; with eval_ood=selected only those a result reads: a
    checkpoint that may be selected (after 0.7 t_max with select=best_after_0.7; mask training
    with select_at_target: at the target sparsity), IMP's level ends, and the last."""
    from .pruning import schedules

    n = steps(config)
    points = set(range(config.eval_interval, n + 1, config.eval_interval)) | {n}
    imp = config.method in ("imp", "imp-rw")
    if imp:
        schedule = _imp_schedule(config)
        points |= {k * schedule.interval for k in range(1, schedule.count + 1)}
    if config.eval_ood == "every" or n == 0:
        return sorted(points)

    def read(step: int) -> bool:  # n is t_max outside IMP
        if imp:
            return step == n or step % schedule.interval == 0
        if step == n:
            return True
        if config.select == "best_after_0.7" and step < 0.7 * n:
            return False
        return not (config.method == "mask" and config.select_at_target) or schedules.at_target(config, step, n)

    return sorted(p for p in points if read(p))


def evaluations(config: RunConfig) -> int:
    return len(evaluation_steps(config))


# --- model sizes --------------------------------------------------------------------------------

def shape(backbone: str, num_layers: int | None) -> dict:
    """The backbone's config values that fix its parameter count."""
    if backbone in HUB_SHAPES:
        values = dict(HUB_SHAPES[backbone])
    elif backbone == "tiny":
        values = dict(vocab_size=30522, hidden_size=32, num_hidden_layers=2, intermediate_size=64,
                      max_position_embeddings=128, type_vocab_size=2)
    else:
        from . import models

        folder = Path(models.resolve(backbone))
        values = json.loads((folder / "config.json").read_text()) if folder.is_dir() else dict(HUB_SHAPES[REFERENCE])
    if num_layers:
        values["num_hidden_layers"] = num_layers
    return values


def parameters(backbone: str, num_layers: int | None = None, embeddings: bool = True) -> tuple[int, int]:
    """(parameters, of which Transformer matrices) of a BERT-like encoder; without the
    embedding tables when `embeddings` is False (they are frozen: train_embeddings false)."""
    s = shape(backbone, num_layers)
    h, i, layers = s["hidden_size"], s["intermediate_size"], s["num_hidden_layers"]
    matrices = layers * (4 * h * h + 2 * h * i)
    biases_and_norms = layers * (4 * h + i + h + 4 * h)  # Q, K, V, AO, FFN biases; two LayerNorms
    tables = (s["vocab_size"] + s["max_position_embeddings"] + s.get("type_vocab_size", 2) + 2) * h
    pooler = h * h + h
    return matrices + biases_and_norms + (tables if embeddings else 0) + pooler, matrices


# --- the plan -----------------------------------------------------------------------------------

@dataclass
class PlannedRun:
    section: str
    config: RunConfig
    steps: int
    evaluations: int


def plan(sections: dict[str, list[RunConfig]]) -> list[PlannedRun]:
    """Distinct runs, each under the first section that needs it (dict order)."""
    seen, planned = set(), []
    for section, configs in sections.items():
        for config in configs:
            if config.key() in seen:
                continue
            seen.add(config.key())
            planned.append(PlannedRun(section, config, steps(config), evaluations(config)))
    return planned


def weights_needed(configs: list[RunConfig]) -> set[str]:
    """Keys of the runs whose final weights a later run reads (init_from, teacher)."""
    return {d.key() for c in configs for d in (c.init_from, c.teacher)
            if d is not None and not (d is c.init_from and c.init_step is not None)}


def disk_bytes(planned: list[PlannedRun]) -> dict[str, int]:
    """Bytes kept in the run store: fp32 weights where a later run reads them, steps kept for
    section 5.1, bit-packed masks (one per pruning run, one per level for imp-rw)."""
    configs = [p.config for p in planned]
    needed = weights_needed(configs)
    weights = kept_steps = masks = 0
    for config in configs:
        total, matrices = parameters(config.backbone, config.num_layers, config.train_embeddings)
        if config.key() in needed:
            weights += 4 * total
        kept_steps += 4 * total * len(config.keep_steps)
        if config.is_pruning:
            levels = round(config.sparsity / config.imp_delta_s) if config.method == "imp-rw" else 1
            masks += levels * matrices // 8
    return {"weights": weights, "kept steps (5.1)": kept_steps, "masks": masks}


def load_throughput(path: Path | None = None) -> dict | None:
    """The newest GPU throughput the bench measured for BERT-base (bench/results.json records
    with a "gpu_estimate": steps_per_second, eval_examples_per_second, sharing_speedup, device)."""
    path = path or paths.PROJECT_ROOT / "bench" / "results.json"
    if not path.is_file():
        return None
    records = [r for r in json.loads(path.read_text()) if r.get("gpu_estimate")]
    return records[-1]["gpu_estimate"] if records else None


def gpu_hours(planned: list[PlannedRun], steps_per_second: float, eval_examples_per_second: float,
              runs_per_gpu_speedup: float = 1.0) -> float:
    """Hours on one GPU: each run's steps at `steps_per_second` (measured on BERT-base, scaled
    by the backbone's Transformer-matrix size) plus its evaluations, divided by the aggregate
    speed-up of runs sharing the GPU."""
    _, reference = parameters(REFERENCE)
    seconds = 0.0
    for p in planned:
        scale = parameters(p.config.backbone, p.config.num_layers)[1] / reference
        seconds += scale * (p.steps / steps_per_second
                            + evaluated_rows(p.config, p.evaluations) / eval_examples_per_second)
    return seconds / 3600 / runs_per_gpu_speedup


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
    x = (f"{c.sparsity_init:g}->{c.sparsity:g}" if c.sparsity_init is not None
         else f"{c.sparsity:g}" if c.is_pruning else "-")
    if c.method == "mask" and c.mask_init == "soft":
        x += " soft"
    extra = "+ood" if c.data.ood_train else ""
    return [c.method, c.loss, start, x, c.task + extra, str(c.seed), f"{c.epochs:g}", str(p.steps),
            c.backbone if c.backbone != REFERENCE else ""]


def report(planned: list[PlannedRun], steps_per_second: float | None = None,
           eval_examples_per_second: float | None = None, runs_per_gpu_speedup: float = 1.0,
           source: str = "") -> str:
    header = ["method", "loss", "start", "sparsity", "task", "seed", "epochs", "steps", "backbone"]
    lines = []
    for section in dict.fromkeys(p.section for p in planned):
        rows = [_describe(p) for p in planned if p.section == section]
        section_steps = sum(p.steps for p in planned if p.section == section)
        lines.append(f"== {section}: {len(rows)} runs, {section_steps} optimizer steps ==")
        widths = [max(len(r[i]) for r in rows + [header]) for i in range(len(header))]
        lines += ["  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip() for row in [header, *rows]]
        lines.append("")
    disk = disk_bytes(planned)
    lines.append("disk: " + ", ".join(f"{k} {v / 1e9:.1f} GB" for k, v in disk.items())
                 + f"; total {sum(disk.values()) / 1e9:.1f} GB (plus one resume checkpoint per running run)")
    if steps_per_second:
        hours = gpu_hours(planned, steps_per_second, eval_examples_per_second, runs_per_gpu_speedup)
        lines.append(f"estimated GPU-hours: {hours:.1f} at {steps_per_second:g} BERT-base steps/s, "
                     f"{eval_examples_per_second:g} evaluation examples/s, x{runs_per_gpu_speedup:g} from "
                     f"runs sharing a GPU ({source})")
    else:
        lines.append("estimated GPU-hours: no GPU throughput measured (run `python -m srnets_lib.bench` on the "
                     "GPU, or pass --steps-per-second)")
    total_steps = sum(p.steps for p in planned)
    lines.append(f"TOTAL: {len(planned)} runs, {total_steps} optimizer steps")
    return "\n".join(lines)
