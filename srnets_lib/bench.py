"""Training-step speed, srnets vs a naive reference, measured side by side in one process.

    python -m srnets_lib.bench                       # tiny + packaged, all workloads
    python -m srnets_lib.bench --models bert-base --workloads mask --steps 3

Workloads (one optimiser step each, the same examples, model shape and batch size):
  finetune  all weights train (embeddings frozen, as in params/toy.yaml)
  mask      only the mask scores train (algorithm 2); every weight frozen
  imp       weights train under a fixed 50% magnitude mask (algorithm 1 between pruning steps)

Variants, each adding one change to the one before it:
  naive     the authors' setting: fp32, every pair padded to --max-length, random batches,
            eager attention, torch's dropout, and autograd through the frozen weights (every
            parameter requires grad; the optimiser only steps the trainable ones)
  fp32 pad  srnets_lib's training step: frozen weights get no gradient, SDPA attention
  bf16 pad  + RunConfig.precision=bf16 (autocast; weights stay fp32)
  ours pad  + RunConfig.dropout_rng=fast (srnets_lib/dropout.py): params/toy.yaml's settings
  ours      + dynamic padding with length-grouped batches: the real lengths
The ratios `ours pad / naive` (same padded workload) and `ours / naive` are the headline.

Memory: CUDA peak allocated; on CPU the peak resident-set growth from the first step on
(activations, gradients, optimiser state; not the weights), sampled every 2 ms. Model FLOPs count the real (non-padding) tokens only:
6 * prunable-and-dense matmul parameters * tokens + attention. On a GPU the achieved TFLOP/s
are compared with a measured bf16 matmul peak (model-FLOP utilisation, MFU).
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import statistics
import threading
import time
from pathlib import Path

import numpy as np
import torch

from . import dropout, models, pruning
from .data import load_task
from .config import DataConfig
from .data.encode import collate, encode, train_batches
from .train import autocast, device, model_inputs

WORKLOADS = ("finetune", "mask", "imp")
# variant: (precision, padded to --max-length, dropout_rng); see the docstring
VARIANTS = {"naive": ("fp32", True, "torch"), "fp32 pad": ("fp32", True, "torch"),
            "bf16 pad": ("bf16", True, "torch"), "ours pad": ("bf16", True, "fast"),
            "ours": ("bf16", False, "fast")}


def build_model(name: str, num_labels: int, naive: bool, dropout_rng: str = "torch"):
    """The benchmarked model: 'tiny', 'packaged' (all 6 layers), 'packaged-2' (the toy's 2 layers)
    or 'bert-base' (BERT-base shape, random weights: speed does not depend on the values)."""
    from transformers import BertConfig, BertForSequenceClassification

    attention = "eager" if naive else "sdpa"
    torch.manual_seed(0)
    if name == "bert-base":
        model = BertForSequenceClassification(BertConfig(num_labels=num_labels, attn_implementation=attention))
    elif name == "tiny":
        model = models.load_model("tiny", num_labels)
    else:
        layers = int(name.split("-")[1]) if "-" in name else None
        model = models.load_model("packaged", num_labels, layers)
    model.set_attn_implementation(attention)
    if dropout_rng == "fast":
        dropout.use_fast_dropout(model)
    return model


class PeakMemory:
    """Peak memory over a block: CUDA allocator peak, or sampled RSS growth on CPU."""

    def __enter__(self):
        self.peak = 0
        if device().type == "cuda":
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
        if device().type == "cuda":
            self.peak = torch.cuda.max_memory_allocated() - self.base
        else:
            self._stop.set()
            self._thread.join()


def model_flops(model, tokens: int, lengths: np.ndarray) -> float:
    """Forward+backward FLOPs on the real tokens: 6 N T for the matmuls, plus attention."""
    config = model.config
    matmul = sum(m.weight.numel() for m in model.modules()
                 if isinstance(m, (torch.nn.Linear, pruning.MaskedLinear)))
    attention = 12 * config.num_hidden_layers * config.hidden_size * float((lengths ** 2).sum())
    return 6.0 * matmul * tokens + attention


def matmul_peak() -> float:
    """Measured bf16 (GPU) / fp32 (CPU) matmul FLOP/s on large square matrices."""
    dev = device()
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
    if device().type == "cuda":
        torch.cuda.synchronize()


def measure(model_name: str, workload: str, variant: str, encoded, args) -> dict:
    naive = variant == "naive"
    precision, padded, dropout_rng = VARIANTS[variant]
    model = build_model(model_name, 3, naive, dropout_rng).to(device())
    masked = {}
    if workload in ("mask", "imp"):
        masked = pruning.install(model, models.is_mask_trained)
    if workload == "mask":
        model.requires_grad_(False)
        for module in masked.values():
            module.start_mask_training("hard", 0.5)
        trainable = [m.mask_scores for m in masked.values()]
    else:
        models.freeze_embeddings(model)
        for module in masked.values():
            pruning.magnitude_prune(module, 0.5)
        trainable = [p for p in model.parameters() if p.requires_grad]
    if naive:  # autograd through every frozen weight; only `trainable` is stepped
        model.requires_grad_(True)
    optimizer = torch.optim.AdamW(trainable, lr=1e-4)
    pad_to = args.max_length if padded else None
    rng = np.random.default_rng(0)
    batches = train_batches(encoded, args.batch_size, rng, group_by_length=not padded)
    batches = [b for b in batches if len(b) == args.batch_size]
    model.train()

    def step(index):
        inputs = model_inputs(collate(encoded, index, 0, pad_to))
        labels = torch.from_numpy(encoded.labels[index]).to(device())
        with autocast(precision):
            logits = model(**inputs).logits
        loss = torch.nn.functional.cross_entropy(logits.float(), labels)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        if workload == "mask":
            pruning.masks.invalidate_all(masked)

    times, tokens, lengths = [], 0, []
    with PeakMemory() as memory:  # from the first step: activations, gradients, optimiser state
        for i in range(args.warmup):
            step(batches[i % len(batches)])
        _sync()
        for i in range(args.steps):
            index = batches[(args.warmup + i) % len(batches)]
            start = time.perf_counter()
            step(index)
            _sync()
            times.append(time.perf_counter() - start)
            tokens += int(encoded.lengths[index].sum())
            lengths.append(encoded.lengths[index])
    seconds = statistics.median(times)
    per_step_tokens = tokens / args.steps
    flops = model_flops(model, tokens, np.concatenate(lengths)) / args.steps
    return {"model": model_name, "workload": workload, "variant": variant,
            "s_per_step": seconds, "examples_per_s": args.batch_size / seconds,
            "tokens_per_s": per_step_tokens / seconds,
            "padded_tokens_per_step": args.batch_size * args.max_length if pad_to else None,
            "peak_mem_mb": memory.peak / 2 ** 20, "model_tflops": flops / seconds / 1e12}


def environment() -> dict:
    import transformers

    dev = device()
    name = torch.cuda.get_device_name() if dev.type == "cuda" else (platform.processor() or platform.machine())
    return {"date": datetime.datetime.now().isoformat(timespec="seconds"), "device": dev.type,
            "device_name": name, "threads": torch.get_num_threads(), "torch": torch.__version__,
            "transformers": transformers.__version__, "python": platform.python_version()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m srnets_lib.bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=["tiny", "packaged"],
                        choices=["tiny", "packaged", "packaged-2", "bert-base"])
    parser.add_argument("--workloads", nargs="+", default=list(WORKLOADS), choices=WORKLOADS)
    parser.add_argument("--task", default="nli", help="synthetic task whose real lengths are used")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--steps", type=int, default=8, help="measured steps (the median is reported)")
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--out", default="bench/results.json", help="appends one record per run")
    args = parser.parse_args(argv)

    data = load_task(args.task, DataConfig(train_size=2000, dev_size=50, ood_size=50))
    tokenizer = models.load_tokenizer("packaged")
    encoded = encode(data.train, tokenizer, args.max_length, "packaged", cache=False)
    env = environment()
    peak = matmul_peak()
    env["matmul_peak_tflops"] = peak / 1e12
    print(f"{env['device_name']} ({env['device']}, {env['threads']} threads), torch {env['torch']}; "
          f"matmul peak {peak / 1e12:.2f} TFLOP/s; {args.task} mean length "
          f"{encoded.lengths.mean():.1f} tokens, padded to {args.max_length}")
    rows = []
    header = f"{'model':10} {'workload':9} {'variant':14} {'s/step':>8} {'ex/s':>8} {'tok/s':>9} " \
             f"{'mem MB':>8} {'TFLOP/s':>8} {'vs naive':>8}"
    print(header)
    for model_name in args.models:
        for workload in args.workloads:
            naive_s = None
            for variant in VARIANTS:
                row = measure(model_name, workload, variant, encoded, args)
                naive_s = naive_s or row["s_per_step"]
                row["speedup_vs_naive"] = naive_s / row["s_per_step"]
                if env["device"] == "cuda":
                    row["mfu"] = row["model_tflops"] * 1e12 / peak
                rows.append(row)
                print(f"{model_name:10} {workload:9} {variant:14} {row['s_per_step']:8.3f} "
                      f"{row['examples_per_s']:8.1f} {row['tokens_per_s']:9.0f} {row['peak_mem_mb']:8.0f} "
                      f"{row['model_tflops']:8.3f} {row['speedup_vs_naive']:7.2f}x", flush=True)
    record = {"environment": env, "args": vars(args), "rows": rows}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    history = json.loads(out.read_text()) if out.exists() else []
    out.write_text(json.dumps(history + [record], indent=1) + "\n")
    print(f"written to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
