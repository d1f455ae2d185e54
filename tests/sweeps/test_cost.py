"""GPU-hours from bench's rates: each run costed at the rate measured for its own precision, padding
and path, never at another setting's; what is not measured reads "not measured"."""

import json
from types import SimpleNamespace

import pytest

from srnets_lib.tools.bench.__main__ import main as bench
from srnets_lib.sweeps import cost
from srnets_lib.settings.config import RunConfig


def _record(name, date, rows, sharing=None, device="cuda", max_length=128):
    return {"environment": {"device": device, "device_name": name, "date": date}, "rows": rows,
            "sharing_speedup": sharing, "args": {"max_length": max_length}}


def _row(workload, seconds, variant="compiled", path="compiled", lengths="mnli-like", **setting):
    row = {"model": "bert-base", "workload": workload, "variant": variant, "path": path, "lengths": lengths,
           "s_per_step": seconds, "examples_per_s": 32 / seconds}
    return {**row, **setting}


def _rates(tmp_path, records, gpu=None):
    out = tmp_path / "results.json"
    out.write_text(json.dumps(records))
    return cost.Rates.load(out, gpu)


def _planned(config, steps=1000, evaluated=0):
    return SimpleNamespace(config=config, steps=steps, evaluated_rows=lambda ood_every=None: evaluated)


FP32_PADDED = RunConfig(task="nli", method="mask", loss="std", sparsity=0.7, backbone="bert-base-uncased",
                        precision="fp32", padding="max_length")


def test_a_run_is_costed_only_at_the_rate_measured_for_its_own_setting(tmp_path):
    """params/paper.yaml runs fp32 padded to 128, compiled on a GPU: bf16 rows never price it."""
    bf16 = [_row("mask", 0.01), _row("eval", 0.01)]  # "compiled": bf16, bucketed lengths
    rates = _rates(tmp_path, [_record("H100", "2026-01-02", bf16)])
    hours, missing, _ = cost.gpu_hours([_planned(FP32_PADDED, 3600, 32_000)], rates)
    assert hours is None and missing == ["eval at fp32/dynamic/compiled (mnli-like)",
                                         "mask at fp32/max_length/compiled (mnli-like)"]
    own = [_row("mask", 0.02, "compiled fp32 pad", precision="fp32", padding="max_length"),
           _row("eval", 0.01, "compiled fp32", precision="fp32", padding="dynamic")]
    rates = _rates(tmp_path, [_record("H100", "2026-01-02", bf16 + own)])
    hours, missing, _ = cost.gpu_hours([_planned(FP32_PADDED, 3600, 32_000)], rates)
    # 3600 steps at 0.02 s; 32,000 examples at 3,200 examples/s
    assert missing == [] and hours == pytest.approx((3600 * 0.02 + 32_000 / 3200) / 3600)
    bf16_run = FP32_PADDED.model_copy(update={"precision": "bf16", "padding": "dynamic"})
    assert cost.gpu_hours([_planned(bf16_run, 3600, 0)], rates)[0] == pytest.approx(3600 * 0.01 / 3600)


def test_the_report_prices_the_plan_as_planned_each_faster_switch_and_the_authors_code(tmp_path):
    rows = [_row("mask", 0.01), _row("eval", 0.01), _row("finetune", 0.008),
            _row("mask", 0.07, "naive", "eager"), _row("eval", 0.02, "naive", "eager")]
    rates = _rates(tmp_path, [_record("H100", "2026-01-02", rows)])
    finetune = FP32_PADDED.model_copy(update={"method": "finetune", "sparsity": 0.0})
    text = "\n".join(cost.lines([_planned(FP32_PADDED, 360_000), _planned(finetune, 360_000)], rates))
    assert "as planned (fp32/max_length/compiled): not measured" in text
    assert "with precision tf32: not measured" in text
    assert f"with precision bf16, padding dynamic: {(360_000 * 0.01 + 360_000 * 0.008) / 3600:.1f}" in text
    # the authors' code (bench's naive reference) is never priced by our own steps' ratios
    assert "the authors' code (bench's naive reference: fp32, padded, eager, autograd through every frozen weight): not measured" in text
    assert "python -m srnets_lib.tools.bench" in text  # how to measure what is missing
    # with bf16 padded to max_length, fine-tuning is priced by its ratio to mask training measured at the
    # most similar setting (the compiled bf16 rows), and the line says so
    rows += [_row("mask", 0.02, "compiled pad", precision="bf16", padding="max_length"),
             _row("finetune", 0.06, "naive", "eager")]
    rates = _rates(tmp_path, [_record("H100", "2026-01-02", rows)])
    text = "\n".join(cost.lines([_planned(FP32_PADDED, 360_000), _planned(finetune, 360_000)], rates))
    assert (f"with precision bf16: {(360_000 * 0.02 + 360_000 * 0.02 * 0.008 / 0.01) / 3600:.1f} "
            in text) and "finetune steps scaled from mask's by their ratio at bf16/dynamic/compiled" in text
    assert f"the authors' code (bench's naive reference: fp32, padded, eager, autograd through every frozen weight): {(360_000 * 0.07 + 360_000 * 0.06) / 3600:.1f}" in text


def test_each_figure_says_what_it_assumes_and_the_authors_row_evaluates_as_they_did(tmp_path):
    """The authors' row scores every OOD set at every evaluation (their trainers), our rows the
    evaluation the params request, the other beside it; below each figure what it assumes: the
    evaluation, the lengths (bench's MNLI-like ones for QQP and FEVER too), GPU sharing."""
    rows = [_row("mask", 0.01), _row("eval", 0.01), _row("finetune", 0.008),
            _row("mask", 0.07, "naive", "eager"), _row("eval", 0.02, "naive", "eager"),
            _row("finetune", 0.06, "naive", "eager")]
    rates = _rates(tmp_path, [_record("H100", "2026-01-02", rows, sharing={"1": 1.0, "4": 1.25})])
    planned = [_planned(FP32_PADDED.model_copy(update={"task": task}), 3600, 0) for task in ("nli", "factcheck")]
    for p in planned:  # 32,000 examples as requested, 96,000 with every OOD set at every evaluation
        p.evaluated_rows = lambda ood_every=None: 96_000 if ood_every else 32_000
    text = cost.lines(planned, rates, runs_per_gpu=4)
    authors = next(i for i, line in enumerate(text) if line.startswith("  the authors' code"))
    every, requested = ((2 * 3600 * 0.07 + 2 * n / 1600) / 3600 for n in (96_000, 32_000))
    assert text[authors].endswith(f": {every:.1f} ({requested:.1f} with this project's evaluation, execution.eval_ood)")
    assert "every OOD set scored at every evaluation, as the authors' trainers do (hg_transformers/mask_trainer.py" \
           in text[authors + 1] and text[authors + 1].endswith("one run per GPU")
    dynamic = next(i for i, line in enumerate(text) if line.startswith("  with precision bf16, padding dynamic"))
    assert text[dynamic + 1] == ("      assumes: evaluation as the params request (execution.eval_ood); training and "
                                 "evaluation batches at bench's mnli-like lengths (generated as MNLI's), for factcheck "
                                 "too (their own lengths bench has not measured); 4 runs sharing a GPU: x1.25 (bench "
                                 "--sharing) for the 2 runs at bf16/dynamic/compiled, their one-run speed for the others")
    assert text[dynamic].startswith(f"  with precision bf16, padding dynamic: "
                                    f"{(2 * 3600 * 0.01 + 2 * 32_000 / 3200) / 1.25 / 3600:.1f} (")


def test_rates_are_the_newest_rows_of_one_gpu(tmp_path):
    assert _rates(tmp_path, [_record("x86_64", "2026-01-01", [_row("mask", 1.0)], device="cpu")]) is None
    records = [_record("H100", "2026-01-02", [_row("mask", 0.01), _row("eval", 0.02)]),
               _record("H100", "2026-01-03", [_row("mask", 0.002, path="eager (compiling failed: x)"),
                                              _row("mask", 0.008)], sharing={"1": 1.0, "4": 1.5})]
    rates = _rates(tmp_path, records)
    compiled = cost.Setting("bf16", "dynamic", True)
    assert rates.step("mask", "mnli-like", 128, compiled) == (0.008, 128, "measured")  # the newest
    assert rates.step("mask", "mnli-like", 128, cost.Setting("bf16", "dynamic", False))[0] == 0.002  # it ran eager
    assert rates.sharing == {"1": 1.0, "4": 1.5} and rates.device == "H100"
    h200 = _record("H200", "2026-01-05", [_row("mask", 0.005)])
    assert _rates(tmp_path, records + [h200]).device == "H100"  # the newer H200 has fewer rows
    assert _rates(tmp_path, records + [h200], gpu="h200").step("mask", "mnli-like", 128, compiled)[0] == 0.005
    assert _rates(tmp_path, records, gpu="A100") is None


def test_corpus_and_squad_runs_are_costed_at_their_eager_full_length_steps(tmp_path):
    """Part II's corpus runs (512-token blocks) and SQuAD (384-token windows) run eagerly: their steps
    cost the eager full-length step of their kind, scaled by batch and length; an unmeasured
    objective is not measured, never the classification step."""
    full = [_row("mlm", 0.04, "fp32 pad", "eager", "full", precision="fp32", padding="max_length"),
            _row("eval", 1 / 100, "fp32 pad", "eager", "full", precision="fp32", padding="max_length")]
    rates = _rates(tmp_path, [_record("H100", "2026-01-02", [_row("mask", 0.01)]),
                              _record("H100", "2026-01-03", full, max_length=512)])
    corpus = RunConfig(task="corpus", method="mask", loss="mlm", sparsity=0.7, max_length=512, batch_size=32,
                       backbone="bert-base-uncased", padding="dynamic", select="last")
    seconds = lambda config: cost.run_seconds(_planned(config), rates, cost.executes(config))[0]  # noqa: E731
    assert seconds(corpus) == pytest.approx(1000 * 0.04)
    assert seconds(corpus.model_copy(update={"max_length": 256})) == pytest.approx(1000 * 0.04 / 2)
    assert seconds(corpus.model_copy(update={"loss": "kd"})) is None


def test_bench_rows_record_the_setting_plan_reads(tmp_path):
    out = tmp_path / "results.json"
    assert bench(["--models", "tiny", "--workloads", "mask", "--variants", "naive", "fp32 pad", "ours",
                       "--steps", "1", "--warmup", "1", "--max-length", "32", "--out", str(out)]) == 0
    rows = json.loads(out.read_text())[-1]["rows"]
    assert [(r["precision"], r["padding"], r["compiled"]) for r in rows] == [  # ours: params/toy.yaml's fp32
        ("fp32", "max_length", False), ("fp32", "max_length", False), ("fp32", "dynamic", False)]
    assert [cost.row_setting(r) for r in rows] == [cost.AUTHORS, cost.Setting("fp32", "max_length", False),
                                                   cost.Setting("fp32", "dynamic", False)]


def test_the_readme_and_the_introduction_state_the_plans_own_costs():
    """The README's cost table and the introduction's sentence are what `plan` prints for
    params/paper.yaml from bench/results.json (four runs sharing a GPU, plan's default)."""
    from srnets_lib.settings import params
    from srnets_lib import paths
    from srnets_lib.sweeps import plan
    from srnets_lib.sweeps.executors import RUNS_PER_GPU
    from srnets_lib.book.runs import of_notebooks as graph

    paper, rates = params.load("params/paper.yaml"), cost.Rates.load()
    readme, intro = ((paths.PROJECT_ROOT / name).read_text() for name in ("README.md", "book/intro.md"))
    book = sorted(f"book/{p.name}" for p in paths.BOOK_DIR.glob("*.ipynb"))
    settings = {"as planned": None, "bf16": lambda c: cost.executes(c, "bf16"),
                "bf16 dynamic": lambda c: cost.executes(c, "bf16", "dynamic"), "authors": lambda c: cost.AUTHORS}
    hours = {}
    for part in (1, 2, None):
        runs, shown = graph(book, paper, part=part)
        planned = plan.plan(shown, runs)
        for name, setting in settings.items():  # the authors' row with their evaluation, on one GPU each
            value = (cost.gpu_hours(planned, rates, setting, True, 1) if name == "authors"
                     else cost.gpu_hours(planned, rates, setting, None, RUNS_PER_GPU))[0]
            hours[name, part] = "not measured" if value is None else f"{value:.1f}"
    row = lambda name: " | ".join(hours[name, part] for part in (1, 2, None)) + " |"  # noqa: E731
    assert hours["as planned", None] == "not measured"  # no GPU has measured the authors' setting yet
    assert f"| GPU-hours as `paper.yaml` runs them (fp32, padded to 128, compiled; corpus and SQuAD eager) | {row('as planned')}" in readme
    assert f"| ... with `precision: bf16` | {row('bf16')}" in readme
    assert f"| ... with `precision: bf16, padding: dynamic` | {row('bf16 dynamic')}" in readme
    assert (f"| the authors' own code path (bench's naive reference: fp32, padded, eager; every OOD set at every "
            f"evaluation, as their trainers score them) | {row('authors')}") in readme
    text = " ".join(intro.split())
    assert (f"with `precision: bf16` {hours['bf16', 1]} for Part I and {hours['bf16', None]} for both parts; with bf16 "
            f"and `padding: dynamic` {hours['bf16 dynamic', 1]} and {hours['bf16 dynamic', None]}; the authors' own code "
            f"path (fp32, padded, eager, every OOD set scored at every evaluation) {hours['authors', 1]} and "
            f"{hours['authors', None]}") in text
