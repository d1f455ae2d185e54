"""Word pieces per pair of a task's real files beside bench's generated MNLI-like lengths, which
price every classification task's dynamic batches and evaluation batches in `plan` (cost.py says so
beside each figure): on a CPU, from the files alone.

    python -m srnets_lib.tools.bench.lengths symmetric data/fever/sym1/test.jsonl data/fever/sym2/test.jsonl
    python -m srnets_lib.tools.bench.lengths qqp data/QQP/dev.tsv

Each file is read by its dataset's reader (data/formats.py) and tokenised as a run tokenises it
(data/encode.py: pairs, truncated to --max-length); the default tokenizer is the packaged
backbone's, whose vocabulary is BERT's uncased 30,522 word pieces (bert-base-uncased's)."""

from __future__ import annotations

import argparse

import numpy as np

from srnets_lib.data import formats
from srnets_lib.data.encode import encode
from srnets_lib.model import backbones
from srnets_lib.tools.bench.workloads import mnli_like

READERS = {"mnli": formats.read_mnli, "hans": formats.read_hans, "qqp": formats.read_qqp, "paws": formats.read_paws,
           "fever": formats.read_fever, "symmetric": formats.read_symmetric}


def summary(lengths: np.ndarray, max_length: int) -> str:
    """Mean, median, 90th and 99th percentiles of word pieces per pair, and the share cut at max_length."""
    p50, p90, p99 = np.percentile(lengths, [50, 90, 99])
    return (f"{len(lengths):,} pairs: mean {lengths.mean():.1f} word pieces, median {p50:.0f}, 90% {p90:.0f}, "
            f"99% {p99:.0f}, {100 * (lengths >= max_length).mean():.1f}% at {max_length}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m srnets_lib.tools.bench.lengths", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("format", choices=sorted(READERS), help="the files' dataset format (data/formats.py)")
    parser.add_argument("files", nargs="+")
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--tokenizer", default="packaged", help="a backbone (default: the packaged one's, "
                                                                 "bert-base-uncased's vocabulary)")
    args = parser.parse_args(argv)
    tokenizer = backbones.load_tokenizer(args.tokenizer)
    found = []
    for file in args.files:
        lengths = encode(READERS[args.format](file), tokenizer, args.max_length, args.tokenizer, cache=False).lengths
        found.append(lengths)
        print(f"{file}: {summary(lengths, args.max_length)}")
    if len(found) > 1:
        print(f"all: {summary(np.concatenate(found), args.max_length)}")
    print(f"bench's mnli-like lengths (generated): {summary(mnli_like(4096, args.max_length).lengths, args.max_length)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
