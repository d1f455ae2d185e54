import os
import sys
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
# the layers' folders share the modules at the top of tests/ (paper_fixture, transfer_fixture, loader_files)
sys.path.insert(0, str(Path(__file__).resolve().parent))


@pytest.fixture
def store(tmp_path, monkeypatch):
    """An empty run store for the test."""
    monkeypatch.setenv("SRNETS_RUNS", str(tmp_path / "runs"))
    return tmp_path / "runs"


@pytest.fixture
def shared_data():
    if not SHARED.is_dir():
        pytest.skip("../shared/data is not beside this checkout")
    return SHARED


@pytest.fixture
def tiny_params(tmp_path):
    """params/toy.yaml on the tiny random model and a few dozen examples: one seed, one sparsity."""
    text = Path("params/toy.yaml").read_text()
    for old, new in [("backbone: packaged", "backbone: tiny"), ("num_layers: 2", "num_layers: null"),
                     ("train_size: 256, dev_size: 300, test_size: 300, ood_size: 300",
                      "train_size: 96, dev_size: 32, test_size: 32, ood_size: 32"),
                     ("seeds: [1, 2]", "seeds: [1]"),
                     ("sparsities: [0.2, 0.5, 0.7, 0.9]", "sparsities: [0.5]"),
                     ("steps: [8, 16, 24]", "steps: [4, 8, 12]")]:  # section 5.1's, of the 18 std steps
        assert old in text, f"params/toy.yaml no longer contains {old!r}: update tiny_params"
        text = text.replace(old, new)
    path = tmp_path / "tiny.yaml"
    path.write_text(text)
    return path
