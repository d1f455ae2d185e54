"""Where and how runs execute: the device, bf16 autocast, moving a batch there, and whether
the training step is compiled. None of these are part of a run's key: they change speed,
not the computation (beyond float noise); final.json records what a run used."""

from __future__ import annotations

import functools
import os
from contextlib import contextmanager
import socket
import sys
import warnings

import torch


@functools.cache
def device() -> torch.device:
    """The first CUDA device if there is one, else the CPU (decided once: asked every batch)."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def use_precision(precision: str) -> None:
    """Set what a run's precision asks of the process before it computes (runs in one process
    run one after another): TF32 matmuls on CUDA for `tf32`, off otherwise."""
    tf32 = precision == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    if tf32 and device().type != "cuda":
        warnings.warn("precision tf32 applies to CUDA matmuls only: on this CPU the run computes in fp32",
                      RuntimeWarning, stacklevel=2)


def autocast(precision: str):
    """bf16 autocast for forward passes (RunConfig.precision); fp32 is a no-op context."""
    return torch.autocast(device().type, dtype=torch.bfloat16, enabled=precision == "bf16")


def model_inputs(batch: dict) -> dict:
    """A collated batch on the training device, without its example index. On CUDA the copy
    goes from pinned memory, so it does not wait for the GPU (no host sync per step)."""
    if device().type != "cuda":
        return {k: v for k, v in batch.items() if k != "index"}
    return {k: v.pin_memory().to(device(), non_blocking=True) for k, v in batch.items() if k != "index"}


def compiled() -> bool:
    """Whether training and evaluation steps run through torch.compile ($SRNETS_COMPILE: auto,
    on or off). auto = on CUDA only: there the eager step is bound by Python and kernel
    launches, and CUDA graphs remove both; on CPU compiling took ~48 s per run and gave no
    speed-up on the toy (measured: docs/MEASUREMENTS.md)."""
    choice = os.environ.get("SRNETS_COMPILE", "auto")
    if choice not in ("auto", "on", "off"):
        raise ValueError(f"SRNETS_COMPILE={choice!r}: expected auto, on or off")
    return choice == "on" or (choice == "auto" and device().type == "cuda")


def compile(fn):
    """torch.compile as runs use it: static shapes; on CUDA with CUDA graphs (mode
    reduce-overhead). Inductor's on-disk cache is kept apart per CPU instruction set (unless
    $TORCHINDUCTOR_CACHE_DIR is set): its key ignores ATEN_CPU_CAPABILITY and ONEDNN_MAX_CPU_ISA,
    and kernels cached on an AVX512 machine, reused with the README's AVX2 variables set,
    gave NaN losses and a segfault in tests/engine/test_step.py (torch 2.13; a fresh cache passed)."""
    from torch._inductor.runtime.cache_dir_utils import default_cache_dir

    # torch writes its default into the variable once asked (transformers asks on import)
    default = default_cache_dir()
    if os.environ.get("TORCHINDUCTOR_CACHE_DIR", default) == default:
        isa = torch.backends.cpu.get_cpu_capability().lower()
        onednn = os.environ.get("ONEDNN_MAX_CPU_ISA", "").lower()
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = f"{default}-{isa}" + (f"-onednn-{onednn}" if onednn else "")
    return torch.compile(fn, dynamic=False, mode="reduce-overhead" if device().type == "cuda" else None)


def fallback_warning(err: Exception, what: str, stacklevel: int = 2) -> str:
    """Warn once that `what` failed compiled and goes on eagerly; return the reason recorded in
    final.json (`execution.compile_fallback`)."""
    first = (str(err).strip().splitlines() or [""])[0][:300]
    reason = f"{type(err).__name__}: {first}"
    warnings.warn(f"{what} failed under torch.compile ({reason}); it goes on eagerly, as with "
                  "SRNETS_COMPILE=off (slower, the same computation up to float noise)", RuntimeWarning,
                  stacklevel=stacklevel + 1)
    return reason


@contextmanager
def threads(count: int | None):
    """Compute with `count` CPU threads (None: as the process has), then go back: on one CPU a
    run computed again with the thread count it first computed with gives the same bits, and with
    another count it does not (matrix products split their sums by thread; docs/MEASUREMENTS.md)."""
    before = torch.get_num_threads()
    if count is not None and count != before:
        torch.set_num_threads(count)
    try:
        yield
    finally:
        if torch.get_num_threads() != before:
            torch.set_num_threads(before)


def where() -> dict:
    """Which process computes a run: its host, its pid, and inside a Ray worker the Ray node's id
    (a cluster's nodes may share a host)."""
    info = {"host": socket.gethostname(), "pid": os.getpid(), "node": None}
    ray = sys.modules.get("ray")  # never imported here: only a process that runs Ray has a node
    if ray is not None and ray.is_initialized():
        info["node"] = ray.get_runtime_context().get_node_id()
    return info


def describe() -> dict:
    """What final.json records about the execution (and where it finished: `where`)."""
    info = {"device": device().type, "compiled": compiled(), "torch": torch.__version__, **where()}
    if device().type == "cuda":
        info["gpu"] = torch.cuda.get_device_name()
    else:  # CPU float results depend on the instruction set and the thread count (docs/MEASUREMENTS.md)
        info["cpu_capability"] = torch.backends.cpu.get_cpu_capability()
        info["threads"] = torch.get_num_threads()
    return info
