"""Section 3.2.2 / algorithm 2: masks, straight-through gradients, exact sparsity."""

import pytest
import torch
from torch import nn

from srnets_lib.model import pruning
from srnets_lib.model.pruning.masks import MaskedLinear, keep_top


def layer(out=16, inp=24, seed=0):
    torch.manual_seed(seed)
    module = MaskedLinear(nn.Linear(inp, out))
    module.weight.requires_grad_(False)
    return module


@pytest.mark.parametrize("sparsity", [0.2, 0.5, 0.7, 0.9])
@pytest.mark.parametrize("init", ["hard", "soft", "random"])
def test_init_meets_sparsity_exactly(init, sparsity):
    m = layer()
    m.start_mask_training(init, sparsity)
    assert (~m.binary_mask()).sum().item() == pruning.pruned_count(m.weight.numel(), sparsity)


def test_hard_init_prunes_smallest_magnitudes_with_alpha_phi():
    m = layer()
    m.start_mask_training("hard", 0.5, phi=0.01, alpha=2.0)
    kept = m.binary_mask()
    assert sorted(m.mask_scores.detach().unique().tolist()) == [0.0, pytest.approx(0.02)]
    assert m.threshold == 0.01
    assert m.weight.abs()[kept].min() >= m.weight.abs()[~kept].max()


def test_soft_init_scores_are_weight_magnitudes():
    m = layer()
    m.start_mask_training("soft", 0.3)
    assert torch.allclose(m.mask_scores.detach(), m.weight.abs())


def test_threshold_reset_is_exact_after_every_update_even_with_ties():
    m = layer()
    m.start_mask_training("hard", 0.5)
    opt = torch.optim.SGD([m.mask_scores], lr=0.05)
    for step, s in enumerate([0.5, 0.6, 0.7, 0.9]):
        x = torch.randn(8, 24)
        m(x).pow(2).sum().backward()
        opt.step()
        opt.zero_grad()
        with torch.no_grad():  # plant ties across the threshold
            m.mask_scores[0, :6] = 0.123
        m.reset_threshold(s)
        assert (~m.binary_mask()).sum().item() == pruning.pruned_count(m.weight.numel(), s)


def test_straight_through_gradient_reaches_scores_and_not_weights():
    m = layer()
    m.start_mask_training("hard", 0.5)
    x = torch.randn(4, 24)
    m(x).sum().backward()
    grad_w_eff = torch.ones(4, 16).T @ x  # dL/d(W*m) for L = sum(output)
    assert torch.allclose(m.mask_scores.grad, grad_w_eff * m.weight, atol=1e-5)  # STE: dL/dm_hat = dL/dm
    assert m.weight.grad is None


def test_masked_weight_keeps_scores_strictly_greater_than_threshold():
    scores = torch.tensor([0.0, 0.01, 0.02], requires_grad=True)
    weight = torch.tensor([-3.0, 5.0, 7.0])
    assert pruning.MaskedWeight.apply(weight, scores, torch.tensor(0.01)).tolist() == [0.0, 0.0, 7.0]


def test_masked_weight_passes_gradient_to_weights_only_where_kept():
    scores = torch.tensor([0.0, 0.02, 0.03])
    weight = torch.tensor([-3.0, 5.0, 7.0], requires_grad=True)
    (pruning.MaskedWeight.apply(weight, scores, torch.tensor(0.01)) * torch.tensor([1.0, 2.0, 3.0])).sum().backward()
    assert weight.grad.tolist() == [0.0, 2.0, 3.0]


def test_keep_top_breaks_ties_by_position():
    keep = keep_top(torch.tensor([1.0, 1.0, 1.0, 2.0]), 2)
    assert keep.tolist() == [False, False, True, True]


def stable_sort_keep(values: torch.Tensor, k: int) -> torch.Tensor:
    """The definition: prune the first k of a stable ascending sort."""
    keep = torch.ones(values.numel(), dtype=torch.bool)
    keep[torch.sort(values.reshape(-1), stable=True).indices[:k]] = False
    return keep.view_as(values)


@pytest.mark.parametrize("seed", range(5))
def test_keep_top_is_the_stable_sort_definition_with_many_ties(seed):
    g = torch.Generator().manual_seed(seed)
    values = torch.randint(0, 7, (50, 30), generator=g).float() * 0.01  # hard-init-like: few distinct values
    values[0, :5] = -0.0  # signed zeros tie with 0.0
    for k in (0, 1, 333, 750, 1499, 1500):
        assert torch.equal(keep_top(values, k), stable_sort_keep(values, k)), k


def test_threshold_reset_keeps_what_a_stable_sort_keeps():
    m = layer(out=40, inp=30)
    m.start_mask_training("hard", 0.5)
    with torch.no_grad():
        m.mask_scores[::3] = 0.02  # ties around the threshold
        m.mask_scores[1, :] += torch.linspace(-0.01, 0.01, 30)
    expected = stable_sort_keep(m.mask_scores.detach().clone(), pruning.pruned_count(m.weight.numel(), 0.7))
    m.reset_threshold(0.7)
    assert torch.equal(m.binary_mask(), expected)


def test_masks_round_trip_bit_packed(tmp_path):
    model = nn.Sequential(nn.Linear(10, 7), nn.Linear(7, 3))
    masked = pruning.install(model, lambda name: name in {"0", "1"})
    for module in masked.values():
        pruning.random_prune(module, 0.6, torch.Generator().manual_seed(0))
    path = tmp_path / "mask.npz"
    pruning.save_masks(masked, path)
    loaded = pruning.load_masks(path)
    for name, module in masked.items():
        assert torch.equal(loaded[name], module.mask)


def test_corrupted_mask_file_is_named(tmp_path):
    path = tmp_path / "mask.npz"
    path.write_bytes(b"not a zip")
    with pytest.raises(pruning.MaskFileError, match="mask.npz"):
        pruning.load_masks(path)


def test_mask_for_another_model_is_refused(tmp_path):
    model = nn.Sequential(nn.Linear(10, 7))
    masked = pruning.install(model, lambda n: n == "0")
    with pytest.raises(pruning.MaskFileError, match="shape"):
        pruning.apply_masks(masked, {"0": torch.ones(3, 3, dtype=torch.bool)}, "x.npz")


def test_mean_pooling_reads_the_masked_mean_of_the_token_states():
    from srnets_lib.model import backbones

    model = backbones.load_model("tiny", 3, seed=0, pooling="mean").eval()
    ids = torch.tensor([[101, 7, 8, 102, 0, 0], [101, 9, 102, 5, 6, 102]])
    mask = (ids != 0).long()
    with torch.no_grad():
        logits = model(input_ids=ids, attention_mask=mask, token_type_ids=torch.zeros_like(ids)).logits
        states = model.bert(ids, attention_mask=mask).last_hidden_state
        mean = (states * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)
        expected = model.classifier(torch.tanh(model.bert.pooler.dense(mean)))
    assert torch.allclose(logits, expected, atol=1e-5)
    # the same parameter names as a [CLS] model: masks and weights files are interchangeable
    assert [n for n, _ in model.named_parameters()] == [n for n, _ in backbones.load_model("tiny", 3).named_parameters()]
