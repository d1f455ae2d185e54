"""The numbers of docs/ARCHITECTURE.md's trace, pinned: on the tiny model, a std full model, mask
training (PoE, 50%) on it, IMP (20%) on it and mask training on the corpus (MLM), 2 steps each,
run for real through the sweep's executor; their scores, sparsity and selected step against
tests/trace/golden.json, and the 4.2 verdict built from them.

A change that moves a pinned number fails here in about a minute (`make check`). Where the change
is meant to move it, regenerate the file and commit it with the change, saying why:

    .venv/bin/python tests/trace/test_golden.py --write

Tolerances (docs/MEASUREMENTS.md "The golden runs"): the measured spread between torch's CPU
kernels (AVX-512, AVX2, no vector unit) and thread counts on these runs is zero; another CPU may
pick other MKL kernels, so a loss may move by a relative 1e-4 and a score by one example of its
split (a prediction inside that spread may flip); the sparsity, the selected step and the key exactly.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pandas as pd
import pytest

from srnets_lib.book.sections.srnet_claims import SubnetworkVsFull
from srnets_lib.settings.config import DataConfig, RunConfig
from srnets_lib.settings.request import Request
from srnets_lib.store.runs import Run
from srnets_lib.sweeps.executors import execute

GOLDEN = Path(__file__).with_name("golden.json")
DATA = DataConfig(train_size=64, dev_size=32, test_size=32, ood_size=32)
COMMON = dict(backbone="tiny", data=DATA, epochs=1, batch_size=32, eval_interval=1, max_length=48, lr=1e-3)
LOSS_RTOL = 1e-4


def trace() -> dict[str, RunConfig]:
    """The four runs of the trace, by name (the mask and IMP runs start from the std model)."""
    full = RunConfig(task="nli", **COMMON)
    return {"full (std)": full,
            "mask (poe) 0.5": RunConfig(task="nli", method="mask", loss="poe", sparsity=0.5, init_from=full,
                                        **{**COMMON, "lr": 1e-2}),
            "imp (std) 0.2": RunConfig(task="nli", method="imp", sparsity=0.2, init_from=full, imp_interval=1,
                                       **COMMON),
            "corpus mask (mlm) 0.5": RunConfig(task="corpus", method="mask", loss="mlm", sparsity=0.5, max_steps=2,
                                               select="last", **{**COMMON, "lr": 1e-2, "max_length": 32,
                                                                 "batch_size": 8})}


def numbers(config: RunConfig) -> dict:
    """What is pinned of a finished run: its scores, sparsity, selected step and logged losses."""
    result = execute(config, Request(weights=config.method == "finetune"))  # the others start from its weights
    losses = [row["loss"] for row in Run(config).metrics() if "loss" in row]
    return {"key": config.key(), "id": result.id, "ood": dict(sorted(result.ood.items())),
            "scores": dict(sorted(result.scores.items())),  # the corpus run's held-out losses
            "levels": {level: scores.id for level, scores in sorted(result.levels.items())},  # IMP's
            "sparsity": [result.sparsity_min, result.sparsity_max], "selected_step": result.selected_step,
            "losses": losses, "ood_examples": DATA.ood_size,
            # a score's split size; None where the ID score is a loss (the corpus run: no OOD set)
            "id_examples": DATA.test_size if result.ood else None}


def measured() -> dict[str, dict]:
    return {name: numbers(config) for name, config in trace().items()}


def verdict(found: dict[str, dict]):
    """Section 4.2's claim that the PoE mask keeps the full model's ID score and gains OOD, judged
    on the pinned runs (one seed) as the page judges its frame."""
    rows = [("full bert (std)", 0.0, found["full (std)"]), ("mask train (poe)", 0.5, found["mask (poe) 0.5"])]
    df = pd.DataFrame([{"task": "nli", "series": s, "seed": 1, "x": x, "id": n["id"], **{f"ood:{k}": v for k, v in
                        n["ood"].items()}, "reference": s.startswith("full"), "group": ""} for s, x, n in rows])
    v, = SubnetworkVsFull("mask train (poe)", xs=(0.5,)).evaluate(df)
    return v


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SRNETS_RUNS", str(tmp_path_factory.mktemp("golden") / "runs"))
        yield measured()


def test_the_trace_computes_the_pinned_numbers(runs):
    golden = json.loads(GOLDEN.read_text())["runs"]
    assert sorted(runs) == sorted(golden)
    for name, pinned in golden.items():
        got, where = runs[name], f"{name} (run {pinned['key']}); regenerate: python tests/trace/test_golden.py --write"
        assert got["key"] == pinned["key"], f"{where}: its run key changed"
        assert got["sparsity"] == pytest.approx(pinned["sparsity"], abs=1e-9), where
        assert got["selected_step"] == pinned["selected_step"], where
        assert got["losses"] == pytest.approx(pinned["losses"], rel=LOSS_RTOL), where
        assert got["scores"] == pytest.approx(pinned["scores"], rel=LOSS_RTOL), where
        one = 1 / pinned["id_examples"] + 1e-9 if pinned["id_examples"] else None
        assert got["id"] == (pytest.approx(pinned["id"], abs=one) if one else
                             pytest.approx(pinned["id"], rel=LOSS_RTOL)), where
        assert got["levels"] == pytest.approx(pinned["levels"], abs=one or 0), where
        assert sorted(got["ood"]) == sorted(pinned["ood"]), where
        for split, score in pinned["ood"].items():
            assert got["ood"][split] == pytest.approx(score, abs=1 / pinned["ood_examples"] + 1e-9), f"{where}: {split}"


def test_the_42_verdict_built_from_the_pinned_runs(runs):
    pinned = json.loads(GOLDEN.read_text())["verdict"]
    v = verdict(runs)
    assert v.outcome == pinned["outcome"] and v.holds == pinned["holds"]
    assert v.margin == pytest.approx(pinned["margin"], abs=2 / DATA.test_size)
    assert v.subject == "nli, mask train (poe) at sparsity 0.5"


if __name__ == "__main__":  # python tests/trace/test_golden.py --write: the file the test compares with
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python tests/trace/test_golden.py --write  (computes the trace in a scratch store)")
    import os
    import tempfile

    os.environ["SRNETS_RUNS"] = tempfile.mkdtemp(prefix="golden-") + "/runs"
    found = measured()
    v = verdict(found)
    out = {"runs": found, "verdict": {"outcome": v.outcome, "holds": v.holds, "margin": v.margin}}
    GOLDEN.write_text(json.dumps(out, indent=1, allow_nan=False) + "\n")
    print(f"wrote {GOLDEN}: {', '.join(found)}; 4.2 verdict {v.outcome} "
          f"({'nan' if v.margin is None or math.isnan(v.margin) else f'{v.margin:+.4f}'})")
