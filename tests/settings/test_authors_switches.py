"""Two behaviours of the authors' code, each a switch set to it in params/paper.yaml and tested in
both settings: mask training resetting its thresholds to the initial sparsity after each new best
(their mask_trainer.py, line 699), and IMP updating its weights with cross-entropy whatever the run's
loss (their trainer_imp.py, lines 789-797)."""

import pytest

from srnets_lib.settings import params
from srnets_lib.model import pruning
from srnets_lib.training.prepare import build_run
from srnets_lib.settings.config import DataConfig, RunConfig
from srnets_lib.sweeps.executors import execute
from srnets_lib.settings.request import Request
from srnets_lib.store.runs import Run

EVERY = Request(ood_every=True)
DATA = DataConfig(train_size=192, dev_size=64, ood_size=64, test_size=64)
COMMON = dict(backbone="tiny", data=DATA, epochs=4, batch_size=32, eval_interval=2, max_length=48, lr=1e-2)


BASE = RunConfig(task="nli", **{**COMMON, "lr": 1e-3, "epochs": 2})


def gradual(**kw):
    return RunConfig(task="nli", method="mask", loss="poe", sparsity=0.6, sparsity_init=0.2, schedule="cubic",
                     ramp_end=1.0, select="best_after_0.7", select_at_target=False, mask_init="soft",
                     init_from=BASE, **COMMON, **kw)


def test_a_new_best_resets_the_thresholds_to_the_initial_sparsity(store):
    execute(BASE, Request(weights=True))
    config = gradual(threshold_reset_on_best=True)
    run = build_run(config, Run(config), Request())
    modules = pruning.masked_modules(run.model).values()
    for module in modules:
        module.reset_threshold(0.6, config.threshold_ties)
    run.method.on_selected(run.model)
    assert all(m.sparsity() == pytest.approx(0.2, abs=0.01) for m in modules)  # s_init, until the next reset
    without = gradual()
    run = build_run(without, Run(without), Request())
    for module in pruning.masked_modules(run.model).values():
        module.reset_threshold(0.6, without.threshold_ties)
    run.method.on_selected(run.model)
    assert all(m.sparsity() == pytest.approx(0.6, abs=0.01) for m in pruning.masked_modules(run.model).values())


def test_the_reset_changes_what_a_gradual_run_trains_but_not_what_it_evaluates(store):
    """With the reset, the steps after a new best train at s_init, so the run differs; every
    evaluation is still made at the scheduled sparsity (the thresholds are reset before it), and the
    mask kept is the mask evaluated."""
    theirs = execute(gradual(threshold_reset_on_best=True), EVERY)
    execute(gradual(), EVERY)
    rows, own = Run(gradual(threshold_reset_on_best=True)).metrics(), Run(gradual()).metrics()
    assert [r["sparsity"] for r in rows] == pytest.approx([r["sparsity"] for r in own], abs=0.01)
    assert theirs.selected_step >= 0.7 * theirs.t_max
    # the same training up to the first selectable evaluation; after it the losses part
    first = next(i for i, r in enumerate(rows) if r["step"] >= 0.7 * theirs.t_max)
    assert [r["loss"] for r in rows[:first + 1]] == [r["loss"] for r in own[:first + 1]]
    assert [r["loss"] for r in rows[first + 1:]] != [r["loss"] for r in own[first + 1:]]
    kept = Run(gradual(threshold_reset_on_best=True)).masks()
    sparsity = 1 - sum(m.sum().item() for n, m in kept.items() if "encoder" in n) / sum(
        m.numel() for n, m in kept.items() if "encoder" in n)
    assert sparsity == pytest.approx(theirs.sparsity, abs=0.01)


def test_imp_with_the_authors_objective_trains_poe_runs_with_cross_entropy(store):
    """imp_objective cross_entropy: an IMP run with the PoE loss computes what the std one does (the
    same data: our bias model drops no training row); with the run's loss it differs."""
    imp = dict(task="nli", method="imp", sparsity=0.2, init_from=BASE, **{**COMMON, "lr": 1e-3})
    configs = [RunConfig(loss="std", **imp), RunConfig(loss="poe", imp_objective="cross_entropy", **imp),
               RunConfig(loss="poe", **imp)]
    std, theirs, ours = (execute(c, EVERY) for c in configs)
    losses = [[r["loss"] for r in Run(c).metrics()] for c in configs]
    assert losses[1] == losses[0] and (theirs.id, theirs.ood, theirs.levels) == (std.id, std.ood, std.levels)
    assert losses[2] != losses[0]  # the PoE loss
    with pytest.raises(ValueError, match="imp_objective=cross_entropy is method IMP's setting: method=finetune"):
        RunConfig(task="nli", loss="poe", imp_objective="cross_entropy")


def test_paper_params_run_both_as_the_authors_scripts_did():
    p = params.load("params/paper.yaml")
    mask = p.run("nli", "mask", "poe", sparsity=0.9, sparsity_init=0.7, schedule="cubic",
                 init_from=p.run("nli", "finetune", "std"))
    imp = p.run("nli", "imp", "poe", sparsity=0.9, init_from=p.run("nli", "finetune", "std"))
    assert mask.threshold_reset_on_best and imp.imp_objective == "cross_entropy"
    assert p.run("nli", "finetune", "poe").training_loss == "poe"
