"""What a sweep will compute, before computing it: the distinct runs behind a set of notebooks,
their optimizer steps and evaluations (from the configured or published dataset sizes,
never by loading data), the disk their kept files need, and an estimate of GPU-hours.

    python -m srnets_lib plan book/*.ipynb --params params/paper.yaml

prints every distinct run under the first section that needs it, then totals; its last line
is exactly `TOTAL: <N> runs, <M> optimizer steps`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from . import methods, paths
from .config import CORPUS, RunConfig
from .data.tasks import spec
from .request import Request
from .schedule import Schedule

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
    """(ID dev rows, rows scored only where a result reads them: the OOD sets and the ID test
    split) of one evaluation."""
    data = config.data
    if data.source == "synthetic":
        return data.dev_size, data.ood_size + (data.test_size or 0)
    return spec(config.task).dev_rows, spec(config.task).ood_rows


def schedule(config: RunConfig) -> Schedule:
    """The run's schedule (its method's), from the planned number of training examples."""
    return methods.schedule(config, train_rows(config))


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
        dev, ood = eval_rows(self.config)
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
                    planned.append(PlannedRun(section, node.config, node.request, schedule(node.config)))
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


def load_throughput(path: Path | None = None, gpu: str | None = None) -> dict | None:
    """The GPU throughput `bench` measured for BERT-base on one GPU model, the newest figure of each
    kind in bench/results.json: from CUDA rows that ran compiled at mnli-like lengths, mask-training
    steps/s and evaluation examples/s (both needed); the speed-up of runs sharing the GPU (1.0
    where unmeasured); and `full_length`, the eager steps on full-length examples that Part II's
    runs take (long_kind), {(workload, max_length): seconds per step, or for `eval` examples/s}.
    The GPU: the one whose name contains `gpu`, else the one with the most kinds of figures
    measured, the newest mask row breaking ties. Rows of a bench cut short count: each was
    measured whole."""
    path = path or paths.PROJECT_ROOT / "bench" / "results.json"
    if not path.is_file():
        return None
    found = {}
    for record in json.loads(path.read_text()):
        env = record["environment"]
        if env["device"] != "cuda":
            continue
        for row in record["rows"]:
            kind = (row["model"], row["variant"], row["path"], row["lengths"])
            if kind == ("bert-base", "compiled", "compiled", "mnli-like"):
                found[(env["device_name"], row["workload"])] = (row, env["date"])
            elif kind == ("bert-base", "ours", "eager", "full"):
                value = row["examples_per_s"] if row["workload"] == "eval" else row["s_per_step"]
                found[(env["device_name"], (row["workload"], record["args"]["max_length"]))] = (value, env["date"])
        if record.get("sharing_speedup"):
            found[(env["device_name"], "sharing")] = (record["sharing_speedup"], env["date"])
    devices = [d for d, w in found if w == "mask" and (d, "eval") in found
               and (gpu is None or gpu.lower() in d.lower())]
    if not devices:
        return None
    device = max(devices, key=lambda d: (sum(name == d for name, _ in found), found[(d, "mask")][1]))
    (mask, date), (evaluation, _) = found[(device, "mask")], found[(device, "eval")]
    return {"device": device, "steps_per_second": 1.0 / mask["s_per_step"],
            "eval_examples_per_second": evaluation["examples_per_s"],
            "sharing_speedup": found.get((device, "sharing"), ({"1": 1.0}, None))[0], "date": date,
            "full_length": {w: v for (d, w), (v, _) in found.items() if d == device and isinstance(w, tuple)}}


def long_kind(config: RunConfig) -> str | None:
    """The bench workload whose full-length eager step a run takes, or None for the compiled
    128-token steps: the corpus runs' objective (pretraining.py is never compiled; IMP and the MLM
    head train weights on the same objective), SQuAD's span training (eager, build.span_parts) as
    the fine-tuning step on full windows."""
    if config.task == CORPUS:
        return config.loss
    return "finetune" if spec(config.task).kind == "span" else None


def _nearest(full_length: dict, workload: str, length: int) -> tuple[float, int] | None:
    """(value, its max_length) of the measured full-length row of `workload` nearest `length`."""
    lengths = [n for w, n in full_length if w == workload]
    if not lengths:
        return None
    n = min(lengths, key=lambda m: abs(m - length))
    return full_length[(workload, n)], n


def run_seconds(p: PlannedRun, steps_per_second: float, eval_examples_per_second: float,
                full_length: dict | None = None, ood_every: bool | None = None) -> float:
    """Seconds of one run on one GPU, scaled by the backbone's Transformer-matrix size: its steps at
    the measured full-length step of its kind (long_kind; at batch 32, scaled by batch size, and by
    length where measured at another), else at `steps_per_second` (BERT-base, batch 32, length 128)
    scaled by batch x max_length; its evaluations likewise, at the full-length evaluation rate for
    those runs, else at `eval_examples_per_second` scaled by max_length. Attention's quadratic term
    is ignored wherever a length is scaled: an assumption."""
    c, full_length = p.config, full_length or {}
    size = parameters(c.backbone, c.num_layers)[1] / parameters(REFERENCE)[1]
    kind = long_kind(c)
    step = _nearest(full_length, kind, c.max_length) if kind else None
    if step:
        train = p.steps * step[0] * c.batch_size / 32 * c.max_length / step[1]
    else:
        train = p.steps / steps_per_second * c.batch_size * c.max_length / (32 * 128)
    measured = _nearest(full_length, "eval", c.max_length) if kind else None
    tokens_per_second = measured[0] * measured[1] if measured else eval_examples_per_second * 128
    evaluate = p.evaluated_rows(ood_every) * c.max_length / tokens_per_second
    return size * (train + evaluate)


def gpu_hours(planned: list[PlannedRun], steps_per_second: float, eval_examples_per_second: float,
              runs_per_gpu_speedup: float = 1.0, ood_every: bool | None = None,
              full_length: dict | None = None) -> float:
    """Hours on one GPU: every run's run_seconds, divided by the aggregate speed-up of runs
    sharing the GPU."""
    seconds = sum(run_seconds(p, steps_per_second, eval_examples_per_second, full_length, ood_every)
                  for p in planned)
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
    x = methods.get(c.method).describe(c)
    extra = "+ood" if c.data.ood_train else ""
    return [c.method, c.loss, start, x, c.task + extra, str(c.seed), f"{c.epochs:g}", str(p.steps),
            c.backbone if c.backbone != REFERENCE else ""]


def _full_length_rate(full_length: dict, kind: str, length: int) -> str:
    step = _nearest(full_length, kind, length)
    if step is None:
        return f"{kind} at {length} tokens: not measured, the compiled 128-token step scaled by length"
    where = "measured" if step[1] == length else f"measured at {step[1]} tokens, scaled by length"
    return f"{kind} at {length} tokens: {1000 * step[0]:.1f} ms per batch of 32 ({where})"


def _count(n: int) -> str:
    return f"{n / 1e9:.2f}B" if n >= 1e8 else f"{n:,}"


def report(planned: list[PlannedRun], steps_per_second: float | None = None,
           eval_examples_per_second: float | None = None, runs_per_gpu_speedup: float = 1.0,
           source: str = "", full_length: dict | None = None) -> str:
    header = ["method", "loss", "start", "sparsity", "task", "seed", "epochs", "steps", "backbone"]
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
    if steps_per_second:
        hours, hours_every = (gpu_hours(planned, steps_per_second, eval_examples_per_second, runs_per_gpu_speedup,
                                        mode, full_length) for mode in (None, True))
        lines.append(f"estimated GPU-hours: {hours:.1f} as requested, {hours_every:.1f} with eval_ood: every; at "
                     f"{steps_per_second:g} BERT-base steps/s, {eval_examples_per_second:g} evaluation examples/s, "
                     f"x{runs_per_gpu_speedup:g} from runs sharing a GPU ({source})")
        used = sorted({(long_kind(p.config), p.config.max_length) for p in planned if long_kind(p.config)})
        if used:
            lines.append("full-length eager steps (corpus, SQuAD): " + "; ".join(
                _full_length_rate(full_length or {}, kind, n) for kind, n in used))
    else:
        lines.append("estimated GPU-hours: no GPU throughput measured (run `python -m srnets_lib.bench` on the "
                     "GPU, or pass --steps-per-second)")
    total_steps = sum(p.steps for p in planned)
    lines.append(f"TOTAL: {len(planned)} runs, {total_steps} optimizer steps")
    return "\n".join(lines)
