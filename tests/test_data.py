"""Loaders on the real files in ../shared/data, synthetic tasks, and clear errors on bad input."""

import pytest

from srnets_lib.data import local
from srnets_lib.data.synthetic import make_task


def test_fever_symmetric_v1_generated(shared_data):
    split = local.read_symmetric(shared_data / "fever_symmetric/symmetric_v0.1_fever_symmetric_generated.jsonl")
    assert len(split) == 717 and split.label_names == ["SUPPORTS", "REFUTES"]
    assert split.text_a[0].startswith("Telemundo is a English-language")  # the claim comes first


def test_fever_symmetric_v2_dev_and_test(shared_data):
    dev = local.read_symmetric(shared_data / "fever_symmetric/symmetric_v0.2_fever_symmetric_dev.jsonl")
    test = local.read_symmetric(shared_data / "fever_symmetric/symmetric_v0.2_fever_symmetric_test.jsonl")
    assert (len(dev), len(test)) == (708, 712)
    assert set(test.labels.tolist()) == {0, 1}


def test_mnli_glue_tsv(shared_data):
    train = local.read_mnli(shared_data / "mnli_sample/train.tsv")
    dev = local.read_mnli(shared_data / "mnli_sample/dev_matched.tsv")
    assert len(train) >= 1 and len(dev) >= 1
    assert train.text_a[0].startswith("Conceptually cream skimming")


def test_mnli_test_file_without_labels_is_refused(shared_data):
    with pytest.raises(local.DataFileError, match="gold_label"):
        local.read_mnli(shared_data / "mnli_sample/test_matched.tsv")


def test_hans_collapses_neutral_and_contradiction(tmp_path):
    path = tmp_path / "heuristics_evaluation_set.txt"
    path.write_text("gold_label\tsentence1\tsentence2\tpairID\theuristic\n"
                    "entailment\tThe doctor saw the lawyer .\tThe doctor saw .\tex0\tsubsequence\n"
                    "non-entailment\tThe doctor near the lawyer slept .\tThe lawyer slept .\tex1\tsubsequence\n")
    split = local.read_hans(path)
    assert split.labels.tolist() == [0, 1] and split.collapse == [0, 1, 1]


def test_qqp_and_paws_formats(tmp_path):
    qqp = tmp_path / "dev.tsv"
    qqp.write_text("id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate\n1\t1\t2\tHow?\tHow so?\t1\n")
    paws = tmp_path / "test.tsv"
    paws.write_text("id\tsentence1\tsentence2\tlabel\n1\tA b .\tB a .\t0\n")
    assert local.read_qqp(qqp).labels.tolist() == [1]
    assert local.read_paws(paws).labels.tolist() == [0]


def test_missing_column_names_file_and_line(tmp_path):
    path = tmp_path / "train.tsv"
    path.write_text("index\tsentence1\tgold_label\n0\ta\tentailment\n")
    with pytest.raises(local.DataFileError, match=r"train.tsv, line 1: missing column\(s\) \['sentence2'\]"):
        local.read_mnli(path)


def test_unknown_label_names_file_line_and_accepted_labels(tmp_path):
    path = tmp_path / "sym.jsonl"
    path.write_text('{"claim": "a", "evidence": "b", "gold_label": "SUPPORTS"}\n'
                    '{"claim": "a", "evidence": "b", "gold_label": "MAYBE"}\n')
    with pytest.raises(local.DataFileError, match=r"sym.jsonl, line 2: label 'MAYBE' is not one of"):
        local.read_symmetric(path)


def test_empty_file(tmp_path):
    path = tmp_path / "empty.jsonl"
    path.write_text("")
    with pytest.raises(local.DataFileError, match="empty file"):
        local.read_symmetric(path)


def test_synthetic_is_deterministic_and_sized():
    a = make_task("nli", 100, 50, 40, seed=3)
    b = make_task("nli", 100, 50, 40, seed=3)
    assert a.train.text_a == b.train.text_a and (len(a.train), len(a.dev)) == (100, 50)
    assert len(a.ood["hans-like"]) == 40 and a.ood["hans-like"].collapse == [0, 1, 1]


def test_synthetic_ood_training_mixture_adds_ood_examples():
    plain = make_task("paraphrase", 200, 50, 50)
    mixed = make_task("paraphrase", 200, 50, 50, ood_train=True)
    assert len(mixed.train) == 250 and mixed.train.text_a[:200] == plain.train.text_a
