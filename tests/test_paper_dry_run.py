"""params/paper.yaml end to end on CPU: the tiny backbone and a small data folder in every
original format (tests/paper_fixture.py), one seed. Every section's runs are planned and
computed through the sweep; the book build of the same store is the README's documented
command (make book PARAMS=... BOOK_OUT=...)."""

import json

import pytest

from paper_fixture import write_data, write_params
from srnets_lib import params, plan
from srnets_lib.executors import RayExecutor
from srnets_lib.sweep import graph

NOTEBOOKS = [f"book/{s}.ipynb" for s in ("sec4_2", "sec4_3", "sec4_4", "sec4_5", "sec5_1", "sec5_2", "appc1", "appc5")]


@pytest.mark.slow
def test_paper_scale_path_plans_and_runs_every_section(tmp_path, store):
    params_file = write_params(tmp_path, write_data(tmp_path))
    runs, shown = graph(NOTEBOOKS, params.load(params_file))
    planned = plan.plan(shown, runs)
    # one seed of the paper's 232 runs per seed, with C.5 on one stand-in backbone instead of two
    assert len(planned) == len(runs) == 232 - 5
    outcomes = RayExecutor(progress=False).run(runs, store)
    assert [o for o in outcomes if not o.ok] == []
    finals = [json.loads(p.read_text()) for p in store.glob("*/final.json")]
    assert len(finals) == len(planned)
    qqp_poe = [f for f in finals if f["task"] == "paraphrase" and f["loss"] == "poe"]
    assert qqp_poe and all("prediction dropped: 1" in f["data"] for f in qqp_poe)  # the pair without one
    assert all(f["bias_model"].startswith("authors' predictions") for f in finals if f["loss"] != "std")
    imp = [f for f in finals if f["method"] in ("imp", "imp-rw")]
    # each IMP run scores the levels its pages read and its last (Request.levels) and keeps every level's mask
    every = [f"{k / 10:g}" for k in range(1, 10)]
    assert imp and all(set(f["levels"]) <= set(every) and "0.9" in f["levels"] for f in imp)
    assert any(list(f["levels"]) == ["0.2", "0.5", "0.7", "0.9"] for f in imp)  # section 4.2's
    assert all(len(list(store.glob(f"{f['key']}/mask_s*.npz"))) == 9 for f in imp)
    assert {f["metric"] for f in finals if f["task"] == "paraphrase"} == {"f1"}
