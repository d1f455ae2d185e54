"""The files a finished run leaves for others to read (its masks, predictions and kept weights),
checked whole on reuse: final.json records each one's size and CRC-32 (as zip files check their
members: a cut, a hole or a flipped byte is found at about 4 GB/s, a BERT-base weights file in a
tenth of a second; nothing here guards against a deliberate edit, which could rewrite final.json as
well); a result written before they were recorded has its files read instead. Arrays are written
whole or not at all."""

from __future__ import annotations

import errno
import json
import os
import shutil
import zlib
from pathlib import Path

import numpy as np
import torch

from srnets_lib import paths
from srnets_lib.settings.request import Request
from srnets_lib.store.result import RunResult, StoredFile

# what a run leaves for others to read: final.json records each one's size and checksum
ARTIFACTS = ("mask*.npz", "predictions*.npz", "weights*.safetensors")
# files found whole (or not) in this process, by path, size, mtime and inode: a page or a sweep
# asking again reads none of them twice
_CHECKED: dict[tuple, str | None] = {}
_RECORDED: dict[tuple, dict[str, str] | None] = {}  # final.json's recorded checksums, by path and identity


def _weights_read(request: Request | None) -> set[str]:
    """The weights files `request` reads (a page: none)."""
    if request is None:
        return set()
    return {paths.step_weights(s) for s in request.keep_steps} | ({paths.WEIGHTS} if request.weights else set())


def _identity(path: Path) -> tuple:
    stat = path.stat()
    return stat.st_size, stat.st_mtime_ns, stat.st_ino


def crc32(path: Path) -> str:
    crc = 0
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 24):
            crc = zlib.crc32(chunk, crc)
    return f"{crc:08x}"


def _checked(path: Path, record: StoredFile) -> str | None:
    """None if `path` has the size and CRC-32 recorded when its run finished, else what differs."""
    try:
        identity = _identity(path)
    except FileNotFoundError:
        return f"{path}: missing (final.json records {record.bytes} bytes)"
    if identity[0] != record.bytes:
        return f"{path}: damaged ({identity[0]} bytes, {record.bytes} recorded when its run finished)"
    key = (str(path), *identity, record.crc32)
    if key not in _CHECKED:
        crc = crc32(path)
        _CHECKED[key] = None if crc == record.crc32 else (
            f"{path}: damaged (its CRC-32 {crc} is not the {record.crc32} recorded when its run finished)")
    return _CHECKED[key]


def _unreadable(path: Path) -> str | None:
    """None if `path` (npz or safetensors) reads whole, else why not (a file no checksum was
    recorded for: written before they were)."""
    try:
        key = (str(path), *_identity(path), "read")
    except FileNotFoundError:
        return f"{path}: missing"
    if key not in _CHECKED:
        try:
            if path.suffix == ".npz":
                read_arrays(path)
            else:
                from safetensors.torch import load_file

                load_file(str(path))
            _CHECKED[key] = None
        except Exception as err:  # a cut zip, a cut member (zlib, CRC), a cut safetensors header
            _CHECKED[key] = f"{path}: not readable ({first_line(err)})"
    return _CHECKED[key]


def recorded_checksums(final: Path) -> dict[str, str] | None:
    """{file name: CRC-32} as the final.json at `final` records its run's files ({} where it
    records none: a store written before); None where there is no readable result."""
    try:
        key = (str(final), *_identity(final), "final")
    except FileNotFoundError:
        return None
    if key not in _RECORDED:
        try:
            result = RunResult.model_validate_json(final.read_text())
            _RECORDED[key] = {name: stored.crc32 for name, stored in result.files.items()}
        except (OSError, ValueError):
            _RECORDED[key] = None
    return _RECORDED[key]


def first_line(err: BaseException) -> str:
    return f"{type(err).__name__}: " + (str(err).strip().splitlines() or [""])[0][:200]


def write_arrays(path: Path, arrays: dict[str, np.ndarray]) -> None:
    with paths.replacing(path) as tmp, open(tmp, "wb") as handle:
        np.savez_compressed(handle, **arrays)


def read_arrays(path: Path) -> dict[str, np.ndarray] | None:
    if not path.is_file():
        return None
    with np.load(path) as stored:
        return {name: stored[name] for name in stored.files}




def inventory(folder: Path) -> dict[str, StoredFile]:
    """The size and CRC-32 of every mask, predictions and weights file under a run's `folder`."""
    return {path.name: StoredFile(bytes=path.stat().st_size, crc32=crc32(path)) for path in artifacts_of(folder)}


def damage(folder: Path, result: RunResult, request: Request | None = None) -> str | None:
    """None if every file `request` reads from the finished run in `folder` is whole, else which
    one is not and why. Masks and predictions are read by every request (the runs fine-tuning a
    mask, the pages: `request` None), kept weights by those asking for them."""
    wanted = _weights_read(request)
    for path in [folder / name for name in sorted(result.files)] if result.files else artifacts_of(folder):
        if path.name.endswith(".safetensors") and path.name not in wanted:
            continue
        why = _checked(path, result.files[path.name]) if result.files else _unreadable(path)
        if why:
            return why
    return None


def artifacts_of(folder: Path) -> list[Path]:
    return sorted(p for pattern in ARTIFACTS for p in folder.glob(pattern))


def atomic_write(path: Path, text: str) -> None:
    """Write `path` whole or not at all, flushed to disk (paths.replacing)."""
    with paths.replacing(path) as tmp, tmp.open("w") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())


def read_rows(path: Path) -> list[dict]:
    """A JSON-lines file's rows ([] if there is none), up to a line a crash cut short: what
    follows it is not trusted."""
    if not path.exists():
        return []
    rows = []
    for line in path.read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            break
    return rows


def read_weights(path: Path, own: dict[str, torch.Tensor], key: str,
                 leave_out: tuple[str, ...] = ()) -> dict[str, torch.Tensor]:
    """The tensors of a weights file (but those whose names end with `leave_out`), each checked
    against `own` (a model's parameters): the same names and shapes; an unreadable file is a
    ValueError saying the next sweep computes run `key` again."""
    from safetensors.torch import load_file

    try:
        tensors = load_file(str(path))
    except Exception as err:  # SafetensorError: cut short, or not safetensors at all
        raise ValueError(f"{path}: not a readable weights file ({first_line(err)}); the next sweep "
                         f"computes run {key} again") from None
    tensors = {name: value for name, value in tensors.items() if not name.endswith(leave_out)}
    for name, value in tensors.items():
        if name not in own:
            raise KeyError(f"{path}: tensor {name} does not exist in the model")
        if own[name].shape != value.shape:
            raise ValueError(f"{path}: {name} has shape {tuple(value.shape)}, model has {tuple(own[name].shape)}")
    return tensors


def write_weights(path: Path, tensors: dict[str, torch.Tensor]) -> None:
    """`tensors` as a safetensors file, written from Python, so a full disk is an OSError naming
    the file (paths.replacing)."""
    from safetensors.torch import save

    with paths.replacing(path) as tmp, open(tmp, "wb") as handle:
        handle.write(save({k: v.detach().contiguous().cpu() for k, v in tensors.items()}))


def write_checkpoint(path: Path, state: dict) -> None:
    """A resume point, through a Python file: torch.save to a path reports a full disk as "enforce
    fail at inline_container.cc", naming no file."""
    with paths.replacing(path) as tmp, open(tmp, "wb") as handle:
        try:
            torch.save(state, handle)
        except RuntimeError as err:  # a write that failed (a full disk) is torch's "unexpected pos ..."
            free = shutil.disk_usage(tmp.parent).free
            raise OSError(errno.ENOSPC, f"{first_line(err)}; {free / 1e6:.0f} MB free on its disk") from None
