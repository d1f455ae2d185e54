"""The pre-start check (data/inputs.py): every input any planned run reads is named before the first
step (the files, the authors' bias predictions, the hub datasets), found where the authors' and the
distributions' layouts put them, checked against its published size, with hints that never break
another of the run's settings."""

import numpy as np
import torch
import pytest

from srnets_lib.sweeps.executors import check_inputs
from srnets_lib.data import bias
from srnets_lib.settings.config import DataConfig, RunConfig
from srnets_lib.data import hub, inputs, local

from loader_files import write, write_factcheck_files


def _poe(task, folder, **fields):
    """A PoE run and its std run on the few-row files of test_loaders (data.check_sizes: false, as
    tests/paper_fixture.py's rehearsal sets it)."""
    std = RunConfig(task=task, data=DataConfig(source="local", path=str(folder), check_sizes=False),
                    bias_model="authors")
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


def _fever_rows(n):
    return "".join(f'{{"claim": "C {i}.", "evidence": "E {i}.", "gold_label": "SUPPORTS"}}\n' for i in range(n))


def test_a_wrong_file_is_refused_before_the_first_step_with_the_missing_ones(tmp_path, monkeypatch):
    """A 1-row data/fever/fever.train.jsonl (the authors' layout) is named before any run starts, in
    the same one refusal as the files that are missing, with its rows and the published count; each
    file is counted once (one pass) however many runs read it; data.check_sizes: false skips it."""
    write(tmp_path / "fever" / "fever.train.jsonl", _fever_rows(1))
    write(tmp_path / "fever" / "sym1" / "test.jsonl", _fever_rows(717))  # the published 717: not named
    passes = []
    reader = local.READERS["factcheck/fever.train.jsonl"]
    monkeypatch.setitem(local.READERS, "factcheck/fever.train.jsonl", lambda *a: passes.append(a) or reader(*a))
    data = DataConfig(source="local", path=str(tmp_path))
    runs = [RunConfig(task="factcheck", seed=seed, data=data) for seed in (1, 2, 3)]
    with pytest.raises(local.DataFileError) as refusal:
        check_inputs(runs)
    lines = str(refusal.value).splitlines()
    assert lines[0] == "the runs asked for read inputs that are missing or not the published files:"
    assert lines[1:] == [
        f"- {tmp_path / 'fever' / 'fever.train.jsonl'}: 1 labelled rows, the published file has 242,911; is it "
        "the whole file? (data.check_sizes: false reads it all the same)",
        *(line for line in lines[2:] if "not found" in line)]
    assert sum("fever.dev.jsonl not found" in line for line in lines) == 1
    assert sum("symmetric_v0.2_fever_symmetric_test.jsonl not found" in line for line in lines) == 1
    assert not any("symmetric_v0.1" in line and "not found" in line for line in lines) and len(lines) == 4
    assert len(passes) == 1  # one pass over the file for the three runs
    unchecked = [r.model_copy(update={"data": data.model_copy(update={"check_sizes": False})}) for r in runs]
    assert not any("labelled rows" in line for line in inputs.missing(unchecked)) and len(inputs.missing(unchecked)) == 2


def test_a_malformed_file_is_named_by_the_pre_start_check_too(tmp_path):
    """A file its reader refuses (here: not JSON at line 2) is named with its line before the sweep."""
    write(tmp_path / "factcheck" / "fever.dev.jsonl", _fever_rows(1) + "not json\n")
    lines = inputs.missing([RunConfig(task="factcheck", data=DataConfig(source="local", path=str(tmp_path)))])
    assert any(line.startswith(f"{tmp_path / 'factcheck' / 'fever.dev.jsonl'}, line 2") for line in lines), lines


def test_part_two_files_are_counted_before_the_first_step(tmp_path):
    """GLUE and SQuAD files of another size than GLUE's and SQuAD's are named by the pre-start check."""
    write(tmp_path / "glue" / "CoLA" / "train.tsv", "gj04\t1\t\tOur friends won't buy this analysis.\n")
    write(tmp_path / "squad" / "dev-v1.1.json", '{"data": [], "version": "1.1"}')
    data = DataConfig(source="local", path=str(tmp_path))
    lines = inputs.missing([RunConfig(task="cola", data=data, select="last"),
                            RunConfig(task="squad", data=data, select="last")])
    assert f"{tmp_path / 'glue' / 'CoLA' / 'train.tsv'}: 1 labelled rows, the published file has 8,551" in lines[0]
    assert any(line.startswith(f"{tmp_path / 'squad' / 'dev-v1.1.json'}: 0 labelled rows, the published file "
                               "has 10,570") for line in lines), lines


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


def test_a_hub_backbone_is_read_from_the_mirror_keeping_its_hub_id(tmp_path, monkeypatch, store, capsys):
    """$SRNETS_HUB_MIRROR serves the backbones as it serves the hub datasets: `bert-base-uncased`
    is read from <mirror>/bert-base-uncased (here a tiny BERT saved there), the run keeps the hub id
    in its config and key, and `plan` lists the backbone with the hub datasets. A backbone the mirror
    lacks is named with the folder and the command that copies it, before any run starts."""
    from transformers import BertForSequenceClassification

    from srnets_lib.__main__ import main
    from srnets_lib.model import backbones
    from srnets_lib.sweeps.executors import execute

    tokenizer = backbones.load_tokenizer("tiny")
    saved = BertForSequenceClassification(backbones.tiny_config(3, len(tokenizer)))
    saved.save_pretrained(tmp_path / "hub" / "bert-base-uncased")
    tokenizer.save_pretrained(tmp_path / "hub" / "bert-base-uncased")
    monkeypatch.setenv(hub.MIRROR, str(tmp_path / "hub"))
    config = RunConfig(task="nli", backbone="bert-base-uncased", epochs=1, max_length=32, batch_size=8,
                       eval_interval=4, data=DataConfig(train_size=32, dev_size=16, ood_size=16))
    check_inputs([config])
    loaded = backbones.load_model("bert-base-uncased", 3)
    assert all(torch.equal(p, saved.state_dict()[n]) for n, p in loaded.state_dict().items() if n.startswith("bert."))
    result = execute(config)
    assert result.key == config.key()
    assert "backbone: bert-base-uncased" in (store / config.key() / "config.yaml").read_text()
    assert main(["plan", "book/sec4_2.ipynb", "--set", "backbone=bert-base-uncased", "tasks=[nli]"]) == 0
    assert "bert-base-uncased (backbone)" in capsys.readouterr().err
    with pytest.raises(backbones.BackboneError, match=rf"backbone 'roberta-base': no copy in {tmp_path / 'hub' / 'roberta-base'} "
                                                  rf"\(\$SRNETS_HUB_MIRROR\); copy it there with huggingface-cli download "
                                                  rf"roberta-base .*--local-dir {tmp_path / 'hub' / 'roberta-base'}"):
        check_inputs([config.model_copy(update={"backbone": "roberta-base"})])
