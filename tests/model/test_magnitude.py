"""Algorithm 1 (IMP) and the magnitude baselines."""

import torch
from torch import nn

from srnets_lib.model import pruning
from srnets_lib.model.pruning.masks import MaskedLinear


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


def test_random_prune_exact_and_seeded():
    a, b = MaskedLinear(nn.Linear(30, 30)), MaskedLinear(nn.Linear(30, 30))
    pruning.random_prune(a, 0.7, torch.Generator().manual_seed(3))
    pruning.random_prune(b, 0.7, torch.Generator().manual_seed(3))
    assert torch.equal(a.mask, b.mask) and (~a.mask).sum().item() == 630


def test_cubic_schedule_endpoints():
    from srnets_lib.methods.sparsity import cubic

    assert cubic(0, 100, 0.9, 0.7, 0.5) == 0.7
    assert abs(cubic(50, 100, 0.9, 0.7, 0.5) - 0.9) < 1e-12
    assert cubic(25, 100, 0.9, 0.7, 0.5) > 0.7
