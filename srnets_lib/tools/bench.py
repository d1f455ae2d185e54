"""Training-step speed, srnets vs a naive reference, measured side by side in one process.

    python -m srnets_lib.tools.bench                                  # CPU: tiny, packaged-2, packaged
    python -m srnets_lib.tools.bench --models bert-base --workloads mask finetune imp eval --sharing 1 2 4   # GPU

Workloads (one optimiser step each, the same examples, model shape and batch size):
  finetune  all weights train (embeddings frozen, as in params/toy.yaml)
  mask      only the mask scores train (algorithm 2); every weight frozen
  imp       weights train under a fixed 50% magnitude mask (algorithm 1 between pruning steps)
  eval      inference over the examples at the evaluation batch size (no optimiser)
  mlm, kd, mlm+kd   task-agnostic mask training (TAMT section 3.4) on unlabelled blocks: the
            pre-training model (encoder, pooler, MLM head), masks at 50%, the objective of
            pretraining.py (KD: against a frozen dense teacher). Never compiled (pretraining.py):
            compiled variants are skipped for them. Their naive reference computes the MLM
            logits at every position, as BertForMaskedLM does.

Lengths: `synthetic` (the toy's synthetic NLI pairs, mean ~14 tokens), `mnli-like` (generated:
log-normal word-piece counts with mean ~40 and a tail to 128, as MNLI pairs under BERT's
tokenizer; no download) or `full` (every example --max-length tokens: WikiText-103's 512-token
blocks, SQuAD's 384-token windows). Default: mnli-like for bert-base, synthetic otherwise.

Variants, each adding one change to the one before it:
  naive     the authors' setting: fp32, every pair padded to --max-length, random batches, eager
            attention, torch's dropout, autograd through every frozen weight
  fp32 pad  srnets_lib's training step (step.py), eager: no gradients for frozen weights, SDPA
  tf32 pad  + precision tf32 (fp32 with TF32 matmuls on CUDA)
  bf16 pad  + precision bf16 (autocast; weights stay fp32)
  ours pad  + dropout_rng fast on CPU (srnets_lib/dropout.py); on CUDA the same as bf16 pad
  ours      + dynamic padding in length-grouped batches: the real lengths
  compiled  + torch.compile of the step (CUDA graphs on GPU), lengths padded to step.BUCKETS
  compiled pad  the compiled step on batches padded to --max-length
  compiled fp32 pad, compiled tf32 pad, compiled fp32, compiled tf32: the compiled step at the
            other precisions (params/paper.yaml runs fp32 padded: its own rate)
Defaults: on CPU naive .. ours (compiling a CPU step took ~48 s and gave no gain); on CUDA
naive, fp32 pad, compiled fp32 pad, compiled tf32 pad, compiled fp32, compiled pad, ours, compiled. `--sharing 1 2 4` also measures the aggregate
mask-training steps/s of N processes sharing the device. `python -m srnets_lib plan` turns the
newest CUDA rows (BERT-base compiled mask steps/s at mnli-like lengths, compiled evaluation
examples/s, sharing speed-ups) into GPU-hours (plan.load_throughput).

Each row says which path ran: a compiled variant whose compiling, CUDA-graph capture or compiled
backward fails is measured eagerly from there, with a warning, and reads "eager (compiling failed:
...)" (the training loop falls back the same way); `plan` takes only rows that ran compiled.

Memory: CUDA peak allocated; on CPU the peak resident-set growth from the first step on,
sampled every 2 ms (unreliable for short steps). Model FLOPs count the real tokens only:
6 * matmul parameters * tokens + attention; MFU compares them with a measured bf16 matmul peak.
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

from srnets_lib.model import dropout, backbones as models, pruning
from srnets_lib import methods
from srnets_lib.training import runtime, step
from srnets_lib.training.kinds import corpus as pretraining
from srnets_lib.settings.config import DataConfig, RunConfig
from srnets_lib.data.load import load_task
from srnets_lib.data.encode import Encoded, collate, encode, eval_batches, train_batches

PRETRAINING = ("mlm", "kd", "mlm+kd")  # TAMT's objectives (pretraining.OBJECTIVES)
WORKLOADS = ("finetune", "mask", "imp", "eval") + PRETRAINING
# variant: (precision, padding, dropout_rng, compiled); padding "max" pads every batch to --max-length.
# Each row records its precision, padding and path, which `plan` reads its rates by (cost.py).
VARIANTS = {"naive": ("fp32", "max", "torch", False), "fp32 pad": ("fp32", "max", "torch", False),
            "tf32 pad": ("tf32", "max", "torch", False),
            "bf16 pad": ("bf16", "max", "torch", False), "ours pad": ("bf16", "max", "fast", False),
            "ours": ("bf16", "dynamic", "fast", False),
            "compiled fp32 pad": ("fp32", "max", "fast", True), "compiled tf32 pad": ("tf32", "max", "fast", True),
            "compiled fp32": ("fp32", "dynamic", "fast", True), "compiled tf32": ("tf32", "dynamic", "fast", True),
            "compiled pad": ("bf16", "max", "fast", True), "compiled": ("bf16", "dynamic", "fast", True)}
CPU_VARIANTS = ("naive", "fp32 pad", "bf16 pad", "ours pad", "ours")
# params/paper.yaml's own setting first (fp32, padded, compiled), then each faster switch
GPU_VARIANTS = ("naive", "fp32 pad", "compiled fp32 pad", "compiled tf32 pad", "compiled fp32", "compiled pad",
                "ours", "compiled")


def build_model(name: str, num_labels: int, naive: bool, dropout_rng: str = "torch", pretraining_heads=False):
    """The benchmarked model: 'tiny', 'packaged' (all 6 layers), 'packaged-2' (the toy's 2 layers)
    or 'bert-base' (BERT-base shape, random weights: speed does not depend on the values); a
    classifier, or with `pretraining_heads` the pre-training model (models.load_pretraining_model)."""
    from transformers import BertConfig, BertForPreTraining, BertForSequenceClassification

    attention = "eager" if naive else "sdpa"
    torch.manual_seed(0)
    layers = int(name.split("-")[1]) if name.startswith("packaged-") else None
    backbone = "packaged" if name.startswith("packaged") else name
    if name == "bert-base":
        config = BertConfig(num_labels=num_labels, attn_implementation=attention)
        model = BertForPreTraining(config) if pretraining_heads else BertForSequenceClassification(config)
    elif pretraining_heads:
        model = models.load_pretraining_model(backbone, layers)
    else:
        model = models.load_model(backbone, num_labels, layers)
    model.set_attn_implementation(attention)
    if dropout_rng == "fast":
        dropout.use_fast_dropout(model)
    return model


def mnli_like(n: int, max_length: int, seed: int = 0) -> Encoded:
    """`n` generated pairs whose lengths follow MNLI's under BERT's tokenizer (log-normal, mean
    ~40 word pieces, clipped to [8, max_length]); random token ids: speed ignores the values."""
    rng = np.random.default_rng(seed)
    lengths = np.clip(np.round(rng.lognormal(np.log(36.0), 0.45, size=n)), 8, max_length).astype(np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    ids = rng.integers(1000, 30000, size=int(offsets[-1])).astype(np.int32)
    types = np.concatenate([(np.arange(k) >= k // 2).astype(np.int8) for k in lengths])
    return Encoded(ids, types, offsets, rng.integers(3, size=n))


def full_length(n: int, max_length: int, seed: int = 0) -> Encoded:
    """`n` examples of exactly `max_length` random token ids (corpus blocks, full QA windows)."""
    rng = np.random.default_rng(seed)
    offsets = np.arange(n + 1, dtype=np.int64) * max_length
    ids = rng.integers(1000, 30000, size=n * max_length).astype(np.int32)
    return Encoded(ids, np.zeros(n * max_length, dtype=np.int8), offsets, rng.integers(3, size=n))


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
    modules = (getattr(model, model.base_model_prefix) if models.mlm_head(model) is not None else model).modules()
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


def _prepare(model_name: str, workload: str, variant: str):
    """(model, trainable parameters, teacher) of one workload and variant, set up by the method
    itself (methods/): masks where it masks, at 50% sparsity (IMP: its first pruning, to 50%), and
    what it trains (embeddings frozen, as in params/toy.yaml); the teacher (TAMT's KD: the dense
    model, frozen) is None elsewhere."""
    from srnets_lib.training.prepare import set_trainable

    naive = variant == "naive"
    _, _, dropout_rng, compiled = VARIANTS[variant]
    corpus = workload in PRETRAINING
    model = build_model(model_name, 3, naive, dropout_rng, pretraining_heads=corpus).to(runtime.device())
    teacher = pretraining.teacher_of(model) if corpus and "kd" in pretraining.OBJECTIVES[workload] else None
    method_name = "mask" if corpus else workload
    sparsity = 0.5 if methods.get(method_name).prunes else 0.0
    method = methods.create(RunConfig(task="corpus" if corpus else "nli", method=method_name,
                                      loss=workload if corpus else "std", sparsity=sparsity, imp_delta_s=0.5,
                                      train_embeddings=False), 1000)
    layers = method.masked_layers()
    for module in (pruning.install(model, layers) if layers else {}).values():
        module.cache_eval_weight = not compiled
    method.prepare(model)
    method.before_step(model, 0)
    trainable = list(set_trainable(model, method.trainable(model)).values())
    if naive:  # autograd through every frozen weight; only `trainable` is stepped
        model.requires_grad_(True)
    return model, trainable, teacher


def _step(model, trainable, variant: str, workload: str = "finetune", teacher=None):
    """(forward, update) of one training step: the naive reference's, or the training loop's own
    step unit (step.py; pretraining.PretrainingLoss for TAMT's objectives) for every other variant."""
    precision, _, _, compiled = VARIANTS[variant]
    corpus = workload in PRETRAINING
    if variant != "naive":
        forward = (pretraining.PretrainingLoss(model, teacher, workload, precision) if corpus
                   else step.ForwardLoss(model, "std", precision, compiled))
        return forward, step.Optimization(trainable, 1e-4, 0.0, 10 ** 6, 0, 1.0).step
    optimizer = torch.optim.AdamW(trainable, lr=1e-4)

    def forward(batch):
        if corpus:
            return naive_pretraining_loss(model, teacher, workload, batch)
        with runtime.autocast(precision):
            logits = model(**batch["inputs"]).logits
        return torch.nn.functional.cross_entropy(logits.float(), batch["labels"])

    def update(loss):
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    return forward, update


def naive_pretraining_loss(model, teacher, objective: str, batch: dict) -> torch.Tensor:
    """The objective in fp32 with the MLM logits at every position (as BertForMaskedLM computes
    them, then ignores all but the predicted ones)."""
    terms, loss = pretraining.OBJECTIVES[objective], 0.0
    out = getattr(model, model.base_model_prefix)(**batch["inputs"], output_hidden_states="kd" in terms)
    if "mlm" in terms:
        logits = models.mlm_head(model)(out.last_hidden_state)
        loss = loss + torch.nn.functional.cross_entropy(logits.flatten(0, 1), batch["labels"].flatten(),
                                                        ignore_index=pretraining.IGNORE)
    if "kd" in terms:
        with torch.no_grad():
            taught = getattr(teacher, teacher.base_model_prefix)(**batch["inputs"], output_hidden_states=True)
        loss = loss + pretraining.kd_loss(out.hidden_states, taught.hidden_states)
    return loss


def training_batch(encoded: Encoded, index: np.ndarray, width: int | None, workload: str, vocab_size: int,
                   rng: np.random.Generator) -> dict:
    """A batch as the training loop builds it: collated to `width` (None: its longest example) with
    its labels; for TAMT's objectives the MLM corruption (pretraining.corrupt) where it predicts
    tokens, labels None where it does not."""
    collated = collate(encoded, index, 0, width)
    labels = torch.from_numpy(encoded.labels[index])
    if workload in PRETRAINING:
        labels = None
        if "mlm" in pretraining.OBJECTIVES[workload]:
            ids = collated["input_ids"].numpy()
            mask_id = min(103, vocab_size - 1)  # BERT's uncased [MASK]; speed does not depend on it
            ids, labels = pretraining.corrupt(ids, collated["attention_mask"].numpy() == 0, vocab_size, mask_id, rng)
            collated["input_ids"], labels = torch.from_numpy(ids), torch.from_numpy(labels)
    return {"inputs": runtime.model_inputs(collated),
            "labels": None if labels is None else labels.to(runtime.device())}


def measure(model_name: str, workload: str, variant: str, encoded: Encoded, args, barrier=None) -> dict:
    """Median seconds per step (per evaluation batch for `eval`) of one workload and variant."""
    if workload == "eval":
        return measure_eval(model_name, variant, encoded, args)
    precision, padding, _, compiled = VARIANTS[variant]
    runtime.use_precision(precision)
    model, trainable, teacher = _prepare(model_name, workload, variant)
    forward, update = _step(model, trainable, variant, workload, teacher)
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
    from srnets_lib.training.evaluation import predict

    precision, padding, _, compiled = VARIANTS[variant]
    runtime.use_precision(precision)
    model, _, _ = _prepare(model_name, "finetune", variant)
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


def setting(variant: str) -> dict:
    """What a row measured, as `plan` reads it (cost.row_setting): precision, padding (max_length,
    or dynamic: each batch to its longest, or its bucket when compiled) and the variant's intent to
    compile (`path` says whether it did)."""
    precision, padding, _, compiled = VARIANTS[variant]
    return {"precision": precision, "padding": "max_length" if padding == "max" else "dynamic", "compiled": compiled}


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


def encoded_lengths(kind: str, max_length: int) -> Encoded:
    if kind == "mnli-like":
        return mnli_like(4096, max_length)
    if kind == "full":
        return full_length(1024, max_length)
    data = load_task("nli", DataConfig(train_size=2000, dev_size=50, ood_size=50))
    return encode(data.train, models.load_tokenizer("packaged"), max_length, "packaged", cache=False)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m srnets_lib.tools.bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=["tiny", "packaged-2", "packaged"],
                        choices=["tiny", "packaged", "packaged-2", "bert-base"])
    parser.add_argument("--workloads", nargs="+", default=["finetune", "mask", "imp"], choices=WORKLOADS)
    parser.add_argument("--variants", nargs="+", default=None, choices=list(VARIANTS),
                        help="default: per device (see above); the first one is the reference")
    parser.add_argument("--lengths", choices=["synthetic", "mnli-like", "full"], default=None)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--eval-batch-size", type=int, default=512)
    parser.add_argument("--eval-examples", type=int, default=2048)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--steps", type=int, default=8, help="measured steps (the median is reported)")
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--sharing", nargs="*", type=int, default=[], help="e.g. 1 2 4: runs sharing the device")
    parser.add_argument("--out", default="bench/results.json", help="appends one record per run")
    return parser


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    cuda = runtime.device().type == "cuda"
    variants = args.variants or list(GPU_VARIANTS if cuda else CPU_VARIANTS)
    env = environment()
    peak = matmul_peak()
    env["matmul_peak_tflops"] = peak / 1e12
    print(f"{env['device_name']} ({env['device']}, {env['cpu_capability']}, {env['threads']} threads), "
          f"torch {env['torch']}; matmul peak {peak / 1e12:.2f} TFLOP/s")
    rows, shared = [], None
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    history = json.loads(out.read_text()) if out.exists() else []

    def save(complete: bool):  # after every row: an interrupted bench leaves its rows, marked incomplete
        record = {"environment": env, "args": vars(args), "rows": rows, "sharing_speedup": shared,
                  "complete": complete}
        out.write_text(json.dumps(history + [record], indent=1) + "\n")

    print(f"{'model':10} {'workload':9} {'variant':13} {'s/step':>8} {'ex/s':>8} {'tok/s':>9} "
          f"{'mem MB':>8} {'TFLOP/s':>8} {'MFU':>6} {'vs ref':>7}  path")
    for model_name in args.models:
        lengths = args.lengths or ("mnli-like" if model_name == "bert-base" else "synthetic")
        margs = argparse.Namespace(**{**vars(args), "lengths": lengths})
        encoded = encoded_lengths(lengths, args.max_length)
        print(f"-- {model_name}: {lengths} lengths, mean {encoded.lengths.mean():.1f} tokens, "
              f"batches padded to {args.max_length} where 'pad'")
        for workload in args.workloads:
            reference = None
            for variant in variants:
                if workload in PRETRAINING and VARIANTS[variant][3]:
                    print(f"{model_name:10} {workload:9} {variant:13} skipped: the pre-training objectives are "
                          "never compiled (pretraining.py)")
                    continue
                row = measure(model_name, workload, variant, encoded, margs)
                reference = reference or row["examples_per_s"]
                row["speedup_vs_reference"] = row["examples_per_s"] / reference
                row["mfu"] = row["model_tflops"] * 1e12 / peak if cuda else None
                rows.append(row)
                mem = "-" if row["peak_mem_mb"] is None else f"{row['peak_mem_mb']:.0f}"
                mfu = "-" if row["mfu"] is None else f"{100 * row['mfu']:.1f}%"
                print(f"{model_name:10} {workload:9} {variant:13} {row['s_per_step']:8.4f} "
                      f"{row['examples_per_s']:8.1f} {row['tokens_per_s']:9.0f} {mem:>8} "
                      f"{row['model_tflops']:8.3f} {mfu:>6} {row['speedup_vs_reference']:6.2f}x  {row['path']}",
                      flush=True)
                save(complete=False)
        if args.sharing:
            shared = sharing(model_name, "compiled" if cuda else "ours", encoded, margs, args.sharing)
    save(complete=True)
    print(f"written to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
