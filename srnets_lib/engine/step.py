"""One optimisation step as one unit: forward under autocast, loss, backward, gradient
clipping, optimiser and lr-schedule step. It returns the loss as a device tensor and never
waits for the device (no `.item()`), so on a GPU the host runs ahead.

Compiled (runtime.compiled(): on CUDA by default) the forward and backward go through
torch.compile; on CUDA with CUDA graphs (mode reduce-overhead), so a step is a few graph
replays instead of hundreds of kernel launches. Shapes stay static: every batch is padded to
the smallest of BUCKETS that holds it (padding is masked out of attention, so results only
move by float noise), and a short last batch runs eagerly. Everything that changes between
steps is a device tensor (mask thresholds) or outside the graph (the optimiser, the lr), so
nothing is recompiled after the first steps of each bucket.
"""

from __future__ import annotations

import math

import torch

from srnets_lib.engine import losses, runtime

BUCKETS = (32, 64, 96, 128)  # padded lengths of compiled steps (capped at max_length)


def bucket(length: int, max_length: int) -> int:
    """The padded length of a batch whose longest pair has `length` tokens."""
    return next((b for b in BUCKETS if length <= b <= max_length), max_length)


class ForwardLoss:
    """loss = L(f(x), y, bias, teacher): eager, or compiled when `compiled`. The compiled path ran
    on H100 and H200 GPUs (docs/MEASUREMENTS.md); where compiling, capturing a CUDA graph or the
    compiled backward fails (another GPU, driver or torch), `fall_back` switches this run to eager
    with one warning (fit.train_step)."""

    def __init__(self, model, loss: str, precision: str, compiled: bool):
        self.model, self.loss_fn, self.precision = model, losses.LOSSES[loss], precision
        self.compiled = compiled
        self.fallback: str | None = None  # why the compiled path was given up, if it was
        self.device_type = runtime.device().type  # not asked inside the traced function
        self._compiled_fn = None
        if compiled:
            self._compiled_fn = runtime.compile(self.eager)

    def fall_back(self, err: Exception, run: str) -> bool:
        """After `err` in a compiled step: go on eagerly (True), or False if already eager."""
        if self._compiled_fn is None:
            return False
        self._compiled_fn, self.compiled = None, False
        self.fallback = runtime.fallback_warning(err, f"run {run}: the compiled training step", stacklevel=3)
        return True

    def eager(self, inputs: dict, labels, bias_probs=None, teacher_probs=None) -> torch.Tensor:
        with torch.autocast(self.device_type, dtype=torch.bfloat16, enabled=self.precision == "bf16"):
            logits = self.model(**inputs).logits
        return self.loss_fn(logits.float(), labels, bias_probs, teacher_probs)

    def __call__(self, batch: dict):
        """The loss of a batch: its inputs, labels, bias and teacher probabilities (None where
        the loss reads none), and whether it is full (a short last batch runs eagerly)."""
        args = (batch["inputs"], batch["labels"], batch.get("bias_probs"), batch.get("teacher_probs"))
        if self._compiled_fn is None or not batch.get("full_batch", True):
            return self.eager(*args)
        if runtime.device().type == "cuda":
            torch.compiler.cudagraph_mark_step_begin()
        return self._compiled_fn(*args)


class BertAdam(torch.optim.Optimizer):
    """The optimiser of TAMT-KD (BertAdam, mask_training/transformer/optimization.py of
    llyx97/TAMT): Adam without bias correction, eps 1e-6 added to sqrt(v), and weight decay
    decoupled from the moments (lr * weight_decay * p, as AdamW). Its per-parameter gradient
    clipping (max_grad_norm 1.0) is Optimization's `per_parameter` clipping, applied before the
    moments as theirs; its warmup_linear schedule with warm-up 0 is Optimization's linear decay."""

    def __init__(self, params, lr: float, weight_decay: float = 0.0, betas=(0.9, 0.999), eps: float = 1e-6):
        super().__init__(params, {"lr": lr, "weight_decay": weight_decay, "betas": betas, "eps": eps})

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["next_m"], state["next_v"] = torch.zeros_like(p), torch.zeros_like(p)
                m, v = state["next_m"], state["next_v"]
                m.mul_(beta1).add_(p.grad, alpha=1 - beta1)
                v.mul_(beta2).addcmul_(p.grad, p.grad, value=1 - beta2)
                update = m / (v.sqrt() + group["eps"])  # no bias correction
                if group["weight_decay"] > 0:
                    update.add_(p, alpha=group["weight_decay"])
                p.add_(update, alpha=-group["lr"])


class HFAdamW(torch.optim.Optimizer):
    """The AdamW of transformers 2.x/3.x, which every AdamW run of the authors' code steps with
    (hg_transformers/optimization.py, AdamW.step, of llyx97/sparse-and-robust-PLM and of
    llyx97/TAMT; mask_training/optimization.py of llyx97/TAMT): eps is added to sqrt(v) before the
    bias correction, which is folded into the step size,
        p <- p - lr sqrt(1 - b2^t) / (1 - b1^t) * m / (sqrt(v) + eps),
    then the decoupled weight decay on the updated weight, p <- p - lr wd p. Its effective eps is
    eps / sqrt(1 - b2^t) in torch's terms: 31.6x at step 1, 1.26x at step 1000, so small gradients
    take smaller steps than torch's AdamW gives them. Each tensor counts its own steps (a tensor
    without a gradient is skipped, as theirs); the update itself runs as foreach kernels."""

    def __init__(self, params, lr: float, weight_decay: float = 0.0, betas=(0.9, 0.999), eps: float = 1e-8):
        super().__init__(params, {"lr": lr, "weight_decay": weight_decay, "betas": betas, "eps": eps})

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            params = [p for p in group["params"] if p.grad is not None]
            if not params:
                continue
            for p in params:
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["exp_avg"], state["exp_avg_sq"] = torch.zeros_like(p), torch.zeros_like(p)
                state["step"] += 1
            grads = [p.grad for p in params]
            exp_avg = [self.state[p]["exp_avg"] for p in params]
            exp_avg_sq = [self.state[p]["exp_avg_sq"] for p in params]
            torch._foreach_mul_(exp_avg, beta1)
            torch._foreach_add_(exp_avg, grads, alpha=1 - beta1)
            torch._foreach_mul_(exp_avg_sq, beta2)
            torch._foreach_addcmul_(exp_avg_sq, grads, grads, value=1 - beta2)
            denom = torch._foreach_sqrt(exp_avg_sq)
            torch._foreach_add_(denom, group["eps"])  # eps before the bias correction
            sizes = [-group["lr"] * math.sqrt(1 - beta2 ** self.state[p]["step"]) / (1 - beta1 ** self.state[p]["step"])
                     for p in params]
            torch._foreach_addcdiv_(params, exp_avg, denom, sizes)
            if group["weight_decay"] > 0:  # on the updated weight, as theirs
                torch._foreach_add_(params, params, alpha=-group["lr"] * group["weight_decay"])


OPTIMIZERS = ("adamw", "hf_adamw", "bertadam")


class Optimization:
    """torch's AdamW (or `hf_adamw`: the authors' AdamW above; `bertadam`: BertAdam, TAMT-KD's) with
    linear warm-up and linear decay to 0 over `steps` steps from each (re)start: a run's t_max, also for IMP, whose optimiser restarts at
    every pruning and decays over t_max again (the authors' IMP trainers); and gradient clipping at
    `max_grad_norm`: over all parameters together (`global`) or each parameter tensor alone
    (`per_parameter`, the authors' QQP scripts and BertAdam). Fused AdamW on CUDA."""

    def __init__(self, params: list[torch.nn.Parameter], lr: float, weight_decay: float, steps: int,
                 warmup: int, max_grad_norm: float | None = None, clip: str = "global", optimizer: str = "adamw"):
        self.params = params
        fused = bool(params) and params[0].is_cuda
        if optimizer == "bertadam":
            self.optimizer = BertAdam(params, lr=lr, weight_decay=weight_decay)
        elif optimizer == "hf_adamw":
            self.optimizer = HFAdamW(params, lr=lr, weight_decay=weight_decay)
        elif optimizer == "adamw":
            self.optimizer = torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay, fused=fused or None)
        else:
            raise ValueError(f"optimizer must be one of {', '.join(OPTIMIZERS)}, got {optimizer!r}")
        steps, warmup = max(1, steps), max(0, warmup)
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, lambda t: min(
            (t + 1) / max(1, warmup), max(0.0, (steps - t) / max(1, steps - warmup))))
        self.max_grad_norm, self.clip = max_grad_norm, clip

    def step(self, loss: torch.Tensor) -> None:
        """One update from `loss`; if its backward fails, nothing was updated (a retry is clean)."""
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if self.max_grad_norm is not None:
            clip_gradients(self.params, self.max_grad_norm, self.clip)
        self.optimizer.step()
        self.scheduler.step()

    def state_dict(self) -> dict:
        return {"optimizer": self.optimizer.state_dict(), "scheduler": self.scheduler.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])


def clip_gradients(params, max_norm: float, mode: str = "global") -> None:
    """Scale gradients so their L2 norm is at most `max_norm` (no host sync)."""
    grads = [p.grad for p in params if p.grad is not None]
    if not grads:
        return
    if mode == "global":
        torch.nn.utils.clip_grad_norm_(params, max_norm, foreach=True)
    elif mode == "per_parameter":
        norms = torch._foreach_norm(grads)
        scales = [torch.clamp(max_norm / (n + 1e-6), max=1.0) for n in norms]
        torch._foreach_mul_(grads, scales)
    else:
        raise ValueError(f"gradient clipping must be global or per_parameter, got {mode!r}")


def warmup_steps(warmup_steps: int | None, warmup_ratio: float, steps: int) -> int:
    """A fixed count when given (the authors' scripts: 3600 on MNLI), else a ratio of `steps`."""
    return warmup_steps if warmup_steps is not None else round(warmup_ratio * steps)


class NonFiniteLoss(FloatingPointError):
    """The training loss became NaN or infinite; the message names the run, step and value."""


class LossLog:
    """Losses since the last evaluation, kept on the device (one sync per check, not per step).
    `check` raises NonFiniteLoss naming the first bad step and its value."""

    def __init__(self, run: str):
        self.run, self.steps, self.values = run, [], []

    def add(self, step: int, loss: torch.Tensor) -> None:
        self.steps.append(step)
        self.values.append(loss.detach().clone())  # a CUDA-graph output is reused by the next replay

    def check(self) -> None:
        if not self.values:
            return
        values = torch.stack(self.values).float().cpu()
        bad = (~torch.isfinite(values)).nonzero()
        if len(bad):
            i = int(bad[0])
            raise NonFiniteLoss(f"run {self.run}: the training loss became {values[i].item()} at step "
                                f"{self.steps[i] + 1}; nothing was saved as finished (lower lr, or "
                                "set max_grad_norm)")

    def mean_and_reset(self) -> float | None:
        self.check()
        mean = float(torch.stack(self.values).float().mean()) if self.values else None
        self.steps, self.values = [], []
        return None if mean is None or math.isnan(mean) else mean
