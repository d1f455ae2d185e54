"""What an unstructured subnetwork buys on a CPU, measured side by side in one run: the dense model
(the same weights with the mask removed) and the pruned one, each exported as a transformers folder.

- size on disk: model.safetensors (zeros are stored: the same size), the same file gzip-compressed
  (level 6), the pruned model with its masked linear layers stored as CSR (write_csr), and the
  bytes of a bit-packed mask plus the kept values (fp32) with the other tensors dense, the least
  an unstructured mask can be stored in without entropy coding (computed, no file);
- CPU inference of three variants: dense; pruned with dense kernels (zeros multiplied like any
  weight); pruned with its masked linear layers as torch sparse CSR matrices (int32 indices). The
  median latency of a forward pass on seeded token ids at each batch size, the three variants'
  passes interleaved in one process so that other load on the machine slows them alike; the peak
  resident memory while running, each variant in a fresh process (measure_worker.py).
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
import warnings
import zlib
from dataclasses import dataclass
from pathlib import Path

import torch

from srnets_lib.model import backbones
from srnets_lib.model.pruning import pruned_count
from srnets_lib.model.pruning.masks import keep_top

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


def run_worker(*args) -> dict:
    """measure_worker.py with `args` in a fresh process, without srnets_lib on its path."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run([sys.executable, "-P", str(WORKER), *map(str, args)], capture_output=True, text=True, env=env,
                         cwd=tempfile.gettempdir())
    if out.returncode != 0:
        raise RuntimeError(f"{WORKER.name} {args[0]} failed: {out.stderr.strip().splitlines()[-1:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def write_csr(pruned: Path, layers: list[str], path: Path) -> None:
    """The pruned model's weights file with `layers` stored as CSR (int32 row pointers and column
    indices, fp32 kept values: `<layer>.weight.crow`, `.col`, `.values`), the other tensors dense."""
    from safetensors.torch import load_file, save_file

    tensors = load_file(str(pruned / "model.safetensors"))
    for layer in layers:
        with warnings.catch_warnings():  # "sparse CSR support is in beta": it computes what dense kernels do
            warnings.simplefilter("ignore", UserWarning)
            csr = tensors.pop(f"{layer}.weight").to_sparse_csr()
        tensors.update({f"{layer}.weight.crow": csr.crow_indices().int(), f"{layer}.weight.col": csr.col_indices().int(),
                        f"{layer}.weight.values": csr.values()})
    save_file(tensors, str(path))


def measure(dense: Path, pruned: Path, masks: dict[str, torch.Tensor], auto_class: str, remote: bool,
            length: int, batches=(1, 32), seconds: float = 5.0) -> Measurement:
    """Sizes; memory, each variant in its own fresh process; latency, the three interleaved in one."""
    from safetensors import safe_open

    with safe_open(str(pruned / "model.safetensors"), "pt") as f:
        stored = set(f.keys())  # a masked LM export leaves the pooler out
    layers = sorted(n for n, m in masks.items() if f"{n}.weight" in stored and m.dim() == 2 and "embeddings" not in n
                    and not bool(m.all()))
    with tempfile.TemporaryDirectory() as tmp:
        csr = Path(tmp) / "model_csr.safetensors"
        write_csr(pruned, layers, csr)
        files = {"dense": dense / "model.safetensors", "pruned": pruned / "model.safetensors", "csr": csr}
        sizes = {k: {"safetensors": f.stat().st_size, "gzip": gzip_size(f)} for k, f in files.items()}
        sizes["pruned"]["packed"] = packed_size(files["pruned"], masks)
        remote_flag, shape, load = "1" if remote else "0", (json.dumps(list(batches)), length), os.getloadavg()[0]
        timing = run_worker("latency", dense, pruned, auto_class, remote_flag, csr, *shape, seconds)
        rows = []
        for (name, is_pruned, sparse), key in zip(VARIANTS, ("dense", "pruned", "csr")):
            held = run_worker("memory", pruned if is_pruned else dense, auto_class, remote_flag, csr if sparse else "",
                              *shape)
            rows.append({"name": name, "sizes": sizes[key], **held, **timing["variants"][key]})
    return Measurement(rows, tuple(batches), length, timing["csr_difference"], cpu_name(), timing["threads"],
                       all(r["peak_reset"] for r in rows), (load, os.getloadavg()[0]))


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
        cells = [r["name"], _mb(s["safetensors"]), _mb(s["gzip"]), _mb(s["packed"]) if "packed" in s else "–"]
        cells += [f"{r['latency_ms'][str(b)]:.1f} ({r['fastest_ms'][str(b)]:.1f})" for b in m.batches]
        cells += [f"{r['peak_mb']:.0f}", f"{r['peak_mb'] - r['imported_mb']:.0f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines + ["", reading(m)])


def reading(m: Measurement) -> str:
    """What the table says, in words computed from it."""
    dense, pruned, sparse = m.rows
    gain = 1 - pruned["sizes"]["gzip"] / dense["sizes"]["gzip"]
    speed = ", ".join(f"batch {b}: x{dense['latency_ms'][str(b)] / sparse['latency_ms'][str(b)]:.2f}" for b in m.batches)
    return (f"Measured on {m.cpu}, {m.threads} threads, in one run (load average "
            f"{m.load[0]:.1f} before, {m.load[1]:.1f} after; the measuring process counts about 1, more means other "
            "processes shared the cores). "
            "Latency: the median of at least 5 forward passes on seeded token ids (the fastest in brackets), the "
            "three models' passes interleaved in one process; memory: each model in a fresh process. "
            f"Disk: the safetensors file stores the zeros, so pruning saves nothing there; compressed it is "
            f"{100 * gain:.0f}% smaller than the dense model's compressed file, and a bit-packed mask with the kept "
            f"values would take {100 * pruned['sizes']['packed'] / dense['sizes']['safetensors']:.0f}% of the dense "
            f"file; the CSR file (int32 indices: 8 bytes per kept weight) takes "
            f"{100 * sparse['sizes']['safetensors'] / dense['sizes']['safetensors']:.0f}%. Speed: dense kernels multiply the zeros, the same work as the dense model's; the sparse CSR "
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


    torch.manual_seed(seed)
    model = BertForSequenceClassification(BertConfig(num_labels=3, **(config or {}))).eval()
    model.save_pretrained(out / "dense")
    masks = {}
    with torch.no_grad():
        for name, module in model.named_modules():
            if isinstance(module, torch.nn.Linear) and backbones.is_imp_prunable(name):
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
