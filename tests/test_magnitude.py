"""Algorithm 1 (IMP) and the magnitude baselines."""

import torch
from torch import nn

from srnets_lib import pruning
from srnets_lib.pruning.masks import MaskedLinear


def test_imp_cumulative_sparsity_ten_to_ninety_percent_and_masks_only_shrink():
    torch.manual_seed(0)
    m = MaskedLinear(nn.Linear(40, 25))
    previous = m.mask.clone()
    for n in range(1, 10):
        with torch.no_grad():  # weights move between prunings, as in training
            m.weight.add_(0.05 * torch.randn_like(m.weight))
        pruning.magnitude_prune(m, n * 0.1)
        assert (~m.mask).sum().item() == pruning.pruned_count(1000, n * 0.1)
        assert not (m.mask & ~previous).any(), "a pruned weight came back"
        previous = m.mask.clone()


def test_imp_schedule_prunes_from_step_0_every_interval_and_one_run_yields_every_level():
    # algorithm 1 with delta_t = 0.1 t_max: S = int(0.1 * 105) = 10; 90% is reached at 8S and kept
    # for one more interval, so the run stops at 9S
    sched = pruning.IMPSchedule(0.9, 0.1, 0.1, t_max=105)
    prunes = {step: sched.prunes_at(step) for step in range(sched.total_steps) if sched.prunes_at(step)}
    assert list(prunes) == [0, 10, 20, 30, 40, 50, 60, 70, 80]
    assert list(prunes.values()) == [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]
    assert sched.total_steps == 90
    # each level is the model at the end of its interval, just before the next pruning
    ends = {step: sched.level_ending_at(step) for step in range(1, 91) if sched.level_ending_at(step)}
    assert ends == {10 * k: round(0.1 * k, 6) for k in range(1, 10)}
    assert sched.levels() == [round(0.1 * k, 6) for k in range(1, 10)]


def test_imp_to_thirty_percent_stops_one_interval_after_its_last_pruning():
    sched = pruning.IMPSchedule(0.3, 0.1, 0.1, t_max=100)
    assert [s for s in range(100) if sched.prunes_at(s)] == [0, 10, 20] and sched.total_steps == 30


def test_random_prune_exact_and_seeded():
    a, b = MaskedLinear(nn.Linear(30, 30)), MaskedLinear(nn.Linear(30, 30))
    pruning.random_prune(a, 0.7, torch.Generator().manual_seed(3))
    pruning.random_prune(b, 0.7, torch.Generator().manual_seed(3))
    assert torch.equal(a.mask, b.mask) and (~a.mask).sum().item() == 630


def test_cubic_schedule_endpoints():
    from srnets_lib.pruning.schedules import cubic

    assert cubic(0, 100, 0.9, 0.7, 0.5) == 0.7
    assert abs(cubic(50, 100, 0.9, 0.7, 0.5) - 0.9) < 1e-12
    assert cubic(25, 100, 0.9, 0.7, 0.5) > 0.7
