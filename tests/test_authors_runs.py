"""The authors' runs down to the optimiser step (github.com/llyx97/sparse-and-robust-PLM and
github.com/llyx97/TAMT; the file and line behind each behaviour are named in its test): each a switch
with both settings tested, and what params/paper.yaml sets it to. Ours is each switch's default."""

import copy
import math

import pytest
import torch

from srnets_lib.engine.step import HFAdamW, Optimization


def hf_adamw_formula(grads: list[float], lr: float, wd: float = 0.0, eps: float = 1e-8, b1=0.9, b2=0.999) -> float:
    """hg_transformers/optimization.py AdamW.step in float64: denom = sqrt(v) + eps, step_size =
    lr sqrt(1 - b2^t) / (1 - b1^t), p -= step_size m / denom, then p -= lr wd p."""
    p, m, v = 1.0, 0.0, 0.0
    for t, g in enumerate(grads, 1):
        m, v = b1 * m + (1 - b1) * g, b2 * v + (1 - b2) * g * g
        p -= lr * math.sqrt(1 - b2 ** t) / (1 - b1 ** t) * m / (math.sqrt(v) + eps)
        p -= lr * wd * p
    return p


def stepped(optimizer, grads: list[float]) -> float:
    p = optimizer.param_groups[0]["params"][0]
    for g in grads:
        p.grad = torch.full_like(p, g)
        optimizer.step()
    return float(p.detach().double()[0])


@pytest.mark.parametrize("grad", [1e-7, 1e-3, 1.0, 40.0])
@pytest.mark.parametrize("wd", [0.0, 0.01])
def test_hf_adamw_steps_as_transformers_3_adamw(grad, wd):
    """Ten steps of a constant gradient, small (a mask score's on BERT-base can be 1e-7) and large:
    the update equals the formula to 1e-6 relative (the distance moved, p0 - p)."""
    grads = [grad * (1 + 0.1 * (t % 3)) for t in range(10)]
    p = torch.nn.Parameter(torch.ones(3, dtype=torch.float64))
    moved = 1.0 - stepped(HFAdamW([p], lr=1e-3, weight_decay=wd), grads)
    assert moved == pytest.approx(1.0 - hf_adamw_formula(grads, 1e-3, wd), rel=1e-6)


def test_hf_adamw_differs_from_torch_adamw_on_small_gradients_only():
    """A constant gradient of 1e-7: their first update is 0.24 lr (eps 1e-8 against sqrt(v) =
    3.2e-9 before the correction), torch's 0.91 lr (eps against the corrected 1e-7); on a gradient
    of 1 both are lr within 1e-6. Their effective eps is eps / sqrt(1 - 0.999^t): 31.6x at step 1."""
    def first(optimizer_name, g):
        p = torch.nn.Parameter(torch.zeros(1, dtype=torch.float64))
        Optimization([p], lr=1.0, weight_decay=0.0, steps=10, warmup=0, optimizer=optimizer_name).step((p * g).sum())
        return -float(p)

    assert first("hf_adamw", 1e-7) == pytest.approx(0.2403, abs=1e-4)
    assert first("adamw", 1e-7) == pytest.approx(0.9091, abs=1e-4)
    assert first("hf_adamw", 1.0) == pytest.approx(first("adamw", 1.0), rel=1e-6)
    assert 1 / math.sqrt(1 - 0.999) == pytest.approx(31.6, abs=0.05)
    assert 1 / math.sqrt(1 - 0.999 ** 1000) == pytest.approx(1.26, abs=0.005)


def test_hf_adamw_resumes_from_its_state_dict():
    """A resume point (fit.Loop.checkpoint) restores each tensor's step count and moments."""
    p = torch.nn.Parameter(torch.ones(2))
    opt = HFAdamW([p], lr=1e-2)
    stepped(opt, [0.5, 0.25])
    q = torch.nn.Parameter(p.detach().clone())
    other = HFAdamW([q], lr=1e-2)
    other.load_state_dict(copy.deepcopy(opt.state_dict()))  # as torch.save and torch.load give it back
    assert stepped(opt, [1.0]) == stepped(other, [1.0])
    assert other.state[q]["step"] == 3
