"""The training step as one unit (step.py): compiled equals eager, clipping, the lr schedule,
and a non-finite loss stops the run with its step and value."""

import os

import numpy as np
import pytest
import torch

from srnets_lib.model import backbones, pruning
from srnets_lib.engine import runtime, step
from srnets_lib.settings.config import DataConfig
from srnets_lib.data.load import load_task
from srnets_lib.data.encode import collate, encode, train_batches


def _mask_training_losses(compiled: bool, steps: int = 4) -> list[float]:
    """A few mask-training steps of the tiny model with a threshold reset after each."""
    data = load_task("nli", DataConfig(train_size=128, dev_size=32, ood_size=32))
    encoded = encode(data.train, backbones.load_tokenizer("tiny"), 48, "tiny", cache=False)
    model = backbones.load_model("tiny", 3, seed=0)
    masked = pruning.install(model, backbones.is_mask_trained)
    model.requires_grad_(False)
    for module in masked.values():
        module.start_mask_training("hard", 0.5)
        module.cache_eval_weight = not compiled
    forward = step.ForwardLoss(model, "std", "fp32", compiled)
    optimization = step.Optimization([m.mask_scores for m in masked.values()], 1e-2, 0.0, 10, 2, 1.0)
    torch.manual_seed(1)
    model.train()
    losses = []
    for index in train_batches(encoded, 32, np.random.default_rng(0))[:steps]:
        # both paths pad to the bucket, so dropout draws the same masks
        width = step.bucket(int(encoded.lengths[index].max()), 48)
        loss = forward({"inputs": runtime.model_inputs(collate(encoded, index, 0, pad_to=width)),
                        "labels": torch.from_numpy(encoded.labels[index])})
        optimization.step(loss)
        losses.append(loss.item())
        for sparsity, module in zip([0.5, 0.6, 0.7, 0.8], masked.values()):
            module.reset_threshold(sparsity)  # thresholds move: must not recompile
    return losses


@pytest.mark.slow
def test_compiled_step_equals_eager_and_threshold_resets_do_not_recompile():
    import torch._dynamo
    import torch._inductor.config

    torch._dynamo.reset()
    eager = _mask_training_losses(compiled=False)
    with torch._dynamo.config.patch(error_on_recompile=True), \
            torch._inductor.config.patch(fallback_random=True):  # eager's dropout stream
        compiled = _mask_training_losses(compiled=True)
    assert compiled == pytest.approx(eager, abs=1e-5)
    assert len(set(round(x, 4) for x in eager)) > 1  # the masks moved between steps


@pytest.mark.slow
def test_imp_pruning_between_compiled_steps_does_not_recompile():
    import torch._dynamo

    data = load_task("nli", DataConfig(train_size=96, dev_size=32, ood_size=32))
    encoded = encode(data.train, backbones.load_tokenizer("tiny"), 48, "tiny", cache=False)
    model = backbones.load_model("tiny", 3, seed=0)
    masked = pruning.install(model, backbones.is_imp_prunable)
    forward = step.ForwardLoss(model, "std", "fp32", compiled=True)
    optimization = step.Optimization([p for p in model.parameters() if p.requires_grad], 1e-3, 0.0, 10, 0)
    torch._dynamo.reset()
    with torch._dynamo.config.patch(error_on_recompile=True):
        for sparsity, index in zip([0.1, 0.2, 0.3], train_batches(encoded, 32, np.random.default_rng(0))):
            for module in masked.values():  # algorithm 1: prune, then train on
                pruning.magnitude_prune(module, sparsity)
            loss = forward({"inputs": runtime.model_inputs(collate(encoded, index, 0, pad_to=32)),
                            "labels": torch.from_numpy(encoded.labels[index])})
            optimization.step(loss)
    for module in masked.values():
        assert (~module.mask).sum().item() == pruning.pruned_count(module.mask.numel(), 0.3)


def test_compiled_kernels_are_cached_per_cpu_instruction_set(monkeypatch):
    """Inductor's cache key ignores ATEN_CPU_CAPABILITY: a shared cache gave NaN under avx2."""
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX2")
    runtime.compile(torch.nn.Identity())  # compiles lazily, at the first call
    chosen = os.environ["TORCHINDUCTOR_CACHE_DIR"]
    assert chosen.endswith(f"-{torch.backends.cpu.get_cpu_capability().lower()}-onednn-avx2")
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", "/somewhere/else")
    runtime.compile(torch.nn.Identity())
    assert os.environ["TORCHINDUCTOR_CACHE_DIR"] == "/somewhere/else"  # a user's choice is kept


def test_bucket_is_the_smallest_that_fits_capped_at_max_length():
    assert [step.bucket(n, 128) for n in (1, 32, 33, 97, 128)] == [32, 32, 64, 128, 128]
    assert step.bucket(40, 48) == 48


def test_global_clipping_bounds_the_total_norm_per_parameter_each_tensor():
    a, b = torch.nn.Parameter(torch.zeros(3)), torch.nn.Parameter(torch.zeros(4))
    a.grad, b.grad = torch.full((3,), 4.0), torch.full((4,), 0.1)
    step.clip_gradients([a, b], 1.0, "global")
    assert torch.cat([a.grad, b.grad]).norm().item() == pytest.approx(1.0, rel=1e-4)
    a.grad, b.grad = torch.full((3,), 4.0), torch.full((4,), 0.1)
    step.clip_gradients([a, b], 1.0, "per_parameter")
    assert a.grad.norm().item() == pytest.approx(1.0, rel=1e-4)
    assert torch.allclose(b.grad, torch.full((4,), 0.1))  # already below 1: untouched


def test_lr_warms_up_linearly_then_decays_to_zero():
    p = torch.nn.Parameter(torch.zeros(1))
    opt = step.Optimization([p], 1.0, 0.0, steps=10, warmup=4)
    lrs = []
    for _ in range(10):
        lrs.append(opt.optimizer.param_groups[0]["lr"])
        p.grad = torch.zeros(1)
        opt.optimizer.step()
        opt.scheduler.step()
    assert lrs[:4] == pytest.approx([0.25, 0.5, 0.75, 1.0])
    assert lrs[4:] == pytest.approx([1.0, 5 / 6, 4 / 6, 3 / 6, 2 / 6, 1 / 6])


def test_non_finite_loss_names_the_step_and_value():
    log = step.LossLog("nli-finetune-std-x")
    for at, value in enumerate([0.7, 0.6, float("nan"), float("inf")]):
        log.add(at, torch.tensor(value))
    with pytest.raises(step.NonFiniteLoss, match=r"nli-finetune-std-x.*became nan at step 3"):
        log.check()


class _FailsInBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, loss):
        return loss.clone()

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError("CUDA graph capture failed in the backward (a fake)")


def _broken_compile(fn):
    """What a compiled path that cannot run looks like: the training step's backward fails (after
    a forward that worked), the evaluation forward fails at once."""
    def call(*args, **kwargs):
        out = fn(*args, **kwargs)
        if isinstance(out, torch.Tensor):  # the step's loss
            return _FailsInBackward.apply(out)
        raise RuntimeError("inductor could not compile the evaluation forward (a fake)")
    return call


def test_a_compiled_path_that_fails_goes_on_eagerly_with_one_warning(store, monkeypatch):
    """Where the compiled step and evaluation cannot run (another GPU, driver or torch): when
    compiling, capture or the compiled backward fails, the run warns once per part, goes on eagerly to the
    end, and final.json says why."""
    import warnings

    from srnets_lib.settings.config import RunConfig
    from srnets_lib.sweeps.executors import execute

    config = RunConfig(task="nli", backbone="tiny", data=DataConfig(train_size=64, dev_size=32, ood_size=32),
                       epochs=1, batch_size=32, eval_interval=1, max_length=48)
    eager = execute(config, root=store / "eager")
    monkeypatch.setenv("SRNETS_COMPILE", "on")
    monkeypatch.setattr(runtime, "compile", _broken_compile)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = execute(config, root=store / "compiled")
    said = [str(w.message) for w in caught if "goes on eagerly" in str(w.message)]
    assert len(said) == 2 and "training step" in said[0] and "evaluation" in said[1], said
    fallback = result.execution["compile_fallback"]
    assert "in the backward (a fake)" in fallback["training"] and "evaluation forward" in fallback["evaluation"]
    # every step and evaluation ran (batches stay padded to the compiled buckets, so dropout draws
    # differ from the eager run's: the scores are not compared)
    assert (result.steps_run, result.evaluations, set(result.ood)) == (eager.steps_run, eager.evaluations, set(eager.ood))
    assert "compile_fallback" not in eager.execution


def test_bench_says_which_path_ran(monkeypatch):
    """bench's compiled variant, when compiling fails, is measured eagerly and labelled so (and
    `plan` never takes its rate for a compiled one)."""
    import argparse

    from srnets_lib.tools.bench import measure, workloads

    monkeypatch.setattr(runtime, "compile", _broken_compile)
    encoded = workloads.encoded_lengths("synthetic", 48)
    args = argparse.Namespace(batch_size=8, max_length=48, warmup=1, steps=2, lengths="synthetic",
                              eval_examples=32, eval_batch_size=16)
    with pytest.warns(RuntimeWarning, match="goes on eagerly"):
        row = measure.measure("tiny", "finetune", "compiled", encoded, args)
    assert row["path"].startswith("eager (compiling failed: RuntimeError: CUDA graph capture failed")
    assert measure.measure("tiny", "finetune", "ours", encoded, args)["path"] == "eager"
    with pytest.warns(RuntimeWarning, match="goes on eagerly"):
        assert measure.measure("tiny", "eval", "compiled", encoded, args)["path"].startswith("eager (compiling failed")


def test_tf32_is_an_explicit_precision_that_a_cpu_computes_in_fp32(store):
    """precision: tf32 turns on TF32 matmuls for CUDA (a key field: its results are never taken
    for fp32 ones); on a CPU it warns and computes exactly what fp32 does."""
    from srnets_lib.settings.config import RunConfig
    from srnets_lib.sweeps.executors import execute

    config = RunConfig(task="nli", backbone="tiny", data=DataConfig(train_size=64, dev_size=32, ood_size=32),
                       epochs=1, batch_size=32, eval_interval=1, max_length=48)
    tf32 = config.model_copy(update={"precision": "tf32"})
    assert tf32.key() != config.key()
    with pytest.warns(RuntimeWarning, match="tf32 applies to CUDA matmuls only"):
        a = execute(tf32)
    assert torch.backends.cuda.matmul.allow_tf32
    b = execute(config)
    assert not torch.backends.cuda.matmul.allow_tf32
    assert (a.id, a.ood, a.selected_step) == (b.id, b.ood, b.selected_step)
