"""The speed benchmark and the book check's chapter list (the browser check itself runs in `make book`)."""

import json

import numpy as np
import pytest

from srnets_lib.tools.bench import measure, workloads
from srnets_lib.tools.bench import __main__ as bench_main
from srnets_lib.tools.bench.__main__ import main as bench
from srnets_lib import paths
from srnets_lib.tools.browser_check import chapters


def test_bench_measures_every_variant_side_by_side(tmp_path):
    out = tmp_path / "results.json"
    assert bench(["--models", "tiny", "--workloads", "mask", "eval", "--steps", "2", "--warmup", "1",
                       "--max-length", "32", "--eval-examples", "64", "--out", str(out)]) == 0
    record = json.loads(out.read_text())[-1]
    assert {"date", "device", "torch", "transformers", "matmul_peak_tflops", "cpu_capability"} <= set(record["environment"])
    rows = {(r["workload"], r["variant"]): r for r in record["rows"]}
    assert {v for _, v in rows} == set(workloads.CPU_VARIANTS)  # on CPU: the ladder without compiling
    assert rows[("mask", "naive")]["speedup_vs_reference"] == 1.0
    for row in rows.values():
        assert row["s_per_step"] > 0 and row["examples_per_s"] > 0 and row["tokens_per_s"] > 0
    mask = {v: r for (w, v), r in rows.items() if w == "mask"}
    assert mask["ours"]["padded_tokens_per_step"] is None and mask["naive"]["padded_tokens_per_step"] == 32 * 32
    assert record["complete"] is True
    # "ours" is the path params/toy.yaml's runs take on this CPU: fp32 (bf16 autocast is emulated,
    # several times slower, on CPUs without native bf16)
    assert mask["ours"]["precision"] == mask["ours pad"]["precision"] == "fp32" and mask["bf16 pad"]["precision"] == "bf16"


def test_ours_takes_the_precision_of_the_params_file_the_machine_runs(tmp_path, capsys):
    params = tmp_path / "bf16.yaml"
    params.write_text(f"base: {paths.PROJECT_ROOT / 'params' / 'toy.yaml'}\ndefaults: {{precision: bf16}}\n")
    out = tmp_path / "results.json"
    assert bench(["--models", "tiny", "--workloads", "mask", "--variants", "naive", "ours", "--steps", "1",
                  "--warmup", "1", "--max-length", "32", "--params", str(params), "--out", str(out)]) == 0
    assert f"'ours' at bf16, the precision of {params}" in capsys.readouterr().out
    assert [r["precision"] for r in json.loads(out.read_text())[-1]["rows"]] == ["fp32", "bf16"]


def test_an_interrupted_bench_keeps_its_measured_rows_marked_incomplete(tmp_path, monkeypatch):
    out, measured = tmp_path / "results.json", []
    real = measure.measure

    def stopped_after_one(*args, **kwargs):
        if measured:
            raise KeyboardInterrupt
        measured.append(real(*args, **kwargs))
        return measured[-1]

    monkeypatch.setattr(bench_main, "measure", stopped_after_one)
    try:
        bench(["--models", "tiny", "--workloads", "mask", "--variants", "naive", "ours", "--steps", "1",
                    "--warmup", "1", "--max-length", "32", "--out", str(out)])
    except KeyboardInterrupt:
        pass
    record = json.loads(out.read_text())[-1]
    assert record["complete"] is False and [r["variant"] for r in record["rows"]] == ["naive"]


def test_mnli_like_lengths_have_the_intended_shape():
    lengths = workloads.mnli_like(20000, 128).lengths
    assert 36 <= lengths.mean() <= 44 and lengths.max() == 128 and lengths.min() >= 8
    assert (lengths > 100).mean() > 0.005  # a long tail


def test_compiled_variant_and_sharing_run_on_cpu(tmp_path):
    out = tmp_path / "results.json"
    assert bench(["--models", "tiny", "--workloads", "mask", "--variants", "ours", "compiled",
                       "--lengths", "mnli-like", "--steps", "2", "--warmup", "1", "--max-length", "64",
                       "--sharing", "1", "2", "--out", str(out)]) == 0
    record = json.loads(out.read_text())[-1]
    assert [r["variant"] for r in record["rows"]] == ["ours", "compiled"]
    assert set(record["sharing_speedup"]) == {"1", "2"} and record["sharing_speedup"]["1"] == 1.0


def test_tamt_objectives_run_on_full_blocks_eagerly(tmp_path):
    """TAMT's mask training (mlm, kd, mlm+kd) on corpus blocks of exactly --max-length tokens; the
    objectives are never compiled, so a compiled variant has no row."""
    out = tmp_path / "results.json"
    assert bench(["--models", "tiny", "--workloads", "mlm", "mlm+kd", "--variants", "naive", "ours", "compiled",
                       "--lengths", "full", "--steps", "1", "--warmup", "1", "--max-length", "32",
                       "--out", str(out)]) == 0
    rows = json.loads(out.read_text())[-1]["rows"]
    assert [(r["workload"], r["variant"]) for r in rows] == [("mlm", "naive"), ("mlm", "ours"),
                                                            ("mlm+kd", "naive"), ("mlm+kd", "ours")]
    assert all(r["tokens_per_s"] == pytest.approx(32 * r["examples_per_s"]) and r["path"] == "eager" for r in rows)


def test_a_training_batch_corrupts_tokens_only_for_the_mlm_objective():
    encoded = workloads.full_length(64, 128)
    index = np.arange(64)
    mlm = workloads.training_batch(encoded, index, None, "mlm", 30522, np.random.default_rng(0))
    predicted = mlm["labels"] != -100
    assert 0.10 < float(predicted.float().mean()) < 0.20  # 15% of the tokens (pretraining.MLM_PROBABILITY)
    assert workloads.training_batch(encoded, index, None, "kd", 30522, np.random.default_rng(0))["labels"] is None
    task = workloads.training_batch(encoded, index, None, "mask", 30522, np.random.default_rng(0))
    assert task["labels"].tolist() == encoded.labels.tolist()


def test_toc_lists_the_intro_the_scorecard_and_every_section_notebook():
    names = chapters(paths.PROJECT_ROOT / "_toc.yml")
    assert names[0] == "book/intro"
    from srnets_lib.settings.pages import SECTIONS

    # the scorecard first, then Part I's sections, then Part II's pages, then the appendix: the
    # settings that differ from the authors' runs, and the synthetic data
    assert names[1:] == ["book/scorecard"] + [f"book/{s}" for s in SECTIONS] + ["book/deviations", "book/synthetic_data"]
    assert all((paths.PROJECT_ROOT / f"{n}.ipynb").exists() or (paths.PROJECT_ROOT / f"{n}.md").exists()
               for n in names)


def test_lengths_counts_a_files_word_pieces_beside_benchs_mnli_like_ones(tmp_path, capsys):
    """What plan's rows assume for QQP and FEVER (bench's MNLI-like lengths) checked against the
    real files on a CPU: [CLS] paris [SEP] france [SEP] is 5 word pieces, the longer pair 10."""
    from srnets_lib.tools.bench.lengths import main as lengths

    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text('{"claim": "Paris", "evidence": "France", "gold_label": "SUPPORTS"}\n'
                     '{"claim": "Paris is big", "evidence": "France is a country", "gold_label": "REFUTES"}\n')
    assert lengths(["fever", str(pairs)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"{pairs}: 2 pairs: mean 7.5 word pieces, median 8, 90% 10, 99% 10, 0.0% at 128"
    assert out[1].startswith("bench's mnli-like lengths (generated): 4,096 pairs: mean 39.5 word pieces")
