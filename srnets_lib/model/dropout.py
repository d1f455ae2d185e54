"""Dropout with cheaper random masks on CPU (`RunConfig.dropout_rng: fast`).

BERT drops 10% of every hidden state and of every attention probability (batch x heads x
length x length entries per layer). torch's CPU dropout draws one 32-bit mt19937 number per
entry; at batch 32 and length 128 those draws were a quarter of a padded mask-training step of
the toy's 2-layer MiniLM (torch.profiler: aten::bernoulli_ 24.5% of the step). Here each 64-bit
draw gives four 16-bit lanes and an entry is kept when its lane is below round(65536 (1 - p)):
the keep probability is exact to 2^-16 (p = 0.1 keeps 58982/65536 = 0.899994), and kept entries
are scaled by 1/(1 - p) as in torch.

The mask differs from torch's for the same seed, so it is a run setting (part of the run key);
the default `torch` keeps torch's dropout. On CUDA both settings use torch's own dropout and
fused attention (Philox draws are cheap there). Measured by `python -m srnets_lib.tools.bench`.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

NAME = "srnets_fast_dropout"  # the attention implementation registered with transformers
_LANES = 4  # 16-bit lanes per 64-bit draw


def keep_mask(shape: torch.Size, p: float, device: torch.device) -> torch.Tensor:
    """Boolean mask, True with probability round(65536 (1 - p)) / 65536 per entry."""
    threshold = round(65536 * (1.0 - p)) - 32768
    if threshold > 32767:  # p < 2^-17: every entry kept (32768 does not fit an int16)
        return torch.ones(shape, dtype=torch.bool, device=device)
    numel = shape.numel()
    draws = torch.randint(-2 ** 63, 2 ** 63 - 1, ((numel + _LANES - 1) // _LANES,), dtype=torch.int64,
                          device=device)
    lanes = draws.view(torch.int16)[:numel].view(shape)  # each uniform on [-32768, 32767]
    return lanes < threshold


class _Dropout(torch.autograd.Function):
    """y = x * m / (1 - p); the boolean mask (1 byte per entry) is all backward keeps."""

    @staticmethod
    def forward(ctx, x, p):
        keep = keep_mask(x.shape, p, x.device)
        ctx.save_for_backward(keep)
        ctx.scale = 1.0 / (1.0 - p)
        return x * keep * ctx.scale

    @staticmethod
    def backward(ctx, grad):
        (keep,) = ctx.saved_tensors
        return grad * keep * ctx.scale, None


def fast_dropout(x: torch.Tensor, p: float, training: bool = True) -> torch.Tensor:
    if not training or p == 0.0:
        return x
    if x.is_cuda or p == 1.0:
        return F.dropout(x, p, True)
    return _Dropout.apply(x, p)


class FastDropout(nn.Dropout):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return fast_dropout(x, self.p, self.training)


def attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    """transformers attention function: SDPA, except that on CPU with dropout (where SDPA
    falls back to its unfused path anyway) the probabilities are dropped with `fast_dropout`."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    if dropout == 0.0 or query.is_cuda:
        return sdpa_attention_forward(module, query, key, value, attention_mask, scaling=scaling,
                                      dropout=dropout, **kwargs)
    scaling = query.size(-1) ** -0.5 if scaling is None else scaling
    scores = torch.matmul(query, key.transpose(2, 3)) * scaling
    if attention_mask is not None:  # boolean (sdpa_mask: True = attend) or additive
        if attention_mask.dtype == torch.bool:
            scores = scores.masked_fill(~attention_mask, torch.finfo(scores.dtype).min)
        else:
            scores = scores + attention_mask
    probs = fast_dropout(scores.softmax(-1), dropout)
    return torch.matmul(probs, value).transpose(1, 2).contiguous(), probs


def use_fast_dropout(model: nn.Module) -> nn.Module:
    """Replace every nn.Dropout by FastDropout and route attention through `attention`."""
    from transformers import AttentionInterface, AttentionMaskInterface
    from transformers.masking_utils import sdpa_mask

    AttentionInterface.register(NAME, attention)
    AttentionMaskInterface.register(NAME, sdpa_mask)
    for module in list(model.modules()):
        for child_name, child in list(module.named_children()):
            if type(child) is nn.Dropout:
                setattr(module, child_name, FastDropout(child.p).train(child.training))
    model.set_attn_implementation(NAME)
    return model
