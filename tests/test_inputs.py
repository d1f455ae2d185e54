"""The pre-start check (data/inputs.py): every input any planned run reads is named before the first
step (the files, the authors' bias predictions, the hub datasets), found where the authors' and the
distributions' layouts put them, checked against its published size, with hints that never break
another of the run's settings."""

import numpy as np
import pytest

from srnets_lib.sweeps.executors import check_inputs
from srnets_lib.data import bias
from srnets_lib.settings.config import DataConfig, RunConfig
from srnets_lib.data import hub, inputs, local

from test_loaders import write, write_factcheck_files


def _poe(task, folder, **fields):
    std = RunConfig(task=task, data=DataConfig(source="local", path=str(folder)), bias_model="authors")
    return RunConfig(task=task, loss="poe", data=std.data, bias_model="authors", **fields), std


def test_the_authors_bias_predictions_are_checked_before_any_run(tmp_path):
    """Without bias_model_preds/ the PoE run is stopped before the sweep starts, naming every place
    looked at; the std run, which reads no bias predictions, needs none."""
    write_factcheck_files(tmp_path)
    poe, std = _poe("factcheck", tmp_path)
    assert inputs.missing([std]) == []
    [line] = inputs.missing([poe])
    assert line.startswith("the authors' bias predictions: ") and "bias_model_preds/fever/log_probs.npy not found" in line
    assert "github.com/llyx97/sparse-and-robust-PLM" in line and "bias_model: ours" in line
    with pytest.raises(local.DataFileError, match="bias_model_preds/fever/log_probs.npy not found"):
        check_inputs([poe])
    assert inputs.missing([poe.model_copy(update={"bias_model": "ours"})]) == []


def test_bias_model_preds_beside_the_data_folder_is_found(tmp_path, monkeypatch):
    """The authors' repository keeps bias_model_preds/ beside data/, and their scripts read it there:
    with the default bias_path (data/bias_model_preds) it is found there too."""
    monkeypatch.chdir(tmp_path)
    write_factcheck_files(tmp_path / "data")
    poe, _ = _poe("factcheck", "data")
    assert poe.bias_path is None and "bias_model_preds" in inputs.missing([poe])[0]
    (tmp_path / "bias_model_preds" / "fever").mkdir(parents=True)
    np.save(tmp_path / "bias_model_preds" / "fever" / "log_probs.npy", np.log(np.full((3, 3), 1 / 3)))
    assert inputs.missing([poe]) == []
    train = local.read_fever(tmp_path / "data" / "factcheck" / "fever.train.jsonl")
    probs, kept = bias.authors_predictions("factcheck", train, None, "data")
    assert probs.shape == (3, 3) and kept.tolist() == [0, 1, 2]
    # a bias_path set on purpose is the only place looked at
    [only] = bias.authors_files("factcheck", "elsewhere")
    assert only.parts[-3:] == ("elsewhere", "fever", "log_probs.npy")


def _paws_rows(n):
    return "id\tsentence1\tsentence2\tlabel\n" + "".join(f"{i}\tA {i} .\tB {i} .\t{i % 2}\n" for i in range(n))


@pytest.mark.parametrize("name", ["QQP/paws_qqp/dev.tsv", "QQP/paws_qqp/dev_and_test.tsv",
                                  "paws_qqp/output/dev_and_test.tsv", "paraphrase/paws_qqp/dev.tsv"])
def test_paws_qqp_is_read_as_the_authors_and_the_generator_lay_it_out(tmp_path, name):
    """The whole generated file (677 pairs: appendix table 1's PAWS-qqp dev) under the authors' name
    or the generator's; a file of another size (a split of it, the generator's leftover) is refused
    naming it, both counts and the switch."""
    write(tmp_path / name, _paws_rows(677))
    root = tmp_path / "paraphrase"
    split = local._paws(root, "paws_qqp/dev_and_test.tsv", "PAWS-qqp", "paws_qqp", sizes=True)
    assert len(split) == 677
    write(tmp_path / name, _paws_rows(338))
    with pytest.raises(local.DataFileError, match=rf"{tmp_path / name}: 338 labelled rows, the published file "
                                                  r"has 677; .*data.check_sizes: false"):
        local._paws(root, "paws_qqp/dev_and_test.tsv", "PAWS-qqp", "paws_qqp", sizes=True)
    assert len(local._paws(root, "paws_qqp/dev_and_test.tsv", "PAWS-qqp", "paws_qqp", sizes=False)) == 338


def test_every_split_is_checked_against_its_published_size_unless_switched_off(tmp_path):
    write_factcheck_files(tmp_path)
    with pytest.raises(local.DataFileError, match=r"fever.train.jsonl: 3 labelled rows, the published file has 242,911"):
        local.load_local("factcheck", tmp_path, sizes=True)
    from srnets_lib.data.load import load_task

    with pytest.raises(local.DataFileError, match="242,911"):
        load_task("factcheck", DataConfig(source="local", path=str(tmp_path)))  # check_sizes: true by default
    assert len(load_task("factcheck", DataConfig(source="local", path=str(tmp_path), check_sizes=False)).train) == 3


def test_a_hint_never_offers_a_setting_that_breaks_another(tmp_path):
    """QQP's pair ids key the authors' bias predictions and the hub's copy has none: a paraphrase
    run that reads them is never told to take QQP (or PAWS-wiki, which comes with it) from the hub."""
    authors = RunConfig(task="paraphrase", data=DataConfig(source="local", path=str(tmp_path)), bias_model="authors")
    ours = authors.model_copy(update={"bias_model": "ours"})
    qqp = [line for line in inputs.missing([authors]) if line.startswith("QQP")]
    assert qqp and not any("data.source=hub" in line for line in qqp)
    assert all("data.source=hub" in line for line in inputs.missing([ours]) if line.startswith(("QQP", "PAWS-wiki")))


def test_part_two_inputs_are_named_too(tmp_path, monkeypatch):
    """The corpus, GLUE and SQuAD files of TAMT's runs, and the hub datasets where they come from."""
    local_runs = [RunConfig(task=task, data=DataConfig(source="local", path=str(tmp_path)), select="last",
                            **({"loss": "mlm"} if task == "corpus" else {})) for task in ("corpus", "cola", "squad")]
    lines = inputs.missing(local_runs)
    assert [line.split(":")[0] for line in lines] == ["WikiText-103", "WikiText-103", "CoLA", "CoLA",
                                                     "SQuAD v1.1", "SQuAD v1.1"]
    hub_runs = [c.model_copy(update={"data": DataConfig(source="hub")}) for c in local_runs]
    assert inputs.hub_datasets(hub_runs) == ["Salesforce/wikitext (wikitext-103-raw-v1)", "nyu-mll/glue (cola)",
                                            "rajpurkar/squad (plain_text)"]
    monkeypatch.setenv(hub.MIRROR, str(tmp_path / "mirror"))  # a mirror: its files are checked, no network
    assert all("no parquet files in" in line for line in inputs.missing(hub_runs))


def test_a_hub_mirror_serves_the_datasets_as_the_hub_lays_them_out(tmp_path, monkeypatch):
    """$SRNETS_HUB_MIRROR: a copy of the hub's dataset repositories (huggingface-cli download),
    parquet files <config>/<split>-NNNNN-of-NNNNN.parquet, read without the network."""
    from datasets import Dataset

    folder = tmp_path / "nyu-mll" / "glue" / "mnli"
    folder.mkdir(parents=True)
    rows = {"premise": ["P0", "P1"], "hypothesis": ["H0", "H1"], "label": [0, 2], "idx": [0, 1]}
    Dataset.from_dict(rows).to_parquet(folder / "train-00000-of-00001.parquet")
    Dataset.from_dict({k: v[:1] for k, v in rows.items()}).to_parquet(folder / "validation_matched-00000-of-00001.parquet")
    monkeypatch.setenv(hub.MIRROR, str(tmp_path))
    loaded = hub._load_dataset("nyu-mll/glue", "mnli")
    assert sorted(loaded) == ["train", "validation_matched"] and loaded["train"]["premise"] == ["P0", "P1"]
    assert inputs.HubNeed("nyu-mll/glue", "mnli", ("train", "validation_matched")).problem(reach=True) is None
    lacking = inputs.HubNeed("nyu-mll/glue", "mnli", ("train", "validation_mismatched")).problem(reach=True)
    assert lacking.startswith("nyu-mll/glue (mnli): no validation_mismatched split in ")
    with pytest.raises(local.DataFileError, match=r"nyu-mll/glue \(qqp\): no parquet files in .*huggingface-cli download"):
        hub._load_dataset("nyu-mll/glue", "qqp")
    monkeypatch.setenv(hub.MIRROR, "")
    with pytest.raises(local.DataFileError, match=r"\$SRNETS_HUB_MIRROR is set but empty"):
        hub._load_dataset("nyu-mll/glue", "mnli")
