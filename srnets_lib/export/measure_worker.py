"""One measurement of measure.py, run as a script in a fresh process (never importing srnets_lib,
so the process holds what a user's would): load an exported folder with transformers, optionally
turn the listed linear layers into torch sparse CSR matrices, then time inference on seeded
token ids and read the process's resident memory. Prints one JSON object.

Memory is Linux's: VmRSS once the model's code is imported (its class built on the meta device,
which allocates nothing) and after loading, and the peak (VmHWM) during inference, the peak reset
after loading by writing 5 to /proc/self/clear_refs; where that file cannot be written the peak
includes loading (said in the output).

usage: python measure_worker.py FOLDER AUTO_CLASS REMOTE(0|1) CSR_LAYERS_JSON BATCHES_JSON LENGTH SECONDS
"""

import ctypes
import gc
import json
import statistics
import sys
import time

import torch
import transformers


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


class CsrLinear(torch.nn.Module):
    """y = x W^T + b with W a sparse CSR matrix (int32 indices: 8 bytes per kept weight)."""

    def __init__(self, linear):
        super().__init__()
        csr = linear.weight.detach().to_sparse_csr()
        self.weight = torch.sparse_csr_tensor(csr.crow_indices().int(), csr.col_indices().int(), csr.values(),
                                              csr.shape)
        self.bias = None if linear.bias is None else linear.bias.detach().unsqueeze(1)
        self.out_features = linear.out_features

    def forward(self, x):
        flat = x.reshape(-1, x.shape[-1]).t()
        out = torch.mm(self.weight, flat) if self.bias is None else torch.addmm(self.bias, self.weight, flat)
        return out.t().reshape(*x.shape[:-1], self.out_features)


def to_csr(model, names):
    for name in names:
        parent, _, child = name.rpartition(".")
        owner = model.get_submodule(parent) if parent else model
        setattr(owner, child, CsrLinear(getattr(owner, child)))


def timed(model, inputs, seconds):
    """The seconds of each forward pass: 2 warm-up passes, then at least 5 (at most 50) passes and
    at least `seconds` in all."""
    times = []
    with torch.no_grad():
        for _ in range(2):
            model(**inputs)
        started = time.perf_counter()
        while len(times) < 5 or (time.perf_counter() - started < seconds and len(times) < 50):
            began = time.perf_counter()
            model(**inputs)
            times.append(time.perf_counter() - began)
    return times


def release_freed_memory():
    """Give freed heap pages back to the system (glibc keeps them otherwise), so the resident size
    after turning dense weights into CSR ones counts only what is still held."""
    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except OSError:
        pass


def main(folder, auto_class, remote, csr_layers, batches, length, seconds):
    auto = getattr(transformers, auto_class)
    config = transformers.AutoConfig.from_pretrained(folder, trust_remote_code=remote)
    with torch.device("meta"):  # imports the model's code and allocates nothing
        auto.from_config(config, trust_remote_code=remote)
    release_freed_memory()
    imported = memory_kb("VmRSS")
    model = auto.from_pretrained(folder, trust_remote_code=remote).eval()
    to_csr(model, csr_layers)
    release_freed_memory()
    ready = memory_kb("VmRSS")
    peak_reset = reset_peak()
    generator = torch.Generator().manual_seed(0)
    vocab = model.config.vocab_size
    latency, fastest, probe = {}, {}, None
    for batch in batches:
        ids = torch.randint(1000, vocab - 1, (batch, length), generator=generator)
        inputs = {"input_ids": ids, "attention_mask": torch.ones_like(ids), "token_type_ids": torch.zeros_like(ids)}
        times = timed(model, inputs, seconds)
        latency[str(batch)], fastest[str(batch)] = 1000 * statistics.median(times), 1000 * min(times)
        if probe is None:
            with torch.no_grad():
                out = model(**inputs)
            first = next(getattr(out, n) for n in ("logits", "start_logits") if getattr(out, n, None) is not None)
            probe = first.flatten()[:2000].tolist()
    print(json.dumps({"imported_mb": imported / 1024, "ready_mb": ready / 1024, "peak_mb": memory_kb("VmHWM") / 1024,
                      "peak_reset": peak_reset, "latency_ms": latency, "fastest_ms": fastest,
                      "threads": torch.get_num_threads(), "probe": probe}))


if __name__ == "__main__":
    folder, auto_class, remote, layers, batches, length, seconds = sys.argv[1:8]
    main(folder, auto_class, remote == "1", json.loads(layers), json.loads(batches), int(length), float(seconds))
