"""Section 3.3 and appendix A.2: each loss equals its formula on hand-computed cases."""

import math

import torch

from srnets_lib.engine import losses

LOGITS = torch.tensor([[2.0, 0.0, -1.0], [0.5, 1.5, 0.0]])
LABELS = torch.tensor([0, 2])
BIAS = torch.tensor([[0.7, 0.2, 0.1], [0.3, 0.3, 0.4]])
TEACHER = torch.tensor([[0.8, 0.15, 0.05], [0.2, 0.5, 0.3]])


def log_softmax(row):
    z = sum(math.exp(v) for v in row)
    return [v - math.log(z) for v in row]


def test_std_is_cross_entropy():
    expected = -(log_softmax([2.0, 0.0, -1.0])[0] + log_softmax([0.5, 1.5, 0.0])[2]) / 2
    assert math.isclose(losses.std(LOGITS, LABELS).item(), expected, rel_tol=1e-6)


def test_poe_is_cross_entropy_of_softmax_of_summed_log_probs():
    total = 0.0
    for row, bias, y in zip(LOGITS.tolist(), BIAS.tolist(), LABELS.tolist()):
        combined = [lp + math.log(b) for lp, b in zip(log_softmax(row), bias)]
        total += -log_softmax(combined)[y]
    assert math.isclose(losses.poe(LOGITS, LABELS, BIAS).item(), total / 2, rel_tol=1e-6)


def test_reweight_weights_by_one_minus_beta_and_normalises():
    w = [1 - 0.7, 1 - 0.4]
    ce = [-log_softmax([2.0, 0.0, -1.0])[0], -log_softmax([0.5, 1.5, 0.0])[2]]
    expected = (w[0] * ce[0] + w[1] * ce[1]) / (w[0] + w[1])
    assert math.isclose(losses.reweight(LOGITS, LABELS, BIAS).item(), expected, rel_tol=1e-6)


def test_confreg_scales_teacher_by_power_one_minus_beta():
    total = 0.0
    for row, teacher, beta in zip(LOGITS.tolist(), TEACHER.tolist(), [0.7, 0.4]):
        powered = [t ** (1 - beta) for t in teacher]
        scaled = [p / sum(powered) for p in powered]
        total += -sum(s * lp for s, lp in zip(scaled, log_softmax(row)))
    assert math.isclose(losses.confreg(LOGITS, LABELS, BIAS, TEACHER).item(), total / 2, rel_tol=1e-6)


def test_confreg_with_unbiased_example_keeps_teacher():
    beta = torch.tensor([0.0])
    assert torch.allclose(losses.scaled_teacher(TEACHER[:1], beta), TEACHER[:1])


def test_span_is_the_mean_of_the_start_and_end_cross_entropies():
    start = [[0.5, 2.0, -1.0, 0.0], [1.0, 0.0, 0.0, 3.0]]
    end = [[0.0, 0.0, 1.0, 2.5], [-2.0, 1.0, 0.5, 0.0]]
    positions = [[1, 3], [0, 2]]  # (start, end) per window; (0, 0) would be [CLS]
    expected = sum(-(log_softmax(s)[p] + log_softmax(e)[q]) / 2
                   for s, e, (p, q) in zip(start, end, positions)) / 2
    value = losses.span(torch.tensor(start), torch.tensor(end), torch.tensor(positions))
    assert math.isclose(value.item(), expected, rel_tol=1e-6)
