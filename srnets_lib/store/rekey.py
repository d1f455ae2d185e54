"""Move the runs of a store computed by algorithm version 3 to version 4's keys, so that a
paper-scale store (tens of GB, hundreds of GPU-hours) is not orphaned by the change of key.

Version 4 computes exactly what version 3 did; it only keys runs by their scientific settings:
the evaluation batch size, `eval_ood` and `keep_steps` left the run config (request.Request).
A finished version-3 run is moved when its directory name is the version-3 key of its
config.yaml (so its settings are the ones it was computed with); its final.json becomes a
RunResult recording what it left behind, with the fingerprint of the data as it reads now.
Runs that differed only by those settings now share a key: the one that left more behind is
kept, the other moved under _superseded/. Unfinished runs are left where they are.

    python -m srnets_lib rekey [--runs DIR] [--dry-run]
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import yaml

from srnets_lib import paths
from srnets_lib.settings.config import RunConfig, describe
from srnets_lib.data.load import current_fingerprints
from srnets_lib.store.result import RunResult
from srnets_lib.store.files import atomic_write

# fields of a version-3 run config that version 4 moved out of the key, with their defaults then
MOVED = {"eval_batch_size": 256, "eval_ood": "every", "keep_steps": []}
DEPENDENCIES = ("init_from", "mask_from", "teacher")


def scientific(raw: dict) -> dict:
    """A version-3 config (config.yaml) without the fields that left the key, at every depth."""
    return {k: scientific(v) if k in DEPENDENCIES and v else v for k, v in raw.items() if k not in MOVED}


def _v3_fields(raw: dict, config: RunConfig) -> dict:
    """What version 3 hashed: the non-default fields, the moved ones included, at every depth."""
    fields = config.model_dump(mode="json", exclude_defaults=True)
    for name, default in MOVED.items():
        if raw.get(name, default) != default:
            fields[name] = raw[name]
    for name in DEPENDENCIES:
        if raw.get(name):
            fields[name] = _v3_fields(raw[name], getattr(config, name))
    return fields


def v3_key(raw: dict) -> str:
    """The key version 3 gave the run whose resolved config is `raw`."""
    config = RunConfig.model_validate(scientific(raw))
    blob = json.dumps({"v": 3, "config": _v3_fields(raw, config)}, sort_keys=True)
    return f"{config.task}-{config.method}-{config.loss}-{hashlib.sha256(blob.encode()).hexdigest()[:12]}"


def converted(folder: Path, raw: dict, config: RunConfig, final: dict | None = None) -> RunResult:
    """The run's version-3 final.json (`final`, else read) as a RunResult recording what the
    folder holds; it records no file checksums, so its files are checked by reading them."""
    final = final if final is not None else json.loads((folder / paths.FINAL).read_text())
    kept = [s for s in raw.get("keep_steps", []) if (folder / paths.step_weights(s)).is_file()]
    return RunResult.model_validate({
        **final, "key": config.key(), "data_fingerprint": current_fingerprints(config.task, config.data),
        "ood_every": raw.get("eval_ood", "every") == "every", "kept_steps": kept,
        "weights": (folder / paths.WEIGHTS).is_file()})


def _coverage(result: RunResult) -> tuple:
    return result.ood_every, result.weights, len(result.kept_steps)


class RekeyError(ValueError):
    """Folders of the store that cannot be read; nothing was moved."""


def _read(folder: Path) -> tuple[dict | None, dict | None]:
    """(config.yaml, final.json) of a finished folder, final.json only for a version-3 run (None
    for a version-4 run, which stays); raises ValueError naming the file that cannot be read."""
    path = folder / paths.CONFIG
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as err:
        mark, problem = getattr(err, "problem_mark", None), getattr(err, "problem", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        raise ValueError(f"{path}: not YAML ({where}{problem or str(err).splitlines()[0]})") from None
    if not isinstance(raw, dict):
        raise ValueError(f"{path}: not a run's config (a mapping of its settings)")
    try:
        same = v3_key(raw) == folder.name
    except ValueError:
        same = False
    if not same:  # a version-4 run, or not computed with these settings
        return raw, None
    path = folder / paths.FINAL
    try:
        return raw, json.loads(path.read_text())
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not JSON ({err.msg} at line {err.lineno}, column {err.colno}; cut short?)") from None


def rekey(root: Path, dry_run: bool = False) -> dict[str, int]:
    """Move every finished version-3 run of `root` to its version-4 key; counts by outcome. Every
    folder is read first: if any cannot be (RekeyError names each), nothing is moved."""
    counts, found, bad = {"moved": 0, "superseded": 0, "skipped": 0, "unfinished": 0}, [], []
    for folder in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("_")):
        if not (folder / paths.CONFIG).is_file() or not (folder / paths.FINAL).is_file():
            counts["unfinished"] += 1
            continue
        try:
            raw, final = _read(folder)
            if final is None:
                counts["skipped"] += 1
                continue
            config = RunConfig.model_validate(scientific(raw))
            found.append((folder, config, converted(folder, raw, config, final)))
        except ValueError as err:  # a config, result or data that cannot be read: named, nothing moved
            bad.append(str(err).splitlines()[0])
    if bad:
        raise RekeyError(f"{len(bad)} folder(s) of {root} cannot be read, so nothing was moved:"
                         + "".join(f"\n- {line}" for line in bad))
    placed = {}
    for folder, config, result in found:
        target = root / config.key()
        previous = placed.get(target.name) or (_stored(target) if target.exists() else None)
        keep = previous is None or _coverage(result) > _coverage(previous)
        counts["superseded"] += previous is not None  # this run, or the one it displaces
        counts["moved"] += keep and target.name not in placed
        if keep:
            placed[target.name] = result
        print(f"{folder.name} -> {target.name}" + ("" if keep else " (superseded: another run left more)"))
        if not dry_run:
            _move(folder, target, result, config, keep)
    return counts


def _stored(folder: Path) -> RunResult | None:
    """A version-4 run's result where rekey would move another; None if it cannot be read (a sweep
    would compute it again: the moved run replaces it)."""
    try:
        return RunResult.model_validate_json((folder / paths.FINAL).read_text())
    except (OSError, ValueError):
        return None


def _move(folder: Path, target: Path, result: RunResult, config: RunConfig, keep: bool) -> None:
    aside = folder.parent / "_superseded"
    if not keep or target.exists():
        aside.mkdir(exist_ok=True)
    if not keep:
        folder.rename(aside / folder.name)
        return
    atomic_write(folder / paths.CONFIG, yaml.safe_dump(describe(config), sort_keys=True))
    atomic_write(folder / paths.FINAL, result.model_dump_json(indent=2))
    if target.exists():
        shutil.move(str(target), str(aside / target.name))
    folder.rename(target)


def main(args) -> int:
    root = Path(args.runs) if args.runs else paths.runs_root()
    counts = rekey(root, args.dry_run)
    print("rekey: " + ", ".join(f"{n} {what}" for what, n in counts.items())
          + (" (dry run: nothing moved)" if args.dry_run else ""))
    return 0
