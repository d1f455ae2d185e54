"""`python -m srnets_lib export`: a run (by its key) or a page's points (section, series, task,
sparsity, seed) as Hugging Face model folders, each with its model card.

    python -m srnets_lib export nli-mask-poe-cc5db93e837c --out exported/
    python -m srnets_lib export --page sec4_2 --series "mask train (poe)" --task nli --sparsity 0.7 --seed 1 --out DIR
    python -m srnets_lib export --page sec4_2 --series "mask train (poe)" --out DIR   # every point: DIR/<point>/

Per run: rebuild its model from the store (rebuild.py: computing it again in a scratch folder where
its weights were not kept; the store is only read), write the folder (hf.py), load it back with
transformers and check it against the run (check.py), measure it beside its dense model (measure.py;
--no-measure skips), write README.md (card.py). A folder that holds anything but an earlier export of
the same run is refused (--force replaces it). Exit 1 if a folder's predictions disagree with its
run's stored ones.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import tempfile
from pathlib import Path

from srnets_lib.book.banner import shown_path
from srnets_lib.export import card, check, hf, measure, rebuild, targets
from srnets_lib.export.targets import Target
from srnets_lib.settings import params as params_lib


DEFAULT_PARAMS = "params/toy.yaml"
EXPORT_FILES = ("README.md", "config.json", "config.yaml", "mask.npz", "model.safetensors", "modeling_mean_pooled.py",
                "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt", "merges.txt")


def add_arguments(parser) -> None:
    parser.add_argument("run", nargs="?", help="a run key (runs/<key>/); or give --page and its filters")
    parser.add_argument("--out", required=True, help="the folder to write (several points: one folder each inside)")
    parser.add_argument("--page", help="a book page (sec4_2, ..., tamt_transfer): export its points")
    parser.add_argument("--series", help="the page's series, as its legend names it, e.g. \"mask train (poe)\"")
    parser.add_argument("--task", help="the point's task")
    parser.add_argument("--sparsity", type=float, help="the point's x: sparsity (steps or epochs on sec5_1, sec5_2)")
    parser.add_argument("--seed", type=int, help="the point's seed")
    parser.add_argument("--params", default=None, help=f"params file (default: $SRNETS_PARAMS, else {DEFAULT_PARAMS})")
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE", help="params overrides, as sweep --set")
    parser.add_argument("--no-measure", action="store_true", help="skip the size/latency/memory measurement")
    parser.add_argument("--check-examples", type=_count, default=None, metavar="N",
                        help="check the folder on the first N examples of each split (N >= 1; default: all)")
    parser.add_argument("--force", action="store_true",
                        help="write into --out even where it holds files that are not an earlier export of the same run")
    parser.add_argument("--accept-recomputed", action="store_true",
                        help="where export must compute a run again (its weights were not kept) and the recomputation "
                             "differs from the stored run, export the recomputed run (its card says so)")


def _count(text: str) -> int:
    """An argparse type: a whole number >= 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, not {text!r}")
    return value


def main(args) -> int:
    if bool(args.run) == bool(args.page):
        raise ValueError("export: give a run key or --page (with --series, --task, --sparsity, --seed), not both")
    params = params_lib.load(args.params or os.environ.get("SRNETS_PARAMS", DEFAULT_PARAMS), args.set)
    picked = ([targets.by_key(args.run, params)] if args.run else
              targets.by_point(args.page, params, args.series, args.task, args.sparsity, args.seed))
    missing = targets.unfinished(picked)
    if missing and (len(missing) == len(picked) or args.sparsity is not None):
        raise ValueError(f"{len(missing)} of the {len(picked)} points have no finished run: {'; '.join(missing[:4])}"
                         f"{' ...' if len(missing) > 4 else ''}; compute them with `python -m srnets_lib sweep "
                         f"book/{args.page}.ipynb --params {shown_path(params.source)}`"
                         + (" --full (opt-in points)" if args.page else ""))
    if missing:  # a series: its finished points (the opt-in sparsities make book leaves out are named)
        say(f"export: {len(missing)} of the series' {len(picked)} points have no finished run and are left out: "
            f"{'; '.join(missing[:4])}{' ...' if len(missing) > 4 else ''} (make book-full computes the opt-in ones)")
        picked = [t for t in picked if f"{t.name()} (run {t.config.key()})" not in missing]
    out, failed = Path(args.out).expanduser().resolve(), 0
    folders = [out if len(picked) == 1 else out / target.name() for target in picked]
    for target, folder in zip(picked, folders):  # every folder refused before any is written
        writable(folder, target.config.key(), args.force)
    with tempfile.TemporaryDirectory(prefix="srnets-export-") as scratch:  # one recomputation per run
        for target, folder in zip(picked, folders):
            say(f"export: {target.name()} (run {target.config.key()}) -> {folder}")
            levels = tuple(t.level for t in picked if t.config.key() == target.config.key() and t.level is not None)
            failed += not export(target, folder, params, args, Path(scratch), levels)
    if failed:
        print(f"export: {failed} folder(s) predict other than their run stored (their README.md says where)",
              file=sys.stderr)
    return 1 if failed else 0


def export(target: "Target", out: Path, params, args, scratch: Path, levels: tuple[float, ...]) -> bool:
    """Write one folder and its card; whether it reproduces the run's stored predictions."""
    config = target.config
    rebuilt = rebuild.rebuild(config, target.level, request=params.execution.request(), say=say,
                              accept_recomputed=args.accept_recomputed, scratch=scratch, levels=levels)
    prepare(out)
    reference = check.outputs(rebuilt.model, check.probe_batch(rebuilt.model, config.max_length))
    folder = hf.write(rebuilt, out)
    checked = check.check(folder, rebuilt, reference, args.check_examples)
    measurement = None
    if not args.no_measure and rebuilt.masks:
        say(f"export: measuring {out.name} beside its dense model (size, latency, memory)")
        with tempfile.TemporaryDirectory() as tmp:
            dense = hf.write(rebuilt, Path(tmp) / "dense", masked=False, beside=False)
            measured = measure.measure(dense.path, folder.path, rebuilt.masks, folder.auto_class, folder.remote_code,
                                       config.max_length)
        measurement = measure.markdown(measured)
    facts = card.Facts(target, rebuilt, folder, checked, params, command(target, out, params, args.set),
                       card.seed_spread(target, params), measurement)
    (out / "README.md").write_text(card.render(facts))
    readable(out)
    return checked.agrees


def earlier_export_of(out: Path) -> str | None:
    """The run key an earlier export wrote into `out` (its config.json's srnets.run), else None."""
    try:
        return json.loads((out / "config.json").read_text())["srnets"]["run"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def writable(out: Path, key: str, force: bool) -> None:
    """`out` may be written: new, empty, or an earlier export of run `key` holding only what export
    writes; anything else only with --force (a folder of the user's own files is never replaced silently)."""
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out}: a file, not a folder")
    found = sorted(p.name for p in out.iterdir()) if out.is_dir() else []
    if not found or force:
        return
    foreign = [name for name in found if name not in EXPORT_FILES]
    earlier = earlier_export_of(out)
    if earlier == key and not foreign:
        return
    holds = f"an earlier export of run {earlier}" if earlier and earlier != key else "files that are not an export of it"
    raise ValueError(f"--out {out}: holds {holds} ({', '.join((foreign or found)[:5])}); give a new or empty "
                     "folder, or --force to write into it (export's own files there are replaced)")


def prepare(out: Path) -> None:
    """The folder, export's own files of an earlier export removed (writable() allowed it)."""
    for name in EXPORT_FILES:
        (out / name).unlink(missing_ok=True)
    out.mkdir(parents=True, exist_ok=True)


def readable(out: Path) -> None:
    """Every file of the folder readable by all (0644 under the usual umask; safetensors writes 0600)."""
    umask = os.umask(0)
    os.umask(umask)
    for path in out.iterdir():
        if path.is_file():
            path.chmod(0o666 & ~umask)


def command(target: Target, out: Path, params, overrides: list[str]) -> str:
    """The export command that writes this one folder again."""
    p, source = target.point, shown_path(params.source)
    where = (["--params", source] if source != DEFAULT_PARAMS else []) + (["--set", *overrides] if overrides else [])
    if p is None:
        parts = [target.config.key()]
    else:
        parts = ["--page", target.page, "--series", p.series, "--task", p.task, "--sparsity", f"{p.x:g}",
                 "--seed", str(p.seed)]
    return "python -m srnets_lib export " + " ".join(shlex.quote(a) for a in parts + where + ["--out", out.name])


def say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
