import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("SRNETS_PROGRESS", "0")

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"


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
