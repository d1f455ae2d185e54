"""The README's export commands, copied verbatim, on a store of the toy's own runs (params/toy.yaml as
`make book` computes them, for the points the commands name): each exits 0, writes its folders with
their cards, and leaves the run store byte-identical. They run as a user runs them, from a folder
holding the store as runs/ (SRNETS_RUNS names it), in a shell whose `python` is the project's."""

import os
import re
import subprocess
import sys
from pathlib import Path

from srnets_lib import paths
from srnets_lib.settings import params as params_lib
from srnets_lib.settings.recipes import Recipes
from srnets_lib.sweeps.executors import execute

README = Path(__file__).resolve().parents[2] / "README.md"


def export_commands() -> list[str]:
    section = README.read_text().split("## Taking a subnetwork out", 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    return [line for line in block.splitlines() if line.startswith("python -m srnets_lib export")]


def digest(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_the_readmes_export_commands_run_verbatim(tmp_path, monkeypatch):
    commands = export_commands()
    assert len(commands) == 3
    root = tmp_path / "runs"
    monkeypatch.setenv("SRNETS_RUNS", str(root))
    params = params_lib.load("params/toy.yaml")
    for sparsity in (0.5, 0.7):  # sec4_2's points of "mask train (poe)" on nli, seed 1, that make book computes
        execute(Recipes(params).prune_ft("nli", "mask", "poe", sparsity, 1), params.execution.request())
    before = digest(root)
    env = {**os.environ, "SRNETS_RUNS": str(root), "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    env.pop("SRNETS_PARAMS", None)
    for command in commands:
        done = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True)
        assert done.returncode == 0, f"{command}\n{done.stderr}"
    assert digest(root) == before
    one = tmp_path / "exported" / "mask-poe-0.7"
    assert {"README.md", "config.json", "model.safetensors", "mask.npz"} <= {p.name for p in one.iterdir()}
    assert "## Size, latency and memory" in (one / "README.md").read_text()  # measured, from a relative --out
    series = sorted(p.name for p in (tmp_path / "exported" / "mask-poe").iterdir())
    assert series == ["mask-train-poe-nli-s0.5-seed1", "mask-train-poe-nli-s0.7-seed1"]
    assert (tmp_path / "exported" / "by-key" / paths.CONFIG).is_file()
