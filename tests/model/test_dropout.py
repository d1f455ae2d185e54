"""dropout_rng: fast -- dropout with masks from 16-bit random lanes (srnets_lib/model/dropout.py)."""

import pytest
import torch
from torch import nn

from srnets_lib.model import dropout, backbones


def test_keep_probability_is_one_minus_p_to_16_bits():
    torch.manual_seed(0)
    n, p = 4_000_000, 0.1
    keep = dropout.keep_mask(torch.Size([n]), p, torch.device("cpu"))
    expected = round(65536 * (1 - p)) / 65536
    sigma = (expected * (1 - expected) / n) ** 0.5
    assert abs(keep.float().mean().item() - expected) < 5 * sigma
    for lane in keep.view(-1, 4).T:  # each 16-bit lane of a 64-bit draw is a fair coin
        assert abs(lane.float().mean().item() - expected) < 5 * 2 * sigma


def test_tiny_p_keeps_everything():
    assert dropout.keep_mask(torch.Size([1000]), 1e-9, torch.device("cpu")).all()


def test_kept_entries_are_scaled_by_one_over_keep_and_gradient_uses_the_same_mask():
    torch.manual_seed(0)
    x = torch.rand(64, 128) + 0.5
    x.requires_grad_(True)
    y = dropout.fast_dropout(x, 0.25)
    kept = y != 0
    assert 0.6 < kept.float().mean() < 0.9
    assert torch.allclose(y[kept], x.detach()[kept] / 0.75)
    y.backward(torch.ones_like(y))
    assert torch.equal(x.grad, kept.float() / 0.75)


def test_identity_in_eval_and_at_p_zero():
    x = torch.randn(8, 8)
    assert dropout.fast_dropout(x, 0.1, training=False) is x
    assert dropout.fast_dropout(x, 0.0) is x


def tiny_model():
    model = backbones.load_model("tiny", 3)
    tokenizer = backbones.load_tokenizer("tiny")
    batch = tokenizer(["a man sleeps", "the doctor saw the lawyer near the bank today"], padding=True,
                      return_tensors="pt")
    return model, batch


def fast_model_and_torch_eval_logits():
    """The tiny model with fast dropout installed, and its eval logits from before."""
    model, batch = tiny_model()
    model.eval()
    with torch.no_grad():
        before = model(**batch).logits
    return dropout.use_fast_dropout(model), batch, before


def test_use_fast_dropout_replaces_every_dropout_and_keeps_eval_outputs():
    model, batch, before = fast_model_and_torch_eval_logits()
    assert not any(type(m) is nn.Dropout for m in model.modules())
    assert all(not m.training for m in model.modules())
    with torch.no_grad():
        assert torch.equal(model(**batch).logits, before)


def test_attention_with_dropout_matches_sdpa_when_nothing_is_dropped():
    """The CPU path with dropout (softmax(QK^T / sqrt(d) + padding mask) V) is SDPA's attention."""
    model, batch, reference = fast_model_and_torch_eval_logits()
    model.train()
    for module in model.modules():
        if isinstance(module, nn.Dropout):
            module.p = 1e-9  # takes the dropout path; keeps every entry (scale 1 + 1e-9)
    with torch.no_grad():
        assert torch.allclose(model(**batch).logits, reference, atol=1e-5)


@pytest.mark.parametrize("rng", ["torch", "fast"])
def test_training_forward_is_reproducible_from_the_seed(rng):
    model, batch = tiny_model()
    if rng == "fast":
        dropout.use_fast_dropout(model)
    model.train()
    outputs = []
    for _ in range(2):
        torch.manual_seed(7)
        with torch.no_grad():
            outputs.append(model(**batch).logits)
    assert torch.equal(*outputs)
    with torch.no_grad():
        assert not torch.equal(model(**batch).logits, outputs[0])  # dropout is on
