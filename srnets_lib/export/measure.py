"""What an unstructured subnetwork buys on a CPU, measured side by side in one run: the dense model
(the same weights with the mask removed) and the pruned one, each exported as a transformers folder.

- size on disk: model.safetensors (zeros are stored: the same size), the same file gzip-compressed
  (level 6), and for the pruned model the bytes of a bit-packed mask plus its kept values (fp32)
  with the other tensors dense, the least an unstructured mask can be stored in without entropy
  coding (computed, not a format transformers loads);
- CPU inference: the median latency of a forward pass on seeded token ids at each batch size, and
  the process's peak resident memory during inference, each variant in a fresh process
  (measure_worker.py): dense; pruned with dense kernels (zeros multiplied like any weight); pruned
  with its masked linear layers as torch sparse CSR matrices (int32 indices).
A GPU and semi-structured 2:4 sparsity are not measured here (no GPU on the CPU machines this runs
on; an unstructured mask is not 2:4: model card, Sparsity).

`python -m srnets_lib.export.measure --bert-base-shape` measures a randomly initialised model of
BERT-base's shape (transformers' BertConfig defaults) with a 70% unstructured magnitude mask on its
Transformer matrices and pooler (IMP's masked layers, section 3.2.1): BERT-base's size, latency
and memory, not a trained model's.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import zlib
from dataclasses import dataclass
from pathlib import Path

import torch

WORKER = Path(__file__).with_name("measure_worker.py")
VARIANTS = (("dense", False, False), ("pruned, dense kernels", True, False), ("pruned, sparse CSR", True, True))


@dataclass
class Measurement:
    rows: list[dict]  # per variant: name, sizes (bytes), latency_ms {batch: ms}, peak_mb, ready_mb, imported_mb
    batches: tuple[int, ...]
    length: int
    csr_difference: float  # max |CSR - dense kernels| over the pruned model's probe outputs
    cpu: str
    threads: int
    peak_reset: bool
    load: tuple[float, float]  # the machine's load average over 1 minute, before and after measuring


def gzip_size(path: Path, level: int = 6) -> int:
    """Bytes of `path` deflate-compressed (gzip's algorithm and level 6, its default)."""
    packer, total = zlib.compressobj(level), 0
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 24):
            total += len(packer.compress(chunk))
    return total + len(packer.flush())


def packed_size(path: Path, masks: dict[str, torch.Tensor]) -> int:
    """Bytes of the masked matrices as bit-packed masks plus kept values, the rest dense (all fp32)."""
    from safetensors import safe_open

    total = 0
    with safe_open(str(path), "pt") as f:
        for key in f.keys():
            shape = f.get_slice(key).get_shape()
            numel, mask = math.prod(shape), masks.get(key.removesuffix(".weight"))
            total += 4 * numel if mask is None else math.ceil(numel / 8) + 4 * int(mask.sum())
    return total


def run_worker(folder: Path, auto_class: str, remote: bool, csr: list[str], batches, length: int,
               seconds: float) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the worker needs no srnets_lib
    out = subprocess.run([sys.executable, "-P", str(WORKER), str(folder), auto_class, "1" if remote else "0",
                          json.dumps(csr), json.dumps(list(batches)), str(length), str(seconds)],
                         capture_output=True, text=True, env=env, cwd=tempfile.gettempdir())
    if out.returncode != 0:
        raise RuntimeError(f"{WORKER.name} on {folder} failed: {out.stderr.strip().splitlines()[-1:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure(dense: Path, pruned: Path, masks: dict[str, torch.Tensor], auto_class: str, remote: bool,
            length: int, batches=(1, 32), seconds: float = 2.0) -> Measurement:
    """Every variant of VARIANTS, one fresh process each, one after another."""
    from safetensors import safe_open

    with safe_open(str(pruned / "model.safetensors"), "pt") as f:
        stored = set(f.keys())  # a masked LM export leaves the pooler out
    csr = sorted(n for n, m in masks.items() if f"{n}.weight" in stored and "embeddings" not in n and not bool(m.all()))
    sizes = {False: {"safetensors": (dense / "model.safetensors").stat().st_size,
                     "gzip": gzip_size(dense / "model.safetensors")},
             True: {"safetensors": (pruned / "model.safetensors").stat().st_size,
                    "gzip": gzip_size(pruned / "model.safetensors"),
                    "packed": packed_size(pruned / "model.safetensors", masks)}}
    rows, load = [], os.getloadavg()[0]
    for name, is_pruned, sparse in VARIANTS:
        got = run_worker(pruned if is_pruned else dense, auto_class, remote, csr if sparse else [], batches,
                         length, seconds)
        rows.append({"name": name, "sizes": {} if sparse else sizes[is_pruned], **got})
    probes = [torch.tensor(r.pop("probe")) for r in rows]
    return Measurement(rows, tuple(batches), length, float((probes[2] - probes[1]).abs().max()), cpu_name(),
                       rows[0]["threads"], all(r["peak_reset"] for r in rows), (load, os.getloadavg()[0]))


def cpu_name() -> str:
    """The CPU's model name and whether it has AVX-512 (the code path torch takes)."""
    name = "unknown CPU"
    try:
        text = Path("/proc/cpuinfo").read_text()
        found = re.search(r"^model name\s*:\s*(.+)$", text, re.M)
        name = found.group(1).strip() if found else name
        avx512 = len(re.findall(r"^flags\s*:.*\bavx512f\b", text, re.M))
    except OSError:
        avx512 = 0
    return (f"{name}, {os.cpu_count()} cores, {'AVX-512' if avx512 else 'no AVX-512'} (`grep -c avx512 "
            f"/proc/cpuinfo`: {avx512}), torch CPU capability {torch.backends.cpu.get_cpu_capability()}")


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f}"


def markdown(m: Measurement, title: str = "## Size, latency and memory") -> str:
    """The table and what it says, from the numbers measured (nothing written in advance)."""
    head = ["model", "safetensors (MB)", "gzip -6 (MB)", "mask bits + kept values (MB)"]
    head += [f"latency, batch {b} x {m.length} (ms)" for b in m.batches] + ["peak memory (MB)", "of it, the model (MB)"]
    lines = [title, "", "| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for r in m.rows:
        s = r["sizes"]
        cells = [r["name"], _mb(s["safetensors"]) if s else "as above", _mb(s["gzip"]) if s else "as above",
                 _mb(s["packed"]) if "packed" in s else "–"]
        cells += [f"{r['latency_ms'][str(b)]:.1f} ({r['fastest_ms'][str(b)]:.1f})" for b in m.batches]
        cells += [f"{r['peak_mb']:.0f}", f"{r['peak_mb'] - r['imported_mb']:.0f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines + ["", reading(m)])


def reading(m: Measurement) -> str:
    """What the table says, in words computed from it."""
    dense, pruned, sparse = m.rows
    gain = 1 - pruned["sizes"]["gzip"] / dense["sizes"]["gzip"]
    speed = ", ".join(f"batch {b}: x{dense['latency_ms'][str(b)] / sparse['latency_ms'][str(b)]:.2f}" for b in m.batches)
    return (f"Measured on {m.cpu}, {m.threads} threads, in one run, each model in a fresh process (load average "
            f"{m.load[0]:.1f} before, {m.load[1]:.1f} after: other processes shared the cores where it is above 0). "
            "Latency: the median of at least 5 forward passes on seeded token ids (the fastest in brackets). "
            f"Disk: the safetensors file stores the zeros, so pruning saves nothing there; compressed it is "
            f"{100 * gain:.0f}% smaller than the dense model's compressed file, and a bit-packed mask with the kept "
            f"values would take {100 * pruned['sizes']['packed'] / dense['sizes']['safetensors']:.0f}% of the dense "
            "file. Speed: dense kernels multiply the zeros, the same work as the dense model's; the sparse CSR "
            f"layers run at {speed} the dense model's speed (above 1 is faster), their outputs within "
            f"{m.csr_difference:.1e} of the dense kernels'. Memory: the process's resident peak during inference"
            + ("" if m.peak_reset else " (including loading: /proc/self/clear_refs was not writable)")
            + f", and of it what loading and running the model added to the {dense['imported_mb']:.0f} MB of Python, "
            "torch, transformers and the model's code. Not measured: a GPU, and semi-structured 2:4 sparsity (the "
            "kernels GPUs accelerate); no GPU was available, and an unstructured mask is not 2:4.")


def bert_base_shape(out: Path, sparsity: float = 0.7, seed: int = 0, config: dict | None = None):
    """A random BertForSequenceClassification of BertConfig's default shape (3 labels; `config`
    changes it), dense and with `sparsity` of each Transformer matrix and the pooler pruned by
    magnitude; (dense folder, pruned folder, masks)."""
    from transformers import BertConfig, BertForSequenceClassification

    from .. import models
    from ..pruning import pruned_count
    from ..pruning.masks import keep_top

    torch.manual_seed(seed)
    model = BertForSequenceClassification(BertConfig(num_labels=3, **(config or {}))).eval()
    model.save_pretrained(out / "dense")
    masks = {}
    with torch.no_grad():
        for name, module in model.named_modules():
            if isinstance(module, torch.nn.Linear) and models.is_imp_prunable(name):
                masks[name] = keep_top(module.weight.abs(), pruned_count(module.weight.numel(), sparsity))
                module.weight.copy_(torch.where(masks[name], module.weight, 0.0))
    model.save_pretrained(out / "pruned")
    return out / "dense", out / "pruned", masks


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m srnets_lib.export.measure")
    parser.add_argument("--bert-base-shape", action="store_true", required=True,
                        help="a random BERT-base-shaped classifier, dense and magnitude-pruned")
    parser.add_argument("--sparsity", type=float, default=0.7)
    parser.add_argument("--length", type=int, default=128, help="tokens per sequence (the paper's max_length)")
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--seconds", type=float, default=5.0, help="time each latency at least this long")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        dense, pruned, masks = bert_base_shape(Path(tmp), args.sparsity)
        m = measure(dense, pruned, masks, "AutoModelForSequenceClassification", False, args.length, args.batches,
                    args.seconds)
    print(markdown(m, f"### A randomly initialised BERT-base-shaped classifier, {args.sparsity:.0%} unstructured "
                      "magnitude mask (not a trained model)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
