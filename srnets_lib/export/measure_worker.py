"""The measurements of measure.py, run as a script in a fresh process that never imports srnets_lib
(so it holds what a user's process would): exported folders loaded with transformers, the listed
linear layers optionally replaced by torch sparse CSR matrices. Prints one JSON object.

  memory FOLDER AUTO REMOTE CSR_FILE BATCHES_JSON LENGTH
      one model (CSR_FILE "" for none): Linux's VmRSS once the model's code is imported (its class
      built on the meta device, which allocates nothing) and after loading, and the peak (VmHWM)
      while it runs each batch size twice, the peak reset after loading by writing 5 to
      /proc/self/clear_refs (where that file cannot be written the peak includes loading, and
      `peak_reset` says so). transformers maps the weights file and reads its pages as a forward
      pass touches them, so the peak counts every weight the model reads.
  latency DENSE PRUNED AUTO REMOTE CSR_FILE BATCHES_JSON LENGTH SECONDS
      the dense model, the pruned one, and the pruned one with CSR layers, in one process, their
      forward passes interleaved (one of each per round) so that other processes on the machine slow
      all three alike; per model and batch size the median and the fastest pass.
"""

import ctypes
import gc
import json
import statistics
import sys
import time
import warnings

import torch
import transformers
from safetensors import safe_open


def memory_kb(field):
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def reset_peak():
    try:
        with open("/proc/self/clear_refs", "w") as handle:
            handle.write("5")
        return True
    except OSError:
        return False


def release_freed_memory():
    """Give freed heap pages back to the system (glibc keeps them otherwise), so the resident size
    after turning dense weights into CSR ones counts only what is still held."""
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except OSError:
        pass


class CsrLinear(torch.nn.Module):
    """y = x W^T + b with W a sparse CSR matrix (int32 indices: 8 bytes per kept weight)."""

    def __init__(self, crow, col, values, shape, bias):
        super().__init__()
        self.weight = torch.sparse_csr_tensor(crow, col, values, shape)
        self.bias = None if bias is None else bias.detach().unsqueeze(1)
        self.out_features = shape[0]

    def forward(self, x):
        flat = x.reshape(-1, x.shape[-1]).t()
        out = torch.mm(self.weight, flat) if self.bias is None else torch.addmm(self.bias, self.weight, flat)
        return out.t().reshape(*x.shape[:-1], self.out_features)


def load(folder, auto_class, remote, csr_file):
    """The folder's model; with `csr_file` (measure.write_csr), its masked linear layers replaced by
    CSR ones read from that file before any forward pass, so that their dense weights, which
    transformers maps from the file lazily, are never read into memory."""
    model = getattr(transformers, auto_class).from_pretrained(folder, trust_remote_code=remote).eval()
    if csr_file:
        with safe_open(csr_file, "pt") as parts:
            layers = sorted({k.rsplit(".", 2)[0] for k in parts.keys() if k.endswith(".weight.values")})
            for name in layers:
                parent, _, child = name.rpartition(".")
                owner = model.get_submodule(parent) if parent else model
                old = getattr(owner, child)
                crow, col, values = (parts.get_tensor(f"{name}.weight.{part}") for part in ("crow", "col", "values"))
                setattr(owner, child, CsrLinear(crow, col, values, (old.out_features, old.in_features), old.bias))
    release_freed_memory()
    return model


def inputs(vocab, batch, length):
    """Seeded token ids of the vocabulary (above the special tokens), all attended."""
    ids = torch.randint(1000, vocab - 1, (batch, length), generator=torch.Generator().manual_seed(batch))
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "token_type_ids": torch.zeros_like(ids)}


def outputs(model, batch):
    out = model(**batch)
    return next(getattr(out, n) for n in ("logits", "start_logits") if getattr(out, n, None) is not None)


def memory(folder, auto_class, remote, csr_file, batches, length):
    auto = getattr(transformers, auto_class)
    with torch.device("meta"):  # imports the model's code and allocates nothing
        auto.from_config(transformers.AutoConfig.from_pretrained(folder, trust_remote_code=remote),
                         trust_remote_code=remote)
    release_freed_memory()
    imported = memory_kb("VmRSS")
    model = load(folder, auto_class, remote, csr_file)
    ready, peak_reset = memory_kb("VmRSS"), reset_peak()
    with torch.no_grad():
        for batch in batches:
            for _ in range(2):
                outputs(model, inputs(model.config.vocab_size, batch, length))
    return {"imported_mb": imported / 1024, "ready_mb": ready / 1024, "peak_mb": memory_kb("VmHWM") / 1024,
            "peak_reset": peak_reset}


def latency(dense, pruned, auto_class, remote, csr_file, batches, length, seconds):
    models = {"dense": load(dense, auto_class, remote, ""), "pruned": load(pruned, auto_class, remote, ""),
              "csr": load(pruned, auto_class, remote, csr_file)}
    found = {name: {"latency_ms": {}, "fastest_ms": {}} for name in models}
    difference = 0.0
    with torch.no_grad():
        for batch in batches:
            given = inputs(models["dense"].config.vocab_size, batch, length)
            for model in models.values():  # warm-up
                outputs(model, given)
            difference = max(difference, float((outputs(models["csr"], given)
                                                - outputs(models["pruned"], given)).abs().max()))
            times, started = {name: [] for name in models}, time.perf_counter()
            while len(times["dense"]) < 5 or (time.perf_counter() - started < seconds and len(times["dense"]) < 50):
                for name, model in models.items():
                    began = time.perf_counter()
                    outputs(model, given)
                    times[name].append(time.perf_counter() - began)
            for name, measured in times.items():
                found[name]["latency_ms"][str(batch)] = 1000 * statistics.median(measured)
                found[name]["fastest_ms"][str(batch)] = 1000 * min(measured)
    return {"variants": found, "csr_difference": difference, "threads": torch.get_num_threads()}


if __name__ == "__main__":
    warnings.filterwarnings("ignore", message="Sparse")  # CSR support "in beta"; invariants unchecked
    mode, args = sys.argv[1], sys.argv[2:]
    if mode == "memory":
        folder, auto_class, remote, csr, batches, length = args
        result = memory(folder, auto_class, remote == "1", csr, json.loads(batches), int(length))
    else:
        dense, pruned, auto_class, remote, csr, batches, length, seconds = args
        result = latency(dense, pruned, auto_class, remote == "1", csr, json.loads(batches), int(length),
                         float(seconds))
    print(json.dumps(result))
