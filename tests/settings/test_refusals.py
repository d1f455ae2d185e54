"""Bad input, found before any work, in one or two lines naming the file, key or variable and what was
expected (or the right result where the input was right after all): damaged or hostile files in the
store, overrides into values that are not blocks, seeds outside their range, the run store's
variable, the authors' bias predictions of other examples or with a NaN row, a full disk while a run
saves its resume point, a run named by its folder, another page's settings under an override."""

import pickle
import struct
import subprocess
import sys

import numpy as np
import pytest

from srnets_lib import paths
from srnets_lib.__main__ import main
from srnets_lib.data import bias
from srnets_lib.data.local import DataFileError
from srnets_lib.data.splits import Split
from srnets_lib.settings.config import DataConfig, RunConfig
from srnets_lib.store.runs import Run
from srnets_lib.sweeps.executors import execute


def tiny(**fields) -> RunConfig:
    settings = dict(task="nli", backbone="tiny", epochs=1, max_length=32, batch_size=8, eval_interval=4,
                    data=DataConfig(train_size=32, dev_size=16, ood_size=16))
    return RunConfig(**{**settings, **fields})


def refused(capsys, argv: list[str], lines: int = 1) -> str:
    """The refusal (exit 2): at most `lines` lines, after export's own line saying what it exports."""
    assert main(argv) == 2
    said = [line for line in capsys.readouterr().err.strip().splitlines() if not line.startswith("export: ")]
    assert said[0].startswith("error: ") and len(said) <= lines, said
    return "\n".join(said)


@pytest.fixture
def finished(store):
    """A tiny full model that kept its weights (a mask run starts from it) and the mask run."""
    full = tiny()
    mask = tiny(method="mask", sparsity=0.5, init_from=full)
    execute(mask)
    return full, mask


@pytest.mark.parametrize("damage", ["cut", "huge header"])
def test_a_damaged_weights_file_is_refused_by_export_naming_it(finished, tmp_path, capsys, damage):
    full, _ = finished
    weights = Run(full).file(paths.WEIGHTS)
    data = weights.read_bytes()
    weights.write_bytes(data[:len(data) // 2] if damage == "cut" else struct.pack("<Q", 2**62) + data[8:])
    error = refused(capsys, ["export", full.key(), "--out", str(tmp_path / "x"), "--no-measure"])
    assert str(weights) in error and "nothing was exported" in error and not (tmp_path / "x").exists()


def test_a_config_yaml_with_a_python_tag_is_refused_naming_it(finished, tmp_path, capsys):
    _, mask = finished
    config = Run(mask).file(paths.CONFIG)
    config.write_text("!!python/object/apply:os.system ['echo pwned']\n")
    error = refused(capsys, ["export", mask.key(), "--out", str(tmp_path / "x")])
    assert f"{config}: not a run's settings" in error and "plain YAML" in error


def test_a_run_named_by_its_folder_exports_as_by_its_key(finished, tmp_path, store):
    _, mask = finished
    assert main(["export", f"{store / mask.key()}/", "--out", str(tmp_path / "x"), "--no-measure"]) == 0
    assert (tmp_path / "x" / "model.safetensors").is_file()


def test_a_folder_outside_the_store_is_refused_naming_the_store(finished, tmp_path, capsys, store):
    _, mask = finished
    error = refused(capsys, ["export", str(tmp_path / "elsewhere" / mask.key()), "--out", str(tmp_path / "x")])
    assert f"not a run folder of the run store {store}" in error


@pytest.mark.parametrize("count", ["0", "-1", "many"])
def test_check_examples_must_be_a_count(capsys, count, tmp_path):
    with pytest.raises(SystemExit) as exit_:
        main(["export", "nli-mask-poe-000000000000", "--out", str(tmp_path), "--check-examples", count])
    assert exit_.value.code == 2
    assert "argument --check-examples: expected a whole number >= 1" in capsys.readouterr().err


def test_a_seed_beyond_32_bits_is_refused_before_any_run_and_recorded_nowhere(store, capsys):
    error = refused(capsys, ["run", "params/toy.yaml", "backbone=tiny", f"seed={2**64}"], lines=2)
    assert "seed: Input should be less than 4294967296" in error
    assert not store.exists() or not list(store.glob(f"*/{paths.FAILED}"))


def test_an_override_into_a_list_is_refused_naming_both(capsys):
    error = refused(capsys, ["plan", "book/sec5_1.ipynb", "--set", "sections.sec5_1.steps.nli=[4]"])
    assert "override sections.sec5_1.steps.nli=[4]: sections.sec5_1.steps is list" in error


def test_another_pages_settings_under_an_override_leave_that_page_out_saying_so(capsys):
    """epochs=1 ends the std run before section 5.1's step 8; sweeping section 4.4 needs none of 5.1."""
    assert main(["plan", "book/sec4_4.ipynb", "--set", "epochs=1"]) == 0
    said = capsys.readouterr().err
    assert "page sec5_1 is left out of the runs' shared requests: its settings do not hold" in said
    assert "is not before the end of the std fine-tuning run" in said


def test_srnets_runs_expands_the_home_folder_and_refuses_a_relative_path(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("SRNETS_RUNS", "~/srnets-runs")
    assert paths.runs_root() == tmp_path / "srnets-runs"
    monkeypatch.setenv("SRNETS_RUNS", "srnets-runs")
    with pytest.raises(ValueError, match="SRNETS_RUNS='srnets-runs' is a relative path: give an absolute one"):
        paths.runs_root()


def test_the_authors_predictions_of_other_examples_are_refused_naming_the_file(tmp_path):
    (tmp_path / "QQP").mkdir()
    path = tmp_path / "QQP" / "log_probs.pkl"
    with path.open("wb") as handle:
        pickle.dump({7: np.log([0.9, 0.1]), 8: np.log([0.3, 0.7])}, handle)  # other pairs' ids
    train = Split("train", ["a", "b"], ["c", "d"], [0, 1], ["not_duplicate", "duplicate"], ids=[101, 102])
    with pytest.raises(DataFileError, match=rf"{path}: holds predictions for 0 of the 2 training examples' ids"):
        bias.authors_predictions("paraphrase", train, tmp_path)


def test_a_nan_row_of_the_authors_predictions_is_named_with_its_example(tmp_path):
    (tmp_path / "fever").mkdir()
    path = tmp_path / "fever" / "log_probs.npy"
    np.save(path, np.log([[0.5, 0.25, 0.25], [np.nan, 0.5, 0.5], [0.2, 0.3, 0.5]]))
    train = Split("train", ["a", "b", "c"], ["", "", ""], [0, 1, 2], ["SUPPORTS", "REFUTES", "NOT ENOUGH INFO"],
                  ids=[0, 1, 2])
    with pytest.raises(DataFileError, match=rf"{path}: the row of example id 1 is \[nan"):
        bias.authors_predictions("factcheck", train, tmp_path)


FULL_DISK = """
import resource, signal, sys, torch
from srnets_lib.settings.config import RunConfig
from srnets_lib.store.runs import Run
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG), as on a full disk
run = Run(RunConfig(task="nli", seed=1), sys.argv[1])
run.dir.mkdir(parents=True)
resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))
try:
    run.save_checkpoint({"step": 1, "model": {"w": torch.zeros(1 << 20)}})
except OSError as err:
    print(err)
"""


def test_a_write_that_fails_inside_torch_save_is_one_line_naming_the_checkpoint(tmp_path):
    """torch.save reports a failed write as "unexpected pos" from its C++ writer: named here."""
    done = subprocess.run([sys.executable, "-c", FULL_DISK, str(tmp_path)], capture_output=True, text=True)
    checkpoint = Run(RunConfig(task="nli", seed=1), tmp_path).file(paths.CHECKPOINT)
    assert done.stdout.startswith(f"[Errno 28] could not write {checkpoint} ("), done.stdout + done.stderr
    assert len(done.stdout.strip().splitlines()) == 1 and not checkpoint.exists()
    assert not any(p.name.startswith(".") for p in checkpoint.parent.iterdir())  # no temporary file left
