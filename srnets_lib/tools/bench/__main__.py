"""The benchmark's command line (python -m srnets_lib.tools.bench): every model, workload and
variant asked for, measured side by side in one process, printed and appended to --out."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from srnets_lib.tools import bench
from srnets_lib.tools.bench.measure import environment, matmul_peak, measure, sharing
from srnets_lib.tools.bench.workloads import (CPU_VARIANTS, GPU_VARIANTS, PRETRAINING, VARIANTS, WORKLOADS,
                                             encoded_lengths, ours_at)
from srnets_lib.engine import runtime

def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m srnets_lib.tools.bench", description=bench.__doc__,
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
    parser.add_argument("--params", default=None,
                        help="the params file whose mask-training precision 'ours pad' and 'ours' take (default: "
                             f"{CPU_PARAMS} on CPU, {GPU_PARAMS} on CUDA: what this machine runs)")
    return parser


CPU_PARAMS, GPU_PARAMS = "params/toy.yaml", "params/paper.yaml"


def ours_precision(params_file: str) -> str:
    """The precision of the params file's mask-training runs (what 'ours' measures)."""
    from srnets_lib.settings import params

    return params.load(params_file).run("nli", "mask", sparsity=0.5).precision


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    cuda = runtime.device().type == "cuda"
    variants = args.variants or list(GPU_VARIANTS if cuda else CPU_VARIANTS)
    params_file = args.params or (GPU_PARAMS if cuda else CPU_PARAMS)
    precision = ours_precision(params_file)
    ours_at(precision)
    env = environment()
    peak = matmul_peak()
    env["matmul_peak_tflops"] = peak / 1e12
    print(f"{env['device_name']} ({env['device']}, {env['cpu_capability']}, {env['threads']} threads), "
          f"torch {env['torch']}; matmul peak {peak / 1e12:.2f} TFLOP/s; 'ours' at {precision}, the precision "
          f"of {params_file}")
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
                          "never compiled (engine/kinds/corpus.py)")
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
