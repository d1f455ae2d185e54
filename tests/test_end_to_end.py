"""End to end on the tiny model: fine-tune, then mask-train with poe at 50% sparsity; the run
store holds the results and a second call recomputes nothing. Also: rewinding, masks
reproduce their evaluation, the CLI, papermill, and resuming a killed run."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest
import torch

from srnets_lib import paths, plan, pruning
from srnets_lib.config import DataConfig, RunConfig
from srnets_lib.runs import Run
from srnets_lib.train import Trainer, execute

DATA = DataConfig(train_size=192, dev_size=64, ood_size=64)
COMMON = dict(backbone="tiny", data=DATA, epochs=2, batch_size=32, eval_interval=4, max_length=48, lr=1e-3)


def full(**kw):
    return RunConfig(task="nli", **{**COMMON, **kw})


def test_finetune_then_mask_poe_half_sparse_is_stored_and_not_recomputed(store):
    base = full()
    mask = RunConfig(task="nli", method="mask", loss="poe", sparsity=0.5, init_from=base,
                     select="best_after_0.7", **{**COMMON, "lr": 1e-2})
    final = execute(mask)
    assert Run(base).done and Run(mask).done
    assert final["sparsity_min"] == final["sparsity_max"] == pytest.approx(0.5, abs=0.01)
    assert final["selected_step"] >= 0.7 * final["t_max"]
    assert {"dev", "hans-like"} <= set(Run(mask).metrics()[0])
    stamp = Run(mask).file(paths.FINAL).stat().st_mtime_ns
    assert execute(mask) == final
    assert Run(mask).file(paths.FINAL).stat().st_mtime_ns == stamp


def test_saved_mask_reproduces_its_evaluation(store):
    base = full()
    omp = RunConfig(task="nli", method="omp", sparsity=0.6, init_from=base, **COMMON)
    final = execute(omp)
    again = Trainer(RunConfig(task="nli", mask_from=omp, epochs=1e-9, **{k: v for k, v in COMMON.items() if k != "epochs"}),
                    Run(omp))
    again._build()
    load = __import__("srnets_lib.train", fromlist=["load_weights"]).load_weights
    load(again.model, Run(base))
    scores = again.evaluate()
    assert scores["dev"] == pytest.approx(final["id"])
    assert scores["hans-like"] == pytest.approx(final["ood"]["hans-like"])


def test_one_imp_run_yields_every_level_and_imp_rw_masks_rewind_to_theta_pt(store):
    # section 4.3: IMP from theta_pt keeps each level's mask; the retrain starts from m . theta_pt
    rw = RunConfig(task="nli", method="imp-rw", loss="poe", sparsity=0.3, **{**COMMON, "epochs": 5})
    final = execute(rw)
    assert list(final["levels"]) == ["0.1", "0.2", "0.3"]
    steps = [final["levels"][k]["step"] for k in ("0.1", "0.2", "0.3")]
    assert steps == [3, 6, 9] and final["steps_run"] == 9  # S = int(0.1 * 5 epochs * 6 steps) = 3
    for level, result in final["levels"].items():
        assert result["sparsity"] == pytest.approx(float(level), abs=1e-3)  # floor(numel * s) per matrix
        assert {"hans-like"} == set(result["ood"])
    retrain = RunConfig(task="nli", mask_from=rw, mask_level=0.2, **COMMON)
    trainer = Trainer(retrain, Run(retrain))
    trainer._build()
    theta_pt = dict(__import__("srnets_lib.models", fromlist=["load_model"]).load_model("tiny", 3, seed=1)
                    .named_parameters())
    assert trainer.masked and "classifier" not in trainer.masked  # the classifier stays dense
    for name, module in trainer.masked.items():
        assert (~module.mask).float().mean().item() == pytest.approx(0.2, abs=1e-3)
        assert torch.equal(module.weight, theta_pt[name + ".weight"])
    with pytest.raises(ValueError, match="mask_level"):
        RunConfig(task="nli", mask_from=rw, mask_level=0.25, **COMMON)


def test_evaluating_only_what_is_read_gives_the_same_results(store):
    """eval_ood=selected evaluates only what a result reads: the OOD sets at the selected
    checkpoint (fine-tuning: weights restored; mask training: mask restored) and IMP's levels,
    the dev set only where a checkpoint may be selected. Scores, selection, levels and every
    dev score both log are those of evaluating everything: evaluation leaves training alone."""
    def both(**kw):
        every, selected = RunConfig(task="nli", **kw), RunConfig(task="nli", eval_ood="selected", **kw)
        return every, selected, execute(every), execute(selected)

    base = full()
    cases = [dict(COMMON),
             dict(COMMON, method="mask", loss="poe", sparsity=0.5, init_from=base, select="best_after_0.7"),
             dict(COMMON, method="imp", loss="poe", sparsity=0.2, init_from=base, epochs=5)]
    for kw in cases:
        every, selected, a, b = both(**kw)
        assert every.key() != selected.key()
        assert (b["selected_step"], b["id"], b["ood"]) == (a["selected_step"], a["id"], a["ood"])
        assert b.get("levels") == a.get("levels")
        rows, all_rows = Run(selected).metrics(), {r["step"]: r for r in Run(every).metrics()}
        assert [r["dev"] for r in rows] == [all_rows[r["step"]]["dev"] for r in rows]
        with_ood = [r["step"] for r in rows if "hans-like" in r]
        assert len(with_ood) == len(a.get("levels", {}))  # only IMP's level ends
        assert len(rows) == b["evaluations"] == plan.evaluations(selected)
        assert len(all_rows) == a["evaluations"] == plan.evaluations(every)
        if kw.get("select") == "best_after_0.7":  # none before 0.7 t_max but the selectable ones
            assert len(rows) < len(all_rows)
            assert all(r["step"] >= 0.7 * b["t_max"] for r in rows)


def test_selected_ood_is_scored_on_the_selected_checkpoints_weights(store, monkeypatch):
    """With eval_ood=selected a fine-tuning run whose best checkpoint is not its last scores the
    OOD sets at the end on the selected weights, not on the last ones."""
    seen, evaluate = [], Trainer.evaluate

    def spy(self, splits=None):
        seen.append((splits, torch.cat([p.detach().flatten() for p in self.model.parameters()]).clone()))
        return evaluate(self, splits)

    monkeypatch.setattr(Trainer, "evaluate", spy)
    final = execute(full(eval_ood="selected", lr=1e-2, seed=3))
    assert final["selected_step"] < final["steps_run"]  # this seed and lr select step 8 of 12
    dev = [weights for splits, weights in seen if splits == ("dev",)]
    splits, weights = seen[-1]
    assert splits == ("hans-like",) and len(dev) == final["evaluations"]
    assert torch.equal(weights, dev[final["selected_step"] // COMMON["eval_interval"] - 1])
    assert not torch.equal(weights, dev[-1])


def test_cli_runs_one_configuration(store, tmp_path):
    out = subprocess.run([sys.executable, "-m", "srnets_lib", "run", "params/toy.yaml", "backbone=tiny",
                          "num_layers=null", "data.train_size=96", "data.dev_size=32", "data.ood_size=32",
                          "epochs=1", "method=mask", "loss=poe", "sparsity=0.5", "seed=1"],
                         capture_output=True, text=True, env={**os.environ, "SRNETS_RUNS": str(store)})
    assert out.returncode == 0, out.stderr
    assert "results in" in out.stdout and "sparsity 0.5" in out.stdout


@pytest.mark.parametrize("args, message", [
    (["task=sentiment"], "task"), (["sparsity=1.0", "method=mask"], "sparsity"),
    (["loss=focal"], "loss"), (["seeds=[]"], "seeds"), (["backbone=./missing/model"], "does not exist"),
    (["backbone=bert-base-uncased"], "'bert-base-uncased' could not be loaded"),  # offline: the hub is unreachable
    (["max_length=600"], "exceeds backbone 'packaged'"),
])
def test_cli_rejects_bad_input_before_work(store, args, message):
    out = subprocess.run([sys.executable, "-m", "srnets_lib", "run", "params/toy.yaml", *args],
                         capture_output=True, text=True, env={**os.environ, "SRNETS_RUNS": str(store)})
    assert out.returncode == 2 and message in out.stderr, out.stderr
    assert "Traceback" not in out.stderr, out.stderr
    if "backbone" in message:
        assert len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert not any(store.glob("*/final.json"))


def test_a_diverging_run_stops_with_step_and_value_and_leaves_nothing_finished(store):
    from srnets_lib.step import NonFiniteLoss

    config = full(lr=1e9)
    with pytest.raises(NonFiniteLoss, match=r"became (nan|inf|-inf) at step \d+"):
        execute(config)
    assert not Run(config).done and not Run(config).file(paths.WEIGHTS).exists()


def test_killed_run_resumes_from_its_checkpoint(store):
    config = full(epochs=6)
    code = ("import sys; from srnets_lib.config import RunConfig; from srnets_lib.train import execute;"
            f"execute(RunConfig.model_validate_json({config.model_dump_json()!r}))")
    env = {**os.environ, "SRNETS_RUNS": str(store), "SRNETS_CHECKPOINT_SECONDS": "0"}
    proc = subprocess.Popen([sys.executable, "-c", code], env=env)
    run = Run(config, store)
    deadline = time.time() + 120
    while time.time() < deadline and not (run.file(paths.CHECKPOINT).exists() and len(run.metrics()) >= 3):
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not run.done, "the run finished before it could be killed; make it longer"
    logged = len(run.metrics())
    final = execute(config)
    steps = [r["step"] for r in run.metrics()]
    assert steps == sorted(set(steps)), "duplicate or out-of-order evaluations after resume"
    assert final["evaluations"] == len(steps) and logged >= 2
    assert json.loads(run.file(paths.FINAL).read_text())["key"] == run.key


@pytest.mark.slow
def test_papermill_runs_a_notebook_point(store, tmp_path, tiny_params):
    import papermill

    out = tmp_path / "out.ipynb"
    papermill.execute_notebook("book/sec4_4.ipynb", str(out), cwd=str(paths.PROJECT_ROOT), progress_bar=False,
                               parameters={"params_file": str(tiny_params), "sparsity": 0.7, "seeds": [1]})
    nb = json.loads(out.read_text())
    outputs = [o for c in nb["cells"] if c["cell_type"] == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o["output_type"] == "error"]
    assert any("image/png" in o.get("data", {}) for o in outputs)
    assert any("text/html" in o.get("data", {}) for o in outputs)


def test_final_json_records_what_cpu_results_depend_on(store):
    """CPU float results depend on the instruction set and the thread count (README): recorded."""
    execution = execute(full())["execution"]
    assert execution["threads"] == torch.get_num_threads()
    assert execution["cpu_capability"] == torch.backends.cpu.get_cpu_capability()
