"""params/paper.yaml rehearsed on a CPU the way a user runs it (tests/paper_fixture.py): a fresh copy
of the checkout holding data/ and bias_model_preds/ as the authors ship them (or under the names their
distributions unpack to) and a copy of the hub datasets, and rehearsal.yaml, which scales down only the
backbone, the seeds, the sizes and the steps. `plan` lists no missing input, removing any one input
stops the sweep before its first step naming it, and the README's `make book` computes both parts and
builds the book."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from paper_fixture import rehearse
from srnets_lib.sweeps.executors import check_inputs
from srnets_lib.settings import params
from srnets_lib import paths
from srnets_lib.data import hub, inputs
from srnets_lib.data.load import load_task
from srnets_lib.book.runs import of_notebooks as graph

NOTEBOOKS = sorted(f"book/{p.name}" for p in paths.BOOK_DIR.glob("*.ipynb"))


def fresh_checkout(tmp_path: Path) -> Path:
    """The tracked files of this checkout and its .venv linked in, the files the environment was
    installed from dated before its install stamp (make then sees it as up to date and installs
    nothing into it)."""
    root = tmp_path / "checkout"
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=paths.PROJECT_ROOT, capture_output=True,
                             check=True).stdout.decode().split("\0")
    for name in filter(None, tracked):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(paths.PROJECT_ROOT / name, root / name)
    (root / ".venv").symlink_to(paths.PROJECT_ROOT / ".venv")
    installed = (root / ".venv" / ".installed").stat().st_mtime
    for name in ("pyproject.toml", "constraints.txt", "tools/install.py"):
        os.utime(root / name, (installed - 1, installed - 1))
    return root


def environment(root: Path) -> dict:
    """A user's shell in the checkout, without internet: the hub's datasets from the copy."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SRNETS_")}
    return {**env, "PYTHONPATH": str(root), hub.MIRROR: str(root / "hub"), "HF_HUB_OFFLINE": "1",
            "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def need_files(need) -> set[Path]:
    """The files an input (data/inputs.py) is read from where they exist: a data file's candidates,
    a hub copy's parquet files of the splits it reads."""
    if isinstance(need, inputs.FileNeed):
        return set(need.candidates)
    files = hub.mirror_files(need.hub_id, need.config) or {}
    return {Path(f) for split in need.splits for f in files.get(split, [])}


def configs(root: Path, monkeypatch) -> list:
    """Every run of both parts (and what it depends on), planned in the checkout as `plan` plans them."""
    monkeypatch.chdir(root)
    monkeypatch.setenv(hub.MIRROR, str(root / "hub"))
    runs, _ = graph(NOTEBOOKS, params.load(root / "rehearsal.yaml"))
    return [node.config for node in runs]


@pytest.mark.parametrize("layout", ["authors", "distributions"])
def test_every_input_is_found_as_shipped_and_each_one_missing_is_named(tmp_path, monkeypatch, layout):
    root = fresh_checkout(tmp_path)
    rehearse(root, layout)
    planned = configs(root, monkeypatch)
    assert inputs.missing(planned, reach=True) == []
    for task in ("nli", "paraphrase", "factcheck"):  # every paper task reads as planned
        config = next(c for c in planned if c.task == task and c.data.ood_train)
        assert len(load_task(task, config.data).ood) >= 1
    shipped = {p for folder in ("data", "bias_model_preds", "hub") for p in (root / folder).rglob("*") if p.is_file()}
    read = {path for path in shipped if any(path in need_files(need) for c in planned for need in inputs.needs(c))}
    # every file shipped is read, but GLUE's MNLI tsv: paper.yaml takes MNLI from the hub
    assert {p.relative_to(root / "data").as_posix() for p in shipped - read} == {"MNLI/train.tsv", "MNLI/dev_matched.tsv"}
    assert len(read) == 13 + 3 + 2 * 6 + 1 + 2 + 2  # data, bias predictions, hub: MNLI with the 5 GLUE tasks, SQuAD, WikiText
    for path in sorted(read):
        path.rename(path.with_name(path.name + ".aside"))
        try:
            check_inputs(planned)
            message = None
        except Exception as err:  # a missing file or hub split, or a backbone: one error naming each
            message = str(err)
        assert message is not None, f"nothing stops the sweep without {path}"
        named = (str(path) in message if "hub" not in path.relative_to(root).parts
                 else path.name.split("-")[0] in message and str(path.parent) in message)
        assert named, f"{path} is not named: {message}"
        path.with_name(path.name + ".aside").rename(path)


@pytest.mark.slow
def test_the_readme_rehearsal_plans_and_builds_both_parts(tmp_path):
    root = fresh_checkout(tmp_path)
    rehearse(root, "authors")
    env = environment(root)
    planned = subprocess.run([sys.executable, "-m", "srnets_lib", "plan", *NOTEBOOKS, "--params", "rehearsal.yaml"],
                             cwd=root, env=env, capture_output=True, text=True)
    assert planned.returncode == 0 and planned.stdout.rstrip().splitlines()[-1] == "TOTAL: 585 runs, 4383 optimizer steps"
    assert "missing" not in planned.stderr

    # one input removed: the sweep refuses before its first step, naming it
    preds = root / "bias_model_preds" / "QQP" / "log_probs.pkl"
    preds.rename(preds.with_suffix(".aside"))
    refused = subprocess.run([sys.executable, "-m", "srnets_lib", "sweep", *NOTEBOOKS, "--params", "rehearsal.yaml"],
                             cwd=root, env=env, capture_output=True, text=True)
    assert refused.returncode == 2 and str(preds) in refused.stderr and not (root / "runs").exists()
    preds.with_suffix(".aside").rename(preds)

    built = subprocess.run(["make", "book", "PARAMS=rehearsal.yaml", "EXECUTOR=ray"], cwd=root, env=env,
                           capture_output=True, text=True)
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    finals = [json.loads(p.read_text()) for p in (root / "runs").glob("*/final.json")]
    assert len(finals) == 585
    poe = [f for f in finals if f["loss"] == "poe"]
    assert poe and all(f["bias_model"].startswith("authors' predictions") for f in poe)  # found beside data/
    assert all("prediction dropped: 1" in f["data"] for f in poe if f["task"] == "paraphrase")
    assert {f["task"] for f in finals} >= {"nli", "paraphrase", "factcheck", "corpus", "cola", "squad"}
    html = root / "_build" / "html"
    assert (html / "book" / "sec4_2.html").is_file() and (html / "book" / "tamt_transfer.html").is_file()
