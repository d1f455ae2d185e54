"""TAMT's GLUE tasks (section 4.1) from GLUE's tsv files and from the hub's parquet schema (offline,
tests/transfer_fixture.py): texts, labels, STS-B's float scores, MNLI's two dev sets, and errors
that say where."""

import numpy as np
import pytest

from srnets_lib.data import glue, hub
from srnets_lib.data.tasks import spec
from srnets_lib.data.local import DataFileError
from srnets_lib.data.splits import Split
from srnets_lib.data.tasks import TRANSFER_TASKS
from srnets_lib.metrics import METRICS
from transfer_fixture import GLUE_ROWS, glue_hub, write_glue

GLUE_TASKS = ["cola", "sst2", "rte", "mrpc", "stsb", "mnli"]


@pytest.fixture
def fake_hub(monkeypatch):
    fixture, calls = glue_hub(), []

    def load(hub_id, config):
        calls.append((hub_id, config))
        return fixture[(hub_id, config)]

    monkeypatch.setattr(hub, "_load_dataset", load)
    return calls


def expected(task, split):
    rows = GLUE_ROWS[task][split]
    return [a for a, _, _ in rows], [b or "" for _, b, _ in rows], [y for _, _, y in rows]


@pytest.mark.parametrize("source", ["local", "hub"])
@pytest.mark.parametrize("task", GLUE_TASKS)
def test_every_task_reads_its_texts_and_labels(tmp_path, fake_hub, task, source):
    data = glue.load_glue(task, source, write_glue(tmp_path))
    assert sorted(data.eval_splits) == (["dev", "dev_mismatched"] if task == "mnli" else ["dev"])
    for name, split in [("train", data.train), *data.eval_splits.items()]:
        text_a, text_b, labels = expected(task, name)
        assert (split.text_a, split.text_b) == (text_a, text_b)  # single-sentence tasks: text_b ""
        assert split.labels.tolist() == pytest.approx(labels)  # the hub's STS-B scores are float32
        assert split.label_names == list(spec(task).labels)
    assert data.metric == spec(task).metric and data.label_names == list(spec(task).labels)
    assert fake_hub == ([("nyu-mll/glue", task)] if source == "hub" else [])


def test_stsb_scores_stay_floats_through_head_and_concat(tmp_path):
    data = glue.load_glue("stsb", "local", write_glue(tmp_path), train_size=2)
    assert data.train.labels.dtype == np.float64 and data.train.labels.tolist() == [5.0, 3.8]
    joined = data.train.concat(data.dev, "both").subset(np.array([2, 1]))
    assert joined.labels.dtype == np.float64 and joined.labels.tolist() == [4.2, 3.8]
    assert Split("s", ["a"], ["b"], [1], ["x", "y"]).labels.dtype == np.int64  # classes unchanged


def test_hub_drops_unlabelled_rows(fake_hub):
    data = glue.load_glue("cola", "hub")
    assert len(data.train) == 3 and -1 not in data.train.labels.tolist()


def test_mrpc_header_byte_order_mark_is_read(tmp_path):
    path = write_glue(tmp_path) / "glue" / "MRPC" / "train.tsv"
    assert path.read_text(encoding="utf-8").startswith("\ufeffQuality")
    assert glue.read_glue_tsv(path, "mrpc", "train").labels.tolist() == [1, 0]


def test_missing_file_names_dataset_path_and_source(tmp_path):
    (write_glue(tmp_path) / "glue" / "MNLI" / "dev_mismatched.tsv").unlink()
    missing = tmp_path / "glue" / "MNLI" / "dev_mismatched.tsv"
    with pytest.raises(DataFileError, match=rf"^MNLI: {missing} not found; get it from GLUE"):
        glue.load_glue("mnli", "local", tmp_path)


@pytest.mark.parametrize("task, text, message", [
    ("rte", "index\tsentence1\tsentence2\tlabel\n0\tA.\tB.\tentailment\n1\tC.\tD.\tneutral\n",
     r"train.tsv, line 3: label 'neutral' is not one of \['entailment', 'not_entailment'\]"),
    ("stsb", "\t".join(["index", "sentence1", "sentence2", "score"]) + "\n0\tA.\tB.\thigh\n",
     r"train.tsv, line 2: score 'high' is not a number"),
    ("cola", "gj04\t1\t\tGood.\ngj04\t0\n", r"train.tsv, line 2: 2 fields, expected 4"),
    ("sst2", "text\tlabel\nGood.\t1\n", r"train.tsv, line 1: missing column 'sentence'"),
])
def test_malformed_rows_name_file_and_line(tmp_path, task, text, message):
    path = tmp_path / "train.tsv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(DataFileError, match=message):
        glue.read_glue_tsv(path, task, "train")


def test_unknown_task_or_source():
    with pytest.raises(ValueError, match="not a GLUE task: 'squad'"):
        glue.load_glue("squad", "local")
    with pytest.raises(ValueError, match="unknown GLUE source 'synthetic'"):
        glue.load_glue("cola", "synthetic")


def test_registry_has_tamt_tasks_with_published_sizes_and_known_metrics():
    sizes = {name: (t.train_rows, t.dev_rows, t.ood_rows) for name, t in TRANSFER_TASKS.items()}
    assert sizes == {"cola": (8_551, 1_043, 0), "sst2": (67_349, 872, 0), "rte": (2_490, 277, 0),
                     "mrpc": (3_668, 408, 0), "stsb": (5_749, 1_500, 0), "mnli": (392_702, 9_815, 9_832),
                     "squad": (87_599, 10_570, 0)}
    assert {name: t.kind for name, t in TRANSFER_TASKS.items() if t.kind != "classify"} == {
        "stsb": "regress", "squad": "span"}
    for task in TRANSFER_TASKS.values():
        assert spec(task.name) is task and task.ood_train == "" and task.ood_train_rows == 0
        assert {task.metric, task.ood_metric, *task.metrics} <= set(METRICS)
        assert task.metric in (task.metrics or (task.metric,))
    assert spec("nli").kind == "classify" and spec("nli").metrics == ()  # the paper's tasks unchanged


@pytest.mark.parametrize("task", ["cola", "mrpc", "stsb", "mnli"])
def test_a_subnetwork_transfers_to_each_glue_task_from_its_files(store, tmp_path, task):
    """TAMT's transfer (section 4.1) on GLUE's own files: a one-shot mask found on the corpus, the
    subnetwork fine-tuned with a fresh head (STS-B: one output and the squared error) and scored on
    the task's metrics (CoLA Matthews; MRPC accuracy, F1, their mean and the larger of accuracy and that
    mean; STS-B Pearson and Spearman; MNLI matched and mismatched accuracy)."""
    from transfer_fixture import write_glue

    from srnets_lib.settings.config import DataConfig, RunConfig
    from srnets_lib.sweeps.executors import execute

    write_glue(tmp_path)
    omp = RunConfig(task="corpus", method="omp", loss="mlm", sparsity=0.5, backbone="tiny", max_length=32,
                    data=DataConfig(train_size=4, dev_size=2, ood_size=2))
    transfer = RunConfig(task=task, backbone="tiny", max_length=32, batch_size=2, epochs=1, eval_interval=1,
                         mask_from=omp, data=DataConfig(source="local", path=str(tmp_path), check_sizes=False))
    result = execute(transfer)
    expected = {"cola": (), "mrpc": ("dev_accuracy", "dev_f1", "dev_max_acc_acc_and_f1"), "stsb": ("dev_spearman",),
                "mnli": ()}[task]
    assert set(result.scores) == set(expected) and result.sparsity == pytest.approx(0.5, abs=0.02)
    assert -1.0 <= result.id <= 1.0 and all(-1.0 <= v <= 1.0 for v in result.scores.values())
    assert set(result.ood) == ({"dev_mismatched"} if task == "mnli" else set())
