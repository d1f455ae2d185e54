"""Training losses (section 3.3, appendix A.2): pure functions of logits, labels and the bias
model's probabilities; never called inside a model's forward. SQuAD's span loss (TAMT) beside them.

beta_i = bias_probs[i, y_i], the bias model's probability of the gold class.
Reductions follow the authors' code (hg_transformers/clf_distill_loss_functions.py of
llyx97/sparse-and-robust-PLM): poe and confreg average over the batch,
reweight divides by the sum of the weights.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def std(logits, labels, bias_probs=None, teacher_probs=None):
    """L_std = -y . log p_m; for a score (one output: STS-B's regression head) the squared error."""
    if logits.shape[-1] == 1:
        return F.mse_loss(logits.squeeze(-1), labels.to(logits.dtype))
    return F.cross_entropy(logits, labels)


def poe(logits, labels, bias_probs, teacher_probs=None):
    """L_poe = -y . log softmax(log p_m + log p_b)"""
    combined = F.log_softmax(logits, dim=-1) + torch.log(bias_probs.clamp_min(1e-12))
    return F.cross_entropy(combined, labels)


def reweight(logits, labels, bias_probs, teacher_probs=None):
    """L_reweight = -(1 - beta) y . log p_m  (eq. 3), normalised by sum_i (1 - beta_i)."""
    weights = 1.0 - bias_probs.gather(1, labels[:, None]).squeeze(1)
    per_example = F.cross_entropy(logits, labels, reduction="none")
    return (weights * per_example).sum() / weights.sum().clamp_min(1e-12)


def scaled_teacher(teacher_probs, beta):
    """S(p_t, beta)_j = p_t_j^(1 - beta) / sum_k p_t_k^(1 - beta)  (eq. 4)."""
    powered = teacher_probs.clamp_min(1e-12) ** (1.0 - beta)[:, None]
    return powered / powered.sum(dim=-1, keepdim=True)


def confreg(logits, labels, bias_probs, teacher_probs):
    """L_confreg = -S(p_t, beta) . log p_m"""
    beta = bias_probs.gather(1, labels[:, None]).squeeze(1)
    target = scaled_teacher(teacher_probs, beta)
    return -(target * F.log_softmax(logits, dim=-1)).sum(dim=-1).mean()


def span(start_logits, end_logits, positions):
    """SQuAD's loss (TAMT section 4.1): the mean of the cross-entropies of the start and of the end
    logits against the gold (start, end) token positions, one row of `positions` per window, as
    BertForQuestionAnswering computes it for imp_and_fine_tune/squad_trans.py of llyx97/TAMT (its
    clamp to an ignored index never acts: gold positions lie inside their window)."""
    return (F.cross_entropy(start_logits, positions[:, 0]) + F.cross_entropy(end_logits, positions[:, 1])) / 2


LOSSES = {"std": std, "poe": poe, "reweight": reweight, "confreg": confreg}
