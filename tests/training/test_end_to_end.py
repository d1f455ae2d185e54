"""End to end on the tiny model: fine-tune, then mask-train with poe at 50% sparsity; the run
store holds the results and a second call recomputes nothing. Also: IMP's levels and rewinding,
masks reproduce their evaluation, evaluating only what is read, reuse only of results that cover
a request, the CLI, papermill, and resuming a killed run."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest
import torch

from srnets_lib.engine import evaluation
from srnets_lib import methods, paths
from srnets_lib.model import backbones, pruning
from srnets_lib.training.prepare import build_run
from srnets_lib.settings.config import DataConfig, RunConfig
from srnets_lib.sweeps.executors import execute
from srnets_lib.settings.request import Request
from srnets_lib.store.runs import Run

DATA = DataConfig(train_size=192, dev_size=64, ood_size=64)
COMMON = dict(backbone="tiny", data=DATA, epochs=2, batch_size=32, eval_interval=4, max_length=48, lr=1e-3)
EVERY = Request(ood_every=True)


def full(**kw):
    return RunConfig(task="nli", **{**COMMON, **kw})


def test_finetune_then_mask_poe_half_sparse_is_stored_and_not_recomputed(store):
    base = full()
    mask = RunConfig(task="nli", method="mask", loss="poe", sparsity=0.5, init_from=base,
                     select="best_after_0.7", **{**COMMON, "lr": 1e-2})
    result = execute(mask, EVERY)
    assert Run(base).done and Run(mask).done
    assert Run(base).result().weights  # the mask run read them
    assert result.sparsity_min == result.sparsity_max == pytest.approx(0.5, abs=0.01)
    assert result.selected_step >= 0.7 * result.t_max
    assert {"dev", "hans-like"} <= set(Run(mask).metrics()[0])
    stamp = Run(mask).file(paths.FINAL).stat().st_mtime_ns
    assert execute(mask, EVERY) == result
    assert execute(mask, Request()) == result  # a narrower request is served by it too
    assert Run(mask).file(paths.FINAL).stat().st_mtime_ns == stamp


def test_saved_mask_reproduces_its_evaluation(store):
    base = full()
    omp = RunConfig(task="nli", method="omp", sparsity=0.6, init_from=base, **COMMON)
    result = execute(omp)
    retrain = RunConfig(task="nli", mask_from=omp, **COMMON)
    run = build_run(retrain, Run(retrain), Request())
    Run(base).load_weights(run.model)
    scores = run.evaluator.scores(run.model)
    assert scores["dev"] == pytest.approx(result.id)
    assert scores["hans-like"] == pytest.approx(result.ood["hans-like"])


def test_one_imp_run_yields_every_level_and_imp_rw_masks_rewind_to_theta_pt(store):
    # section 4.3: IMP from theta_pt keeps each level's mask; the retrain starts from m . theta_pt
    rw = RunConfig(task="nli", method="imp-rw", loss="poe", sparsity=0.3, **{**COMMON, "epochs": 5})
    result = execute(rw)
    assert list(result.levels) == ["0.1", "0.2", "0.3"]
    assert [result.levels[k].step for k in ("0.1", "0.2", "0.3")] == [3, 6, 9]  # S = int(0.1 * 5 epochs * 6 steps)
    assert result.steps_run == 9
    for level, scores in result.levels.items():
        assert scores.sparsity == pytest.approx(float(level), abs=1e-3)  # floor(numel * s) per matrix
        assert {"hans-like"} == set(scores.ood)
    retrain = RunConfig(task="nli", mask_from=rw, mask_level=0.2, **COMMON)
    masked = pruning.masked_modules(build_run(retrain, Run(retrain), Request()).model)
    theta_pt = dict(backbones.load_model("tiny", 3, seed=1).named_parameters())
    assert masked and "classifier" not in masked  # the classifier stays dense
    for name, module in masked.items():
        assert (~module.mask).float().mean().item() == pytest.approx(0.2, abs=1e-3)
        assert torch.equal(module.weight, theta_pt[name + ".weight"])
    with pytest.raises(ValueError, match="mask_level"):
        RunConfig(task="nli", mask_from=rw, mask_level=0.25, **COMMON)


def test_evaluating_only_what_is_read_gives_the_same_results(tmp_path):
    """Without training curves a run evaluates only what a result reads: the OOD sets at the
    selected checkpoint (fine-tuning: weights restored; mask training: mask restored) and IMP's
    levels, the dev set only where a checkpoint may be selected. Scores, selection, levels and
    every dev score both log are those of evaluating everything: evaluation leaves training alone."""
    base = full()
    cases = [full(),
             RunConfig(task="nli", method="mask", loss="poe", sparsity=0.5, init_from=base, select="best_after_0.7",
                       **COMMON),
             RunConfig(task="nli", method="imp", loss="poe", sparsity=0.2, init_from=base, **{**COMMON, "epochs": 5})]
    for config in cases:
        a, b = execute(config, EVERY, tmp_path / "every"), execute(config, Request(), tmp_path / "selected")
        assert (b.selected_step, b.id, b.ood, b.levels) == (a.selected_step, a.id, a.ood, a.levels)
        rows = Run(config, tmp_path / "selected").metrics()
        all_rows = {r["step"]: r for r in Run(config, tmp_path / "every").metrics()}
        assert [r["dev"] for r in rows] == [all_rows[r["step"]]["dev"] for r in rows]
        assert len([r for r in rows if "hans-like" in r]) == len(a.levels)  # only IMP's level ends
        schedule = methods.planned_schedule(config)  # what plan counts is what the loop did
        assert len(rows) == b.evaluations == len(schedule.evaluated(False))
        assert len(all_rows) == a.evaluations == len(schedule.evaluated(True))
        if config.select == "best_after_0.7":  # none before 0.7 t_max but the selectable ones
            assert len(rows) < len(all_rows) and all(r["step"] >= 0.7 * b.t_max for r in rows)


def test_selected_ood_is_scored_on_the_selected_checkpoints_weights(store, monkeypatch):
    """Scoring the OOD sets only at the end, a fine-tuning run whose best checkpoint is not its
    last scores them on the selected weights, not on the last ones."""
    seen, scores = [], evaluation.TaskEvaluator.scores

    def spy(self, model, splits=None):
        seen.append((splits, torch.cat([p.detach().flatten() for p in model.parameters()]).clone()))
        return scores(self, model, splits)

    monkeypatch.setattr(evaluation.TaskEvaluator, "scores", spy)
    result = execute(full(lr=1e-2, seed=3))
    assert result.selected_step < result.steps_run  # this seed and lr select step 8 of 12
    dev = [weights for splits, weights in seen if splits == ("dev",)]
    splits, weights = seen[-1]
    assert splits == ("hans-like",) and len(dev) == result.evaluations
    assert torch.equal(weights, dev[result.selected_step // COMMON["eval_interval"] - 1])
    assert not torch.equal(weights, dev[-1])


def test_a_stored_run_serves_only_requests_it_covers(store):
    """A request for more than a stored run left behind (OOD at every evaluation, weights after
    a step, the selected weights) computes it again; one for less or the same reuses it."""
    config = full()
    first = execute(config)
    run = Run(config)
    assert run.serves(Request())
    assert "every evaluation" in run.why_not(EVERY)
    assert "steps [4]" in run.why_not(Request(keep_steps=(4,)))
    assert "weights" in run.why_not(Request(weights=True))
    again = execute(config, Request(ood_every=True, keep_steps=(4,), weights=True))
    assert (again.id, again.ood, again.selected_step) == (first.id, first.ood, first.selected_step)
    assert again.kept_steps == [4] and again.weights and again.ood_every
    assert run.file(paths.step_weights(4)).is_file() and run.file(paths.WEIGHTS).is_file()
    assert run.serves(Request(keep_steps=(4,)))


def test_a_stored_run_whose_data_changed_is_computed_again(store):
    config = full()
    execute(config)
    run = Run(config)
    stored = json.loads(run.file(paths.FINAL).read_text())
    stored["data_fingerprint"]["dev"] = "0" * 16  # as if the dev file had changed since
    run.file(paths.FINAL).write_text(json.dumps(stored))
    assert run.why_not(Request()) == "the data it read changed since"
    assert execute(config).data_fingerprint["dev"] != "0" * 16


def test_a_stored_run_whose_data_cannot_be_read_is_not_served_and_says_why(store, monkeypatch):
    from srnets_lib.store import runs

    config = full()
    execute(config)

    def unreadable(task, data):
        raise FileNotFoundError("data/nli/dev.tsv does not exist")

    monkeypatch.setattr(runs, "current_fingerprints", unreadable)
    assert Run(config).why_not(Request()) == ("its data cannot be read now (FileNotFoundError: "
                                                "data/nli/dev.tsv does not exist)")


def test_methods_declare_what_trains_without_side_effects():
    config = RunConfig(task="nli", method="mask", loss="std", sparsity=0.5, **COMMON)
    method = methods.create(config, DATA.train_size)
    model = backbones.load_model("tiny", 3)
    pruning.install(model, method.masked_layers())
    method.prepare(model)
    before = {n: p.requires_grad for n, p in model.named_parameters()}
    trainable = method.trainable(model)
    assert trainable == method.trainable(model)
    assert {n: p.requires_grad for n, p in model.named_parameters()} == before
    assert all(n.endswith("mask_scores") for n, p in model.named_parameters() if any(p is t for t in trainable))
    assert len(trainable) == len(pruning.masked_modules(model))


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
    from srnets_lib.engine.step import NonFiniteLoss

    config = full(lr=1e9)
    with pytest.raises(NonFiniteLoss, match=r"became (nan|inf|-inf) at step \d+"):
        execute(config)
    assert not Run(config).done and not Run(config).file(paths.WEIGHTS).exists()


def test_killed_run_resumes_from_its_checkpoint_to_the_same_result(store, tmp_path):
    config = full(epochs=6)
    code = ("import sys; from srnets_lib.settings.config import RunConfig; from srnets_lib.sweeps.executors import execute;"
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
    assert run.checkpoint() is not None  # a resume point that loads (torch.load, weights_only)
    logged = len(run.metrics())
    result = execute(config)
    steps = [r["step"] for r in run.metrics()]
    assert steps == sorted(set(steps)), "duplicate or out-of-order evaluations after resume"
    assert result.evaluations == len(steps) and logged >= 2
    assert json.loads(run.file(paths.FINAL).read_text())["key"] == run.key
    whole = execute(config, root=tmp_path / "uninterrupted")  # resuming changes nothing computed
    assert (result.id, result.ood, result.selected_step) == (whole.id, whole.ood, whole.selected_step)
    resumed, uninterrupted = run.predictions(), Run(config, tmp_path / "uninterrupted").predictions()
    assert resumed.keys() == uninterrupted.keys() and all((resumed[k] == uninterrupted[k]).all() for k in resumed)


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


def test_papermill_refuses_a_parameter_the_notebook_does_not_declare(store, tmp_path, tiny_params):
    """papermill itself only warns (and the page would silently run all sparsities): refused,
    with the parameter's name and the notebook's own parameters, before anything runs."""
    import papermill

    with pytest.raises(papermill.PapermillExecutionError) as err:
        papermill.execute_notebook("book/sec5_1.ipynb", str(tmp_path / "out.ipynb"), cwd=str(paths.PROJECT_ROOT),
                                   progress_bar=False, parameters={"params_file": str(tiny_params), "sparsity": 0.7})
    assert "unknown notebook parameter(s) sparsity" in str(err.value)
    assert "accepts compute, params_file, seeds, tasks" in str(err.value)
    assert not list(store.glob("**/final.json"))  # nothing computed


def test_select_metric_picks_the_checkpoint_on_another_recorded_metric(store):
    """select_metric=accuracy on QQP (the authors' 5.1 scripts as they ran): the selected
    checkpoint is the best dev accuracy (first of equals); the reported ID stays the task's F1."""
    config = RunConfig(task="paraphrase", select_metric="accuracy", **{**COMMON, "epochs": 3, "eval_interval": 2,
                       "data": DataConfig(train_size=64, dev_size=32, ood_size=16)})
    result = execute(config)
    rows = Run(config).metrics()
    best = max(rows, key=lambda r: (r["dev_accuracy"], -r["step"]))
    assert result.selected_step == best["step"] and result.id == best["dev"] and len(rows) >= 3
    with pytest.raises(ValueError, match="select_metric='matthews' is not recorded for task paraphrase; "
                                         "accepted: f1, accuracy, weighted_f1"):
        RunConfig(**{**config.model_dump(), "select_metric": "matthews"})


def test_final_json_records_what_cpu_results_depend_on(store):
    """CPU float results depend on the instruction set and the thread count (docs/MEASUREMENTS.md): recorded."""
    execution = execute(full()).execution
    assert execution["threads"] == torch.get_num_threads()
    assert execution["cpu_capability"] == torch.backends.cpu.get_cpu_capability()


def test_qqp_records_binary_f1_accuracy_and_weighted_f1_at_every_evaluation(store):
    """The authors select QQP checkpoints on the duplicate class's F1; the paper's text reports a
    weighted F1: every evaluation records F1 (the run's score), accuracy and weighted F1."""
    from srnets_lib.metrics import split_metric

    config = RunConfig(task="paraphrase", **{**COMMON, "data": DataConfig(train_size=64, dev_size=32, ood_size=16)})
    result = execute(config, Request(weights=True))
    assert result.metric == "f1" and set(result.scores) == {"dev_accuracy", "dev_weighted_f1"}
    rows = Run(config).metrics()
    assert rows and all({"dev", "dev_accuracy", "dev_weighted_f1"} <= set(r) for r in rows)
    run = build_run(config, Run(config), Request())
    Run(config).load_weights(run.model)
    dev = run.evaluator.encoded["dev"]
    predictions = evaluation.predict(run.model, dev, 16, 0).argmax(axis=1)
    for metric in ("accuracy", "weighted_f1"):
        assert result.scores[f"dev_{metric}"] == pytest.approx(split_metric(metric, run.data.dev, predictions))


def test_a_sparsity_given_to_a_dense_method_is_refused(store, capsys):
    """`run method=finetune sparsity=0.5` used to fine-tune a dense model without a word."""
    from srnets_lib.__main__ import main

    assert main(["run", "params/toy.yaml", "backbone=tiny", "num_layers=null", "data.train_size=32",
                 "method=finetune", "sparsity=0.5"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: sparsity=0.5: method finetune prunes nothing") and len(err.strip().splitlines()) == 1
    assert not any(store.glob("*/final.json"))


def test_a_diverging_run_ends_with_its_one_line_message(store):
    out = subprocess.run([sys.executable, "-m", "srnets_lib", "run", "params/toy.yaml", "backbone=tiny",
                          "num_layers=null", "data.train_size=32", "data.dev_size=16", "data.test_size=16",
                          "data.ood_size=16", "lr=1e9"], capture_output=True, text=True,
                         env={**os.environ, "SRNETS_RUNS": str(store)})
    assert out.returncode == 1, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in out.stderr
    assert lines[0].startswith("error: run nli-finetune-std-") and "the training loss became" in lines[0]
    assert not any(store.glob("*/final.json"))
