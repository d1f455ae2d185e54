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


def test_imp_schedule_prunes_every_interval_and_returns_one_interval_after_target():
    sched = pruning.IMPSchedule(0.3, 0.1, 0.1, t_max=100, method="imp")
    actions = {}
    for step in range(100):
        action = sched.action(step)
        actions[step] = action
        if action == "prune":
            sched.n += 1
        if action == "stop":
            break
    assert [s for s, a in actions.items() if a == "prune"] == [0, 10, 20]
    assert actions[30] == "stop"


def test_imp_rw_stops_right_after_the_last_pruning():
    sched = pruning.IMPSchedule(0.2, 0.1, 0.1, t_max=50, method="imp-rw")
    assert sched.action(0) == "prune"
    sched.n += 1
    assert sched.action(5) == "prune"
    sched.n += 1
    assert sched.reached


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
