"""The speed benchmark and the book check's chapter list (the browser check itself runs in `make book`)."""

import json

from srnets_lib import bench, paths
from srnets_lib.browser_check import chapters


def test_bench_measures_every_variant_side_by_side(tmp_path):
    out = tmp_path / "results.json"
    assert bench.main(["--models", "tiny", "--workloads", "mask", "eval", "--steps", "2", "--warmup", "1",
                       "--max-length", "32", "--eval-examples", "64", "--out", str(out)]) == 0
    record = json.loads(out.read_text())[-1]
    assert {"date", "device", "torch", "transformers", "matmul_peak_tflops", "cpu_capability"} <= set(record["environment"])
    rows = {(r["workload"], r["variant"]): r for r in record["rows"]}
    assert {v for _, v in rows} == set(bench.CPU_VARIANTS)  # on CPU: the ladder without compiling
    assert rows[("mask", "naive")]["speedup_vs_reference"] == 1.0
    for row in rows.values():
        assert row["s_per_step"] > 0 and row["examples_per_s"] > 0 and row["tokens_per_s"] > 0
    mask = {v: r for (w, v), r in rows.items() if w == "mask"}
    assert mask["ours"]["padded_tokens_per_step"] is None and mask["naive"]["padded_tokens_per_step"] == 32 * 32
    assert "gpu_estimate" not in record  # only measured on a GPU


def test_mnli_like_lengths_have_the_intended_shape():
    lengths = bench.mnli_like(20000, 128).lengths
    assert 36 <= lengths.mean() <= 44 and lengths.max() == 128 and lengths.min() >= 8
    assert (lengths > 100).mean() > 0.005  # a long tail


def test_compiled_variant_and_sharing_run_on_cpu(tmp_path):
    out = tmp_path / "results.json"
    assert bench.main(["--models", "tiny", "--workloads", "mask", "--variants", "ours", "compiled",
                       "--lengths", "mnli-like", "--steps", "2", "--warmup", "1", "--max-length", "64",
                       "--sharing", "1", "2", "--out", str(out)]) == 0
    record = json.loads(out.read_text())[-1]
    assert [r["variant"] for r in record["rows"]] == ["ours", "compiled"]
    assert set(record["sharing_speedup"]) == {"1", "2"} and record["sharing_speedup"]["1"] == 1.0


def test_toc_lists_the_intro_the_scorecard_and_every_section_notebook():
    names = chapters(paths.PROJECT_ROOT / "_toc.yml")
    assert names[0] == "book/intro"
    from srnets_lib.params import SECTIONS

    # the scorecard first, then Part I's sections, then Part II's pages
    assert names[1:] == ["book/scorecard"] + [f"book/{s}" for s in SECTIONS]
    assert all((paths.PROJECT_ROOT / f"{n}.ipynb").exists() or (paths.PROJECT_ROOT / f"{n}.md").exists()
               for n in names)
