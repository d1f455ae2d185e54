"""The real-data loaders on small fixtures in the original formats (GLUE tsv, HANS txt, FEVER jsonl), and
the hub path on locally built `datasets` objects with the hub's schema (no network)."""

import numpy as np
import pytest

from srnets_lib import paths
from srnets_lib.settings.config import DataConfig
from srnets_lib.settings.config import RunConfig
from srnets_lib.data import hub, inputs, local
from srnets_lib.data.load import load_task

from loader_files import HANS_HEADER, QQP_HEADER, write, write_factcheck_files, write_hans, write_paraphrase_files

# --- original files -------------------------------------------------------------------------

def test_qqp_short_rows_are_skipped_and_counted(tmp_path):
    write_paraphrase_files(tmp_path, paws_qqp=False)
    split = local.read_qqp(tmp_path / "paraphrase" / "train.tsv", "train")
    assert split.text_a == ["How do I learn Python?", "Who wrote Hamlet?"]
    assert split.labels.tolist() == [1, 1]
    assert split.notes == ["skipped 2 short rows in train.tsv (lines 3, 4)"]
    data = local.load_local("paraphrase", tmp_path)
    assert "skipped 2 short rows in train.tsv" in data.description
    assert "dev.tsv" not in data.description  # the dev file has none


def test_qqp_missing_column_and_bad_label_still_raise(tmp_path):
    no_label = write(tmp_path / "a.tsv", "id\tqid1\tqid2\tquestion1\tquestion2\n0\t1\t2\tA?\tB?\n")
    with pytest.raises(local.DataFileError, match=r"a.tsv, line 1: missing column\(s\) \['is_duplicate'\]"):
        local.read_qqp(no_label)
    bad = write(tmp_path / "b.tsv", QQP_HEADER + "0\t1\t2\tA?\tB?\t1\n1\t3\t4\tC?\tD?\tyes\n")
    with pytest.raises(local.DataFileError, match=r"b.tsv, line 3: label 'yes' is not one of \['0', '1'\]"):
        local.read_qqp(bad)


def test_other_tsv_short_rows_still_raise(tmp_path):
    path = write(tmp_path / "heuristics_evaluation_set.txt", HANS_HEADER + "entailment\tonly two\n")
    with pytest.raises(local.DataFileError, match=r"line 2: 2 fields, expected 11"):
        local.read_hans(path)


def test_hans_original_file_collapses_mnli_classes(tmp_path):
    from srnets_lib.metrics import split_metric

    split = local.hans(write_hans(tmp_path).parent)
    assert split.labels.tolist() == [1, 0, 1] and split.label_names == ["entailment", "non-entailment"]
    assert split.text_a[1] == "The doctor near the actor danced ."  # sentence1, not a parse column
    data = local.task_data("nli", split, split, {"hans": split}, "test")
    # the model's neutral (1) and contradiction (2) both count as non-entailment; entailment is wrong
    assert split_metric(data.metric, split, np.array([1, 0, 2])) == 1.0
    assert split_metric(data.metric, split, np.array([0, 0, 0])) == pytest.approx(1 / 3)


def test_hans_train_for_ood_mixture_maps_non_entailment_to_contradiction(tmp_path):
    split = local.hans_train(write_hans(tmp_path, "heuristics_train_set.txt").parent)
    assert split.labels.tolist() == [2, 0, 2] and split.label_names == ["entailment", "neutral", "contradiction"]


@pytest.mark.parametrize("present", [True, False])
def test_paws_qqp_evaluated_only_when_present(tmp_path, present):
    root = write_paraphrase_files(tmp_path, paws_qqp=present)
    data = local.load_local("paraphrase", tmp_path)
    assert sorted(data.ood) == (["paws_qqp", "paws_wiki"] if present else ["paws_wiki"])
    skipped = f"PAWS-qqp skipped: {root / 'paws_qqp' / 'dev_and_test.tsv'} not found"
    assert (skipped in data.description) is not present
    if present:
        assert data.ood["paws_qqp"].labels.tolist() == [1]
        assert data.ood["paws_qqp"].label_names == ["not_duplicate", "duplicate"]


def test_fever_and_symmetric_jsonl(tmp_path):
    write_factcheck_files(tmp_path)
    data = local.load_local("factcheck", tmp_path, ood_train=True)
    assert data.train.labels.tolist()[:3] == [0, 1, 2] and data.metric == "accuracy"
    # pairs are (claim, evidence): the authors' FeverProcessor order
    assert (data.dev.text_a[0], data.dev.text_b[0]) == ("Rome is in Italy.", "Rome is the capital of Italy.")
    v1, v2 = data.ood["symmetric_v1"], data.ood["symmetric_v2"]
    assert (v1.text_a[0], v1.text_b[0]) == ("Oslo is not in Norway.", "Oslo is in Norway.")  # v0.1 field names
    assert data.train.ids is None  # the OOD copies have no FEVER row number
    assert local.load_local("factcheck", tmp_path).train.ids.tolist() == [0, 1, 2]  # row numbers
    assert v1.labels.tolist() == [1] and v2.labels.tolist() == [0] and v1.collapse == [0, 1, -1]
    assert len(data.train) == 3 + 10  # section 4.5: Symmetric v2 dev copied 10 times


def test_missing_file_names_dataset_path_and_source(tmp_path):
    write_paraphrase_files(tmp_path, paws_qqp=False)
    (tmp_path / "paraphrase" / "dev.tsv").unlink()
    expected = tmp_path / "paraphrase" / "dev.tsv"
    with pytest.raises(local.DataFileError, match=rf"^QQP: {expected} not found \(nor {tmp_path / 'QQP' / 'dev.tsv'}\); "
                                                  "get it from GLUE"):
        local.load_local("paraphrase", tmp_path)


# ours -> (the datasets' own layout, the authors' data/ folder of github.com/llyx97/sparse-and-robust-PLM)
RENAMED = {
    "nli/heuristics_evaluation_set.txt": ("hans/heuristics_evaluation_set.txt", "MNLI/hans/heuristics_evaluation_set.txt"),
    "paraphrase/train.tsv": ("QQP/train.tsv", "QQP/train.tsv"),
    "paraphrase/dev.tsv": ("QQP/dev.tsv", "QQP/dev.tsv"),
    "paraphrase/paws_wiki/test.tsv": ("final/test.tsv", "QQP/paws_wiki/test.tsv"),
    "paraphrase/paws_qqp/dev_and_test.tsv": ("paws_qqp/output/dev_and_test.tsv", None),
    "factcheck/fever.train.jsonl": ("fever.train.jsonl", "fever/fever.train.jsonl"),
    "factcheck/fever.dev.jsonl": ("fever.dev.json", "fever/fever.dev.jsonl"),
    "factcheck/symmetric_v0.1_fever_symmetric_generated.jsonl": (
        "symmetric_v0.1/fever_symmetric_generated.jsonl", "fever/sym1/test.jsonl"),
    "factcheck/symmetric_v0.2_fever_symmetric_test.jsonl": (
        "symmetric_v0.2/fever_symmetric_test.jsonl", "fever/sym2/test.jsonl"),
    "factcheck/symmetric_v0.2_fever_symmetric_dev.jsonl": (
        "symmetric_v0.2/fever_symmetric_dev.jsonl", "fever/sym2/dev.jsonl"),
}


@pytest.mark.parametrize("layout", [0, 1], ids=["distributed names", "authors' folder"])
def test_files_under_their_distributed_or_the_authors_names_load_the_same(tmp_path, layout):
    """A user who unpacks the datasets as they come, or copies the authors' data/ folder, reads
    the same splits as with this project's layout (PAWS-qqp's dev_and_test.tsv has no authors'
    name: they split it)."""
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    for folder in (ours, theirs):
        write_hans(folder)
        write_paraphrase_files(folder, paws_qqp=True)
        write_factcheck_files(folder)
    for name, aliases in RENAMED.items():
        if aliases[layout] is not None:
            target = theirs / aliases[layout]
            target.parent.mkdir(parents=True, exist_ok=True)
            (theirs / name).rename(target)
    for task in ("paraphrase", "factcheck"):
        a, b = local.load_local(task, ours, ood_train=task == "factcheck"), local.load_local(task, theirs, ood_train=task == "factcheck")
        for x, y in [(a.train, b.train), (a.dev, b.dev)] + [(a.ood[k], b.ood[k]) for k in a.ood]:
            assert (x.text_a, x.text_b, x.labels.tolist()) == (y.text_a, y.text_b, y.labels.tolist())
        assert sorted(a.ood) == sorted(b.ood)
    assert local.hans(theirs / "nli").text_a == local.hans(ours / "nli").text_a


def test_relative_data_path_resolves_against_project_root(tmp_path, monkeypatch):
    project, elsewhere = tmp_path / "project", tmp_path / "book"
    (project / "mydata").mkdir(parents=True)
    elsewhere.mkdir()
    monkeypatch.setattr(paths, "PROJECT_ROOT", project)
    monkeypatch.chdir(elsewhere)  # as a notebook executed in book/ or a Ray worker
    assert local.data_folder("mydata") == project / "mydata"
    assert local.data_folder("absent") == project / "absent"  # where a missing folder is expected
    assert local.data_folder(None) == project / "data"
    assert local.data_folder(str(tmp_path)) == tmp_path


# --- the hub path, offline: DatasetDicts with the hub's schema -------------------------------

def hub_fixture():
    from datasets import ClassLabel, Dataset, DatasetDict, Features, Value

    def ds(columns, names, **data):
        features = Features({**{c: Value(t) for c, t in columns.items()}, "label": ClassLabel(names=names)})
        return Dataset.from_dict(data, features=features)

    nli = {"premise": "string", "hypothesis": "string", "idx": "int32"}
    pair = {"question1": "string", "question2": "string", "idx": "int32"}
    paws = {"id": "int32", "sentence1": "string", "sentence2": "string"}
    mnli_names = ["entailment", "neutral", "contradiction"]
    return {
        ("nyu-mll/glue", "mnli"): DatasetDict(
            train=ds(nli, mnli_names, premise=["P0", "P1", "P2"], hypothesis=["H0", "H1", "H2"],
                     label=[2, 0, 1], idx=[0, 1, 2]),
            validation_matched=ds(nli, mnli_names, premise=["D0"], hypothesis=["E0"], label=[1], idx=[0]),
            test_matched=ds(nli, mnli_names, premise=["T0"], hypothesis=["U0"], label=[-1], idx=[0])),
        ("nyu-mll/glue", "qqp"): DatasetDict(
            train=ds(pair, ["not_duplicate", "duplicate"], question1=["Q0", "Q1"], question2=["R0", "R1"],
                     label=[1, 0], idx=[0, 1]),
            validation=ds(pair, ["not_duplicate", "duplicate"], question1=["V0"], question2=["W0"],
                          label=[0], idx=[0]),
            test=ds(pair, ["not_duplicate", "duplicate"], question1=["X"], question2=["Y"], label=[-1], idx=[0])),
        ("google-research-datasets/paws", "labeled_final"): DatasetDict(
            train=ds(paws, ["0", "1"], id=[1, 2], sentence1=["A", "B"], sentence2=["a", "b"], label=[0, 1]),
            validation=ds(paws, ["0", "1"], id=[3], sentence1=["C"], sentence2=["c"], label=[1]),
            test=ds(paws, ["0", "1"], id=[4], sentence1=["S1"], sentence2=["S2"], label=[1])),
    }


@pytest.fixture
def fake_hub(monkeypatch):
    fixture, calls = hub_fixture(), []

    def load(hub_id, config):
        calls.append((hub_id, config))
        return fixture[(hub_id, config)]  # KeyError: an id the hub does not serve as parquet

    monkeypatch.setattr(hub, "_load_dataset", load)
    return calls


def test_hub_nli_mnli_from_hub_hans_from_files(tmp_path, fake_hub):
    write_hans(tmp_path)
    data = load_task("nli", DataConfig(source="hub", path=str(tmp_path), check_sizes=False))
    assert fake_hub == [("nyu-mll/glue", "mnli")]
    assert (data.train.text_a, data.train.text_b) == (["P0", "P1", "P2"], ["H0", "H1", "H2"])
    assert data.train.labels.tolist() == [2, 0, 1] and data.dev.labels.tolist() == [1]
    assert data.ood["hans"].labels.tolist() == [1, 0, 1] and data.ood["hans"].collapse == [0, 1, 1]
    assert str(tmp_path / "nli") in data.description


def test_example_ids_are_the_source_files_keys(tmp_path, fake_hub, shared_data):
    # the authors' bias predictions are keyed by MNLI's index column, QQP's pair id, FEVER's row
    mnli = local.read_mnli(shared_data / "mnli_sample/train.tsv")
    assert mnli.ids.tolist()[:3] == [0, 1, 2]
    qqp = local.read_qqp(write_paraphrase_files(tmp_path, paws_qqp=False) / "train.tsv")
    assert qqp.ids.tolist() == [0, 2]  # the pair ids of the rows kept (the short rows are skipped)
    write_hans(tmp_path)
    assert load_task("nli", DataConfig(source="hub", path=str(tmp_path), check_sizes=False)).train.ids.tolist() == [0, 1, 2]
    capped = load_task("nli", DataConfig(source="hub", path=str(tmp_path), train_size=2, check_sizes=False))
    assert capped.train.ids.tolist() == [0, 1]


def test_train_size_caps_the_id_part_before_the_ood_mixture(tmp_path, fake_hub):
    write_hans(tmp_path)
    write_hans(tmp_path, "heuristics_train_set.txt")
    data = load_task("nli", DataConfig(source="hub", path=str(tmp_path), ood_train=True, train_size=2, check_sizes=False))
    assert data.train.text_a[:2] == ["P0", "P1"] and len(data.train) == 4  # 2 MNLI + 2 HANS rows


def test_hub_nli_ood_train_adds_hans_train_file(tmp_path, fake_hub):
    write_hans(tmp_path)
    write_hans(tmp_path, "heuristics_train_set.txt")
    data = load_task("nli", DataConfig(source="hub", path=str(tmp_path), ood_train=True, check_sizes=False))
    assert data.train.labels.tolist() == [2, 0, 1, 2, 0, 2]


def test_hub_nli_without_hans_file_is_one_clear_line(tmp_path, fake_hub):
    expected = tmp_path / "nli" / "heuristics_evaluation_set.txt"
    with pytest.raises(local.DataFileError) as err:
        load_task("nli", DataConfig(source="hub", path=str(tmp_path), check_sizes=False))
    message = str(err.value)
    assert "\n" not in message and message.startswith(f"HANS: {expected} not found")
    assert "github.com/tommccoy1/hans (MIT licence)" in message


@pytest.mark.parametrize("present", [True, False])
def test_hub_paraphrase_qqp_and_paws_wiki_from_hub(tmp_path, fake_hub, present):
    if present:
        write_paraphrase_files(tmp_path, paws_qqp=True)
    data = load_task("paraphrase", DataConfig(source="hub", path=str(tmp_path), ood_train=present, check_sizes=False))
    assert sorted(set(fake_hub)) == [("google-research-datasets/paws", "labeled_final"), ("nyu-mll/glue", "qqp")]
    if present:  # section 4.5's mixture: QQP, PAWS-qqp train and PAWS-wiki train (the authors' ood/qqp)
        assert data.train.text_a == ["Q0", "Q1", "G0 ?", "A", "B"] and data.train.labels.tolist() == [1, 0, 0, 0, 1]
    else:
        assert data.train.text_a == ["Q0", "Q1"] and data.train.ids is None  # hub idx is not QQP's pair id
    assert data.dev.text_b == ["W0"] and data.metric == "f1"  # QQP dev: binary F1 of duplicate
    assert data.metric_of("paws_wiki") == "weighted_f1"
    assert data.ood["paws_wiki"].text_a == ["S1"] and data.ood["paws_wiki"].labels.tolist() == [1]
    assert ("paws_qqp" in data.ood) is present
    assert ("PAWS-qqp skipped" in data.description) is not present


def test_hub_factcheck_reads_fever_files_only(tmp_path, fake_hub):
    write_factcheck_files(tmp_path)
    data = load_task("factcheck", DataConfig(source="hub", path=str(tmp_path), dev_size=1, check_sizes=False))
    assert fake_hub == [] and sorted(data.ood) == ["symmetric_v1", "symmetric_v2"]
    assert len(data.train) == 3 and len(data.dev) == 1


def test_hub_drops_unlabelled_rows_and_checks_columns(fake_hub):
    from datasets import Dataset

    rows = Dataset.from_dict({"premise": ["a", "b"], "hypothesis": ["c", "d"], "label": [-1, 2], "idx": [0, 1]})
    split = hub._split(rows, "glue test", "t", "premise", "hypothesis", ["e", "n", "c"])
    assert split.text_a == ["b"] and split.labels.tolist() == [2]
    with pytest.raises(local.DataFileError, match=r"glue test: missing column\(s\) \['sentence2'\]"):
        hub._split(rows, "glue test", "t", "premise", "sentence2", ["e", "n", "c"])


def test_a_hub_dataset_that_cannot_be_loaded_is_one_line_saying_how_to_go_local(monkeypatch):
    import datasets

    from srnets_lib.data import hub
    from srnets_lib.data.local import DataFileError

    def offline(hub_id, config):
        raise ConnectionError(f"Couldn't reach '{hub_id}' on the Hub (LocalEntryNotFoundError)\n...40 more lines")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    with pytest.raises(DataFileError, match=r"^dataset nyu-mll/glue \(mnli\) could not be loaded from the hub "
                                            r"\(ConnectionError: Couldn't reach .*\); offline, set data.source: local") as err:
        hub._load_dataset(hub.GLUE, "mnli")
    assert "\n" not in str(err.value) and err.value.__suppress_context__


def test_files_that_are_not_utf8_are_named(tmp_path):
    """A tsv, a jsonl, a GLUE tsv, a SQuAD json, a WikiText file and a params file with Latin-1 bytes."""
    from srnets_lib.settings import params
    from srnets_lib.data import corpus, glue, squad

    def latin1(name, text):
        path = tmp_path / name
        path.write_bytes(text.encode("latin-1"))
        return path

    tsv = latin1("heuristics_evaluation_set.txt", HANS_HEADER + "entailment\t" + "\t".join(["caf\xe9"] * 10) + "\n")
    jsonl = latin1("fever.dev.jsonl", '{"claim": "caf\xe9", "evidence": "x", "gold_label": "SUPPORTS"}\n')
    cola = latin1("in_domain_dev.tsv", "src\t1\t\tThe caf\xe9 opened .\n")
    cases = [lambda: local.read_hans(tsv), lambda: local.read_fever(jsonl), lambda: glue.read_glue_tsv(cola, "cola", "dev"),
             lambda: squad.read_squad_json(latin1("dev-v1.1.json", '{"data": [{"title": "caf\xe9"}]}'))]
    (tmp_path / "wikitext-103").mkdir()
    latin1("wikitext-103/wiki.train.raw", "caf\xe9\n"), latin1("wikitext-103/wiki.valid.raw", "caf\xe9\n")
    cases.append(lambda: corpus.load_corpus(DataConfig(source="local", path=str(tmp_path), check_sizes=False)))
    for case in cases:
        with pytest.raises(local.DataFileError, match=rf"{tmp_path}/\S+: not UTF-8 text \(invalid .*\); save it as UTF-8"):
            case()
    with pytest.raises(params.ParamsError, match=rf"{tmp_path}/bad.yaml: not UTF-8 text"):
        params.load(latin1("bad.yaml", "name: caf\xe9\n"))


@pytest.mark.parametrize("ood_train", [False, True])
@pytest.mark.parametrize("task", ["paraphrase", "factcheck"])
def test_the_files_a_sweep_checks_are_the_files_the_loaders_read(tmp_path, task, ood_train):
    """local.expected_files (what a sweep checks before starting, data/inputs.py, reading no data)
    names each file the loader needs: with all of them it loads, without any one it fails naming it
    (an optional OOD set is recorded as missing instead)."""
    import shutil

    write_paraphrase_files(tmp_path, paws_qqp=True)
    write(tmp_path / "paraphrase" / "paws_wiki" / "train.tsv", "id\tsentence1\tsentence2\tlabel\n2\tA .\tB .\t1\n")
    write_factcheck_files(tmp_path)
    expected = local.expected_files(task, "local", ood_train)
    config = RunConfig(task=task, data=DataConfig(source="local", path=str(tmp_path), ood_train=ood_train, check_sizes=False))
    assert inputs.missing([config]) == []
    local.load_local(task, tmp_path, ood_train)
    for dataset, name, ood in expected:
        path = tmp_path / name
        shutil.move(path, tmp_path / "aside")
        if ood in local.OPTIONAL_OOD:
            assert ood in local.load_local(task, tmp_path, ood_train).ood_missing
            assert inputs.missing([config], skip_ood=[ood]) == []
        else:
            with pytest.raises(local.DataFileError, match=f"{dataset}: {path} not found"):
                local.load_local(task, tmp_path, ood_train)
        assert [line.split(" not found")[0] for line in inputs.missing([config])] == [f"{dataset}: {path}"]
        shutil.move(tmp_path / "aside", path)


def test_hans_keeps_each_examples_heuristic_for_breakdowns(tmp_path):
    split = local.read_hans(write_hans(tmp_path))
    assert list(split.subsets["heuristic"]) == ["lexical_overlap"] * 3
    assert list(split.subset(np.array([2, 0])).subsets["heuristic"]) == ["lexical_overlap"] * 2
    both = split.concat(split, "twice")
    assert len(both.subsets["heuristic"]) == 6


def test_a_cut_token_cache_is_rebuilt(store):
    """runs/_cache/tokens/ holds tokenised splits: one cut short (an interrupted copy) is tokenised
    again and replaced, instead of failing every run that reads it."""
    from srnets_lib.data import encode, synthetic
    from srnets_lib.model.backbones import load_tokenizer

    split = synthetic.make_task("nli", 16, 4, 4, seed=0).train
    tokenizer = load_tokenizer("packaged")
    first = encode.encode(split, tokenizer, 32, "packaged")
    (cached,) = paths.cache_dir("tokens").glob("*.npz")
    data = cached.read_bytes()
    cached.write_bytes(data[:len(data) // 2])
    again = encode.encode(split, tokenizer, 32, "packaged")
    assert np.array_equal(again.ids, first.ids) and np.array_equal(again.offsets, first.offsets)
    with np.load(cached) as stored:  # whole again
        assert np.array_equal(stored["ids"], first.ids)
