"""The speed benchmark and the book check's chapter list (the browser check itself runs in `make book`)."""

import json

from srnets_lib import bench, paths
from srnets_lib.browser_check import chapters


def test_bench_measures_every_variant_side_by_side(tmp_path):
    out = tmp_path / "results.json"
    assert bench.main(["--models", "tiny", "--workloads", "mask", "--steps", "2", "--warmup", "1",
                       "--max-length", "32", "--out", str(out)]) == 0
    record = json.loads(out.read_text())[-1]
    assert {"date", "device", "torch", "transformers", "matmul_peak_tflops"} <= set(record["environment"])
    rows = {r["variant"]: r for r in record["rows"]}
    assert set(rows) == set(bench.VARIANTS)
    assert rows["naive"]["speedup_vs_naive"] == 1.0
    for row in rows.values():
        assert row["s_per_step"] > 0 and row["examples_per_s"] > 0 and row["tokens_per_s"] > 0
    assert rows["ours"]["padded_tokens_per_step"] is None and rows["naive"]["padded_tokens_per_step"] == 32 * 32


def test_toc_lists_the_intro_and_every_section_notebook():
    names = chapters(paths.PROJECT_ROOT / "_toc.yml")
    assert names[0] == "book/intro"
    assert names[1:] == [f"book/{s}" for s in ("sec4_2", "sec4_3", "sec4_4", "sec4_5", "sec5_1", "sec5_2",
                                               "appc1", "appc5")]
    assert all((paths.PROJECT_ROOT / f"{n}.ipynb").exists() or (paths.PROJECT_ROOT / f"{n}.md").exists()
               for n in names)
