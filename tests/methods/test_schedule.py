"""Each run's Schedule (schedule.py, built by its method): what the loop iterates and `plan`
counts. Algorithm 1's pruning steps, algorithm 2's threshold resets, appendix B.3.3's
selection rule, and which evaluations run when only what a result reads is evaluated."""

import pytest

from srnets_lib import methods
from srnets_lib.settings.config import DataConfig, RunConfig

DATA = DataConfig(train_size=100, dev_size=10, ood_size=10)


def config(**fields) -> RunConfig:
    return RunConfig(task="nli", data=DATA, batch_size=10, **fields)


def test_imp_prunes_from_step_0_every_interval_and_one_run_yields_every_level():
    # algorithm 1 with delta_t = 0.1 t_max: t_max = 10.5 epochs x 10 steps = 105, S = int(0.1 * 105) = 10;
    # 90% is reached at 8S and kept for one more interval, so the run stops at 9S
    schedule = methods.schedule(config(method="imp", sparsity=0.9, epochs=10.5, eval_interval=1000), 100)
    assert schedule.t_max == 105 and schedule.steps == 90
    assert schedule.sparsity_steps == {10 * k: round(0.1 * (k + 1), 6) for k in range(9)}
    assert schedule.restarts == tuple(range(0, 90, 10))  # the optimiser and lr restart at each pruning
    # each level is the model at the end of its interval, just before the next pruning
    assert schedule.levels == {10 * k: round(0.1 * k, 6) for k in range(1, 10)}
    assert schedule.evaluations == tuple(range(10, 91, 10)) and schedule.selectable == {90}
    assert not schedule.pick_level
    rw = methods.schedule(config(method="imp-rw", sparsity=0.3, epochs=10), 100)
    assert rw.pick_level and rw.steps == 30 and list(rw.sparsity_steps) == [0, 10, 20]


def test_mask_training_resets_thresholds_at_every_evaluation_and_selects_after_0_7_t_max():
    schedule = methods.schedule(config(method="mask", sparsity=0.5, epochs=2, eval_interval=4,
                                       select="best_after_0.7"), 100)
    assert schedule.t_max == schedule.steps == 20
    assert schedule.evaluations == (4, 8, 12, 16, 20)
    assert schedule.sparsity_steps == {0: 0.5, 4: 0.5, 8: 0.5, 12: 0.5, 16: 0.5, 20: 0.5}  # algorithm 2, l. 15
    assert schedule.selectable == {16, 20}  # appendix B.3.3: after 0.7 t_max = 14


def test_gradual_sparsity_selects_only_at_the_target_unless_told_otherwise():
    fields = dict(method="mask", sparsity=0.9, sparsity_init=0.7, schedule="cubic", mask_init="soft", epochs=2,
                  eval_interval=4)
    schedule = methods.schedule(config(ramp_end=0.5, **fields), 100)
    assert schedule.sparsity_steps[0] == 0.7 and schedule.sparsity_steps[12] == pytest.approx(0.9)
    assert schedule.sparsity_steps[4] < schedule.sparsity_steps[8] < 0.9
    assert schedule.selectable == {12, 16, 20}  # section 5.2: the ramp ends at 0.5 t_max = 10
    authors = methods.schedule(config(ramp_end=1.0, select_at_target=False, **fields), 100)
    assert authors.selectable == set(authors.evaluations)


def test_one_shot_masks_do_not_train_and_are_evaluated_once():
    schedule = methods.schedule(config(method="omp", sparsity=0.5), 100)
    assert (schedule.steps, schedule.evaluations, schedule.restarts, schedule.selectable) == (0, (0,), (), {0})


def test_fine_tuning_evaluates_every_interval_and_at_the_end():
    schedule = methods.schedule(config(epochs=2.5, eval_interval=10), 100)
    assert schedule.evaluations == (10, 20, 25) and schedule.restarts == (0,) and not schedule.levels


def test_only_what_a_result_reads_is_evaluated_without_training_curves():
    imp = methods.schedule(config(method="imp", sparsity=0.3, epochs=10, eval_interval=4), 100)
    assert imp.evaluated(True) == imp.evaluations
    assert imp.evaluated(False) == (10, 20, 30)  # the levels (the last is the result)
    assert imp.ood_evaluations(False) == 3 and imp.ood_evaluations(True) == len(imp.evaluations)
    mask = methods.schedule(config(method="mask", sparsity=0.5, epochs=2, eval_interval=4, select="best_after_0.7"), 100)
    assert mask.evaluated(False) == (16, 20) and mask.ood_evaluations(False) == 1
    assert mask.ood_at(16, False) is False and imp.ood_at(20, False) is True


def test_task_agnostic_masks_stop_at_max_steps_mid_schedule_without_selection():
    """TAMT takes its masks at IMP's iteration counts while the lr decays over the whole epochs
    (TAMT table 2; shell_scripts/train_mlm/bert/*.sh of llyx97/TAMT)."""
    schedule = methods.schedule(config(method="mask", sparsity=0.5, epochs=2, eval_interval=4, max_steps=14,
                                       select="last"), 100)
    assert (schedule.t_max, schedule.steps) == (20, 14)
    assert schedule.evaluations == (4, 8, 12, 14) and schedule.selectable == {14}
    assert schedule.evaluated(False) == (14,)
    probe = methods.schedule(config(max_steps=0), 100)  # a subnetwork evaluated as it is
    assert (probe.steps, probe.evaluations, probe.restarts) == (0, (0,), ())


def test_an_imp_run_evaluates_only_the_levels_read_and_its_last():
    imp = methods.schedule(config(method="imp", sparsity=0.3, epochs=10, eval_interval=4), 100)
    assert imp.read_levels(None) == imp.levels and imp.read_levels(()) == {30: 0.3}
    assert imp.evaluated(False, (0.1,)) == (10, 30) and imp.ood_evaluations(False, (0.1,)) == 2
    assert imp.ood_at(20, False, (0.1,)) is False and imp.ood_at(20, True, (0.1,)) is True
