"""GPU-hours of planned runs, from the rates `python -m srnets_lib.tools.bench` measured on a GPU
(bench/results.json), each run at the rate measured for how it executes: its precision, its padding
and whether its steps are compiled (on CUDA a classification run's steps and evaluations are; corpus
and SQuAD steps never are: engine/kinds/corpus.py, span.py). A rate measured for another setting is never used:
where one is missing the estimate says which, and the only scalings are by batch size, sequence
length, model size (Transformer matrices) and, for a workload measured at another setting beside
mask training, that measured ratio (said where used)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path

from srnets_lib import paths
from srnets_lib.settings.config import RunConfig
from srnets_lib.engine import kinds
from srnets_lib.model.sizes import REFERENCE_BACKBONE, parameters



@dataclass(frozen=True)
class Setting:
    """How a run's steps execute, which its speed depends on (none of it changes the run's key but
    precision and padding)."""

    precision: str  # fp32 | tf32 | bf16
    padding: str  # max_length: every batch padded to max_length | dynamic: to its longest (compiled: to a bucket)
    compiled: bool
    reference: bool = False  # bench's naive reference: the authors' own code path, not a setting of ours

    def __str__(self) -> str:
        return ("naive " * self.reference) + f"{self.precision}/{self.padding}/{'compiled' if self.compiled else 'eager'}"


AUTHORS = Setting("fp32", "max_length", False, reference=True)
# bench variants of rows written before rows recorded their settings: (precision, padding, compiled)
LEGACY = {"naive": ("fp32", "max_length", False), "fp32 pad": ("fp32", "max_length", False),
          "bf16 pad": ("bf16", "max_length", False), "ours pad": ("bf16", "max_length", False),
          "ours": ("bf16", "dynamic", False), "compiled pad": ("bf16", "max_length", True),
          "compiled": ("bf16", "dynamic", True)}


def row_setting(row: dict) -> Setting | None:
    """The setting a bench row measured (a compiled variant that fell back to eager measured eager)."""
    if "precision" in row:
        precision, padding = row["precision"], row["padding"]
    elif row["variant"] in LEGACY:
        precision, padding, _ = LEGACY[row["variant"]]
    else:
        return None
    return Setting(precision, padding, row["path"] == "compiled", reference=row["variant"] == "naive")


def workload(config: RunConfig) -> tuple[str, str]:
    """(bench workload, lengths) whose step a run takes: its task kind's (engine/kinds)."""
    kind = kinds.of(config.task)
    return kind.workload(kind.settings(config)), kind.lengths


def executes(config: RunConfig, precision: str | None = None, padding: str | None = None) -> Setting:
    """How `config` executes on a GPU (SRNETS_COMPILE=auto: compiled, but corpus and SQuAD runs),
    or would with another `precision` or `padding`."""
    lengths = workload(config)[1]
    return _same_lengths(Setting(precision or config.precision, padding or config.padding, lengths != "full"), lengths)


def _same_lengths(setting: Setting, lengths: str) -> Setting:
    """On full-length examples padding changes nothing: both read as dynamic."""
    return replace(setting, padding="dynamic") if lengths == "full" else setting


@dataclass
class Rates:
    """bert-base rows of one GPU: (workload, lengths, max_length, setting) -> seconds per step at
    batch 32, or for `eval` examples per second; the newest row of each."""

    device: str
    date: str
    rows: dict[tuple, float]
    sharing: dict[str, float] = field(default_factory=dict)  # runs per GPU -> speed-up, measured for
    sharing_setting: Setting = Setting("bf16", "dynamic", True)  # ...runs at this setting (bench --sharing)

    @classmethod
    def load(cls, path: Path | None = None, gpu: str | None = None) -> "Rates | None":
        """The rates of the GPU whose name contains `gpu`, else of the one with the most rows (the
        newest breaking ties); None without a GPU row. A bench cut short counts: each row was
        measured whole."""
        path = path or paths.PROJECT_ROOT / "bench" / "results.json"
        if not path.is_file():
            return None
        found: dict[str, dict] = {}
        for record in json.loads(path.read_text()):
            env = record["environment"]
            if env["device"] != "cuda" or (gpu and gpu.lower() not in env["device_name"].lower()):
                continue
            device = found.setdefault(env["device_name"], {"rows": {}, "date": env["date"], "sharing": {}})
            device["date"] = max(device["date"], env["date"])
            length = record.get("args", {}).get("max_length", 128)
            for row in record["rows"]:
                setting = row_setting(row)
                if row["model"] != "bert-base" or setting is None:
                    continue
                value = row["examples_per_s"] if row["workload"] == "eval" else row["s_per_step"]
                device["rows"][(row["workload"], row["lengths"], length, _same_lengths(setting, row["lengths"]))] = value
            device["sharing"] = record.get("sharing_speedup") or device["sharing"]
        if not found:
            return None
        name = max(found, key=lambda d: (len(found[d]["rows"]), found[d]["date"]))
        return cls(name, found[name]["date"], found[name]["rows"], found[name]["sharing"])

    def _nearest(self, kind: str, lengths: str, max_length: int, setting: Setting) -> tuple[float, int] | None:
        setting = _same_lengths(setting, lengths)
        hits = [(n, v) for (k, l, n, s), v in self.rows.items() if (k, l, s) == (kind, lengths, setting)]
        if not hits:
            return None
        n, value = min(hits, key=lambda h: abs(h[0] - max_length))
        return value, n

    def step(self, kind: str, lengths: str, max_length: int, setting: Setting) -> tuple[float, int, str] | None:
        """(seconds per batch of 32, the length measured, how) of one step; a workload without a row
        at `setting` takes mask training's there times their ratio measured at another setting."""
        direct = self._nearest(kind, lengths, max_length, setting)
        if direct:
            return (*direct, "measured")
        mask = self._nearest("mask", lengths, max_length, setting)
        if mask is None or kind == "mask":
            return None
        def unlike(item):  # the most similar setting first: compiled or not, precision, padding
            other = item[0][3]
            return (other.compiled != setting.compiled, other.precision != setting.precision,
                    other.padding != setting.padding, str(other))

        for (k, l, n, other), value in sorted(self.rows.items(), key=unlike):
            base = self.rows.get(("mask", l, n, other))
            if (k, l) == (kind, lengths) and base and other.reference == setting.reference:
                return mask[0] * value / base, mask[1], f"{kind} steps scaled from mask's by their ratio at {other}"
        return None

    def evaluation(self, lengths: str, max_length: int, setting: Setting) -> tuple[float, int] | None:
        """(examples per second, the length measured) of evaluation: batches padded to their longest
        (compiled: a bucket), whatever the training padding; the authors' reference pads them too."""
        evaluated = setting if setting.reference else replace(setting, padding="dynamic")
        return self._nearest("eval", lengths, max_length, evaluated)


def size_factor(config: RunConfig) -> float:
    """The run's Transformer matrices relative to BERT-base's (compute scales with them)."""
    return parameters(config.backbone, config.num_layers)[1] / parameters(REFERENCE_BACKBONE)[1]


def run_seconds(p, rates: Rates, setting: Setting, ood_every: bool | None = None):
    """(seconds of one planned run at `setting` on one GPU, None where a rate is missing; what is
    missing; how its rates were taken). Steps at the measured step of its workload (batch 32,
    scaled by batch size and by length where measured at another), evaluations at the measured
    evaluation rate scaled by length. Attention's quadratic term is ignored wherever a length is
    scaled: an assumption."""
    c = p.config
    kind, lengths = workload(c)
    train, missing, notes = 0.0, [], []
    if p.steps:
        measured = rates.step(kind, lengths, c.max_length, setting)
        if measured is None:
            missing.append(f"{kind} at {setting} ({lengths})")
        else:
            seconds, n, how = measured
            train = p.steps * seconds * c.batch_size / 32 * c.max_length / n
            notes += [how] if how != "measured" else []
    evaluation = rates.evaluation(lengths, c.max_length, setting)
    if evaluation is None:
        missing.append(f"eval at {setting if setting.reference else replace(setting, padding='dynamic')} ({lengths})")
        return None, missing, notes
    rate, n = evaluation
    evaluate = p.evaluated_rows(ood_every) * c.max_length / (rate * n)
    return (None if missing else size_factor(c) * (train + evaluate)), missing, notes


def gpu_hours(planned: list, rates: Rates, setting=None, ood_every: bool | None = None, runs_per_gpu: int = 1):
    """(hours on one GPU or None, what is missing, notes) of every planned run at its own setting
    (`setting` None), or at `setting(config)`; a run at the setting whose sharing bench measured
    (`bench --sharing`) divided by the speed-up of `runs_per_gpu` runs sharing the GPU."""
    total, missing, notes = 0.0, [], []
    for p in planned:
        chosen = setting(p.config) if setting else executes(p.config)
        seconds, lacking, how = run_seconds(p, rates, chosen, ood_every)
        missing += sorted(m for m in lacking if m not in missing)
        notes += [n for n in how if n not in notes]
        shared = rates.sharing.get(str(runs_per_gpu), 1.0) if chosen == rates.sharing_setting else 1.0
        total += (seconds or 0.0) / shared
    return (None if missing else total / 3600), missing, notes


class Assumed(Rates):
    """Rates given on the command line (plan --steps-per-second): one training step rate and one
    evaluation rate for every workload and setting, as BERT-base at batch 32 and 128 tokens."""

    def __init__(self, steps_per_second: float, eval_examples_per_second: float):
        super().__init__("assumed", "", {})
        self.seconds, self.examples = 1.0 / steps_per_second, eval_examples_per_second

    def step(self, kind, lengths, max_length, setting):
        return self.seconds, 128, "measured"

    def evaluation(self, lengths, max_length, setting):
        return self.examples, 128


# the faster settings a params file may switch to, each a deviation from the authors (precision,
# padding; the book's settings page, book/deviations.md, lists them)
ALTERNATIVES = (("tf32", None), ("bf16", None), ("fp32", "dynamic"), ("tf32", "dynamic"), ("bf16", "dynamic"))
BENCH = ("python -m srnets_lib.tools.bench --models bert-base --workloads mask finetune imp eval --variants "
         "'compiled fp32 pad' 'compiled tf32 pad' 'compiled fp32' 'compiled tf32' (and for the corpus and "
         "SQuAD steps: --workloads mlm kd mlm+kd finetune eval --lengths full --max-length 512 --variants "
         "'fp32 pad' 'tf32 pad')")


# where the authors score every OOD set at every evaluation (eval_ood: every): their trainers
AUTHORS_EVALUATION = ("hg_transformers/mask_trainer.py:676-681, trainer.py:587-592 and trainer_imp.py:709-713 "
                      "of llyx97/sparse-and-robust-PLM")


def _hours(planned, rates, setting, runs_per_gpu, authors: bool = False) -> str:
    """One row's figure: our rows with evaluation as requested first (eval_ood: every beside it);
    the authors' row with their evaluation first (every OOD set at every evaluation)."""
    first, second = (True, None) if authors else (None, True)
    hours, missing, notes = gpu_hours(planned, rates, setting, first, runs_per_gpu)
    if hours is None:
        return "not measured (no bench row for " + "; ".join(missing) + ")"
    other, _, _ = gpu_hours(planned, rates, setting, second, runs_per_gpu)
    beside = "with this project's evaluation, execution.eval_ood" if authors else "with eval_ood: every"
    return f"{hours:.1f} ({other:.1f} {beside})" + "".join(f"; {n}" for n in notes)


def assumptions(planned: list, rates: Rates, setting, runs_per_gpu: int, authors: bool = False) -> str:
    """What a row's figure assumes, printed beside it: the evaluation, the lengths its padded or
    dynamic batches have, and how runs sharing a GPU are priced."""
    chosen = [(p.config, setting(p.config) if setting else executes(p.config)) for p in planned if p.steps]
    said = [f"every OOD set scored at every evaluation, as the authors' trainers do ({AUTHORS_EVALUATION})"
            if authors else "evaluation as the params request (execution.eval_ood)"]
    lengths = sorted({c.task for c, _ in chosen if workload(c)[1] == "mnli-like"})
    if lengths and authors:
        said.append("training and evaluation batches padded to max_length")
    elif lengths:
        dynamic = any(s.padding == "dynamic" for c, s in chosen if workload(c)[1] == "mnli-like")
        what = "training and evaluation batches" if dynamic else "training padded to max_length, evaluation batches"
        others = [t for t in lengths if t not in ("nli", "mnli")]
        said.append(f"{what} at bench's mnli-like lengths (generated as MNLI's)"
                    + (f", for {' and '.join(others)} too (their own lengths bench has not measured)" if others else ""))
    shared = rates.sharing.get(str(runs_per_gpu))
    if runs_per_gpu > 1 and not authors:
        at = sum(s == rates.sharing_setting for _, s in chosen)
        said.append(f"{runs_per_gpu} runs sharing a GPU: x{shared:.2f} (bench --sharing) for the {at} runs at "
                    f"{rates.sharing_setting}, their one-run speed for the others" if shared and at else
                    f"{runs_per_gpu} runs sharing a GPU at their one-run speed (sharing measured only at "
                    f"{rates.sharing_setting})")
    else:
        said.append("one run per GPU")
    return "      assumes: " + "; ".join(said)


def lines(planned: list, rates: Rates | None, runs_per_gpu: int = 1) -> list[str]:
    """The plan's GPU-hours: as planned (each run at its own setting), with each faster setting, and
    the authors' own code path, each with what it assumes on the line below; a setting bench has not
    measured reads "not measured"."""
    if rates is None:
        return ["GPU-hours: no GPU rate measured (run `python -m srnets_lib.tools.bench` on the GPU, or pass "
                "--steps-per-second)"]
    own = sorted({str(executes(p.config)) for p in planned if p.steps})
    source = ("assumed (--steps-per-second), not measured" if isinstance(rates, Assumed)
              else f"rates measured by bench on {rates.device}, newest {rates.date}")
    out = [f"GPU-hours on one GPU ({source}):",
           f"  as planned ({', '.join(own) or 'no training'}): {_hours(planned, rates, None, runs_per_gpu)}",
           assumptions(planned, rates, None, runs_per_gpu)]
    for precision, padding in ALTERNATIVES:
        if all(p.config.precision == precision and p.config.padding == (padding or p.config.padding) for p in planned):
            continue
        what = f"precision {precision}" + (f", padding {padding}" if padding else "")
        chosen = (lambda c, pr=precision, pa=padding: executes(c, pr, pa))
        out += [f"  with {what}: {_hours(planned, rates, chosen, runs_per_gpu)}",
                assumptions(planned, rates, chosen, runs_per_gpu)]
    if not isinstance(rates, Assumed):
        out += [f"  the authors' code (bench's naive reference: fp32, padded, eager, autograd through every frozen "
                f"weight): {_hours(planned, rates, lambda c: AUTHORS, 1, authors=True)}",
                assumptions(planned, rates, lambda c: AUTHORS, 1, authors=True)]
    if any("not measured" in line for line in out):
        out.append(f"  (measure the missing rates on the GPU: {BENCH})")
    return out
