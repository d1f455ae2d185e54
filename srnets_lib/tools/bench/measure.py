"""How the benchmark measures: median seconds per step of one workload and variant (training or
evaluation), peak memory, model FLOPs on the real tokens, the device's matmul peak, several runs
sharing the device, and the environment a row was measured in."""

from __future__ import annotations

import datetime
import platform
import statistics
import threading
import time

import numpy as np
import torch

from srnets_lib.data.encode import Encoded, eval_batches, train_batches
from srnets_lib.model import backbones, pruning
from srnets_lib.engine import runtime, step
from srnets_lib.tools.bench.workloads import VARIANTS, prepare, setting, training_batch, training_step

class PeakMemory:
    """Peak memory over a block: CUDA allocator peak, or sampled RSS growth on CPU."""

    def __enter__(self):
        self.peak = 0
        if runtime.device().type == "cuda":
            torch.cuda.reset_peak_memory_stats()
            self.base = torch.cuda.memory_allocated()
            return self
        import psutil

        process = psutil.Process()
        self.base = process.memory_info().rss
        self._stop = threading.Event()

        def sample():
            while not self._stop.is_set():
                self.peak = max(self.peak, process.memory_info().rss - self.base)
                time.sleep(0.002)

        self._thread = threading.Thread(target=sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        if runtime.device().type == "cuda":
            self.peak = torch.cuda.max_memory_allocated() - self.base
        else:
            self._stop.set()
            self._thread.join()


def model_flops(model, tokens: int, lengths: np.ndarray, backward: bool = True) -> float:
    """FLOPs on the real tokens: (6 forward+backward, or 2 forward) N T for the matmuls, plus attention.
    A pre-training model counts its encoder's (the MLM head reads the predicted positions only)."""
    config = model.config
    modules = (getattr(model, model.base_model_prefix) if backbones.mlm_head(model) is not None else model).modules()
    matmul = sum(m.weight.numel() for m in modules if isinstance(m, (torch.nn.Linear, pruning.MaskedLinear)))
    attention = 4 * config.num_hidden_layers * config.hidden_size * float((lengths ** 2).sum())
    factor = 3 if backward else 1
    return factor * (2.0 * matmul * tokens + attention)


def matmul_peak() -> float:
    """Measured bf16 (GPU) / fp32 (CPU) matmul FLOP/s on large square matrices."""
    dev = runtime.device()
    n, dtype = (8192, torch.bfloat16) if dev.type == "cuda" else (1024, torch.float32)
    a, b = torch.randn(n, n, device=dev, dtype=dtype), torch.randn(n, n, device=dev, dtype=dtype)
    for _ in range(3):
        a @ b
    _sync()
    repeats = 20 if dev.type == "cuda" else 5
    start = time.perf_counter()
    for _ in range(repeats):
        a @ b
    _sync()
    return 2 * n ** 3 * repeats / (time.perf_counter() - start)


def _sync():
    if runtime.device().type == "cuda":
        torch.cuda.synchronize()



def measure(model_name: str, workload: str, variant: str, encoded: Encoded, args, barrier=None) -> dict:
    """Median seconds per step (per evaluation batch for `eval`) of one workload and variant."""
    if workload == "eval":
        return measure_eval(model_name, variant, encoded, args)
    precision, padding, _, compiled = VARIANTS[variant]
    runtime.use_precision(precision)
    model, trainable, teacher = prepare(model_name, workload, variant)
    forward, update = training_step(model, trainable, variant, workload, teacher)
    padded = padding == "max"
    rng, vocab_size = np.random.default_rng(0), model.config.vocab_size
    batches = [b for b in train_batches(encoded, args.batch_size, np.random.default_rng(0), group_by_length=not padded)
               if len(b) == args.batch_size]
    model.train()

    def one(index):
        width = args.max_length if padded else (
            step.bucket(int(encoded.lengths[index].max()), args.max_length) if compiled else None)
        batch = training_batch(encoded, index, width, workload, vocab_size, rng)
        try:
            loss = forward(batch)
            update(loss)
        except Exception as err:  # the compiled step failed: measured eagerly from here, and said so
            if not (isinstance(forward, step.ForwardLoss) and forward.fall_back(err, f"bench {variant}")):
                raise
            loss = forward(batch)
            update(loss)
        return loss

    times, tokens, lengths = [], 0, []
    with PeakMemory() as memory:  # from the first step: activations, gradients, optimiser state
        for index in warmup_batches(batches, encoded, args, compiled, padded):
            one(index)
        _sync()
        if barrier is not None:
            barrier.wait()
        began = time.perf_counter()
        for i in range(args.steps):
            index = batches[(args.warmup + i) % len(batches)]
            start = time.perf_counter()
            one(index)
            if barrier is None:  # sharing runs time the whole sequence without per-step syncs
                _sync()
                times.append(time.perf_counter() - start)
            tokens += int(encoded.lengths[index].sum())
            lengths.append(encoded.lengths[index])
        _sync()
        total = time.perf_counter() - began
    seconds = statistics.median(times) if times else total / args.steps
    lengths = np.concatenate(lengths)
    flops = model_flops(model, tokens, lengths) / args.steps
    if teacher is not None:
        flops += model_flops(teacher, tokens, lengths, backward=False) / args.steps
    return {"model": model_name, "workload": workload, "variant": variant, "lengths": args.lengths,
            "s_per_step": seconds, "examples_per_s": args.batch_size / seconds,
            "tokens_per_s": tokens / args.steps / seconds,
            "padded_tokens_per_step": args.batch_size * args.max_length if padded else None,
            "peak_mem_mb": memory.peak / 2 ** 20, "model_tflops": flops / seconds / 1e12, "total_s": total,
            "path": path(compiled, getattr(forward, "fallback", None)), **setting(variant)}


def warmup_batches(batches: list, encoded: Encoded, args, compiled: bool, padded: bool) -> list:
    """The batches run before timing: --warmup of them, and on real lengths every shape the timed
    steps meet: --warmup batches of each padded width for a compiled step (each width compiles and
    records its own CUDA graph), and on CUDA each timed batch once for an eager one (a shape's
    first step there is slow: on an H100 BERT-base's eager mask and fine-tuning rows, the first
    to meet each length, took 0.18-0.20 s a step, its IMP row, on lengths met before, 0.03 s)."""
    chosen = [batches[i % len(batches)] for i in range(args.warmup)]
    timed = [batches[(args.warmup + i) % len(batches)] for i in range(args.steps)]
    if padded:
        return chosen
    if compiled:
        def width(index):
            return step.bucket(int(encoded.lengths[index].max()), args.max_length)

        for w in sorted({width(b) for b in timed}):
            chosen += [b for b in batches if width(b) == w][: args.warmup]
    elif runtime.device().type == "cuda":
        chosen += timed
    return chosen


def path(compiled: bool, fallback: str | None) -> str:
    """Which path a measurement ran: compiled, eager, or eager after compiling failed (and why)."""
    return "eager" if not compiled else ("compiled" if fallback is None else f"eager (compiling failed: {fallback})")


@torch.inference_mode()
def measure_eval(model_name: str, variant: str, encoded: Encoded, args) -> dict:
    """Evaluation throughput: predictions over `--eval-examples` examples at the evaluation batch size."""
    from srnets_lib.engine.evaluation import predict

    precision, padding, _, compiled = VARIANTS[variant]
    runtime.use_precision(precision)
    model, _, _ = prepare(model_name, "finetune", variant)
    forward = runtime.compile(model) if compiled else None
    subset = Encoded(encoded.ids, encoded.type_ids, encoded.offsets[: args.eval_examples + 1],
                     encoded.labels[: args.eval_examples])
    pad_to = args.max_length if padding == "max" else None
    lengths = subset.lengths
    fallback = None
    try:  # warm-up (and compiling)
        predict(model, subset, args.eval_batch_size, 0, precision, forward, args.max_length, pad_to)
    except Exception as err:
        if forward is None:
            raise
        forward, fallback = None, runtime.fallback_warning(err, f"bench {variant} evaluation")
    _sync()
    start = time.perf_counter()
    for _ in range(args.steps):
        predict(model, subset, args.eval_batch_size, 0, precision, forward, args.max_length, pad_to)
    _sync()
    seconds = (time.perf_counter() - start) / args.steps
    flops = model_flops(model, int(lengths.sum()), lengths, backward=False)
    batches = len(eval_batches(subset, args.eval_batch_size))
    return {"model": model_name, "workload": "eval", "variant": variant, "lengths": args.lengths,
            "s_per_step": seconds / batches, "examples_per_s": len(subset) / seconds,
            "tokens_per_s": float(subset.lengths.sum()) / seconds, "padded_tokens_per_step": None,
            "peak_mem_mb": None, "model_tflops": flops / seconds / 1e12, "path": path(compiled, fallback),
            **setting(variant)}


def _shared_worker(model_name, variant, encoded, args, barrier, queue):
    queue.put(measure(model_name, "mask", variant, encoded, args, barrier)["total_s"])


def sharing(model_name: str, variant: str, encoded: Encoded, args, counts: list[int]) -> dict[str, float]:
    """Aggregate mask-training steps/s of N processes sharing the device, relative to one."""
    import torch.multiprocessing as mp

    context = mp.get_context("spawn")
    rates = {}
    for n in counts:
        barrier, queue = context.Barrier(n), context.Queue()
        workers = [context.Process(target=_shared_worker, args=(model_name, variant, encoded, args, barrier, queue))
                   for _ in range(n)]
        for w in workers:
            w.start()
        totals = [queue.get() for _ in workers]
        for w in workers:
            w.join()
        rates[n] = n * args.steps / max(totals)
        print(f"sharing: {n} run(s) of {model_name} mask ({variant}): {rates[n]:.2f} steps/s in all", flush=True)
    return {str(n): rate / rates[counts[0]] * counts[0] for n, rate in rates.items()}




def environment() -> dict:
    import transformers

    dev = runtime.device()
    name = torch.cuda.get_device_name() if dev.type == "cuda" else (platform.processor() or platform.machine())
    return {"date": datetime.datetime.now().isoformat(timespec="seconds"), "device": dev.type,
            "device_name": name, "threads": torch.get_num_threads(), "torch": torch.__version__,
            "transformers": transformers.__version__, "python": platform.python_version(),
            "cpu_capability": torch.backends.cpu.get_cpu_capability()}
