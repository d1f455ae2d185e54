"""Appendix B.3.1: hand-crafted bias features, and the bias-only model on synthetic data."""

import numpy as np
import pytest

from srnets_lib.data import bias
from srnets_lib.model import backbones
from srnets_lib.data.splits import Split
from srnets_lib.data.synthetic import make_task
from srnets_lib.metrics import split_metric

ONE_HOT = {w: v for w, v in zip(["the", "cat", "sat", "dog", "on", "mat"], np.eye(6))}


def test_overlap_features_on_hand_made_pairs():
    f = bias.overlap_features("the cat sat on the mat", "the cat sat", ONE_HOT)
    assert f.tolist() == [1.0, 1.0, 1.0, 1.0, 1.0]
    f = bias.overlap_features("the cat sat on the mat", "the mat sat", ONE_HOT)
    assert f[:3].tolist() == [1.0, 0.0, 1.0]  # all words inside, not contiguous
    f = bias.overlap_features("the cat sat", "the dog sat", ONE_HOT)
    assert f[0] == 0.0 and f[2] == pytest.approx(2 / 3)
    assert f[3] == pytest.approx(2 / 3) and f[4] == 0.0  # mean and min of max cosine


def test_claim_features_max_pool():
    f = bias.claim_features("cat on mat", ONE_HOT, 6)
    assert f.tolist() == [0, 1, 0, 0, 1, 1]


@pytest.mark.parametrize("task", ["nli", "paraphrase", "factcheck"])
def test_bias_only_model_is_good_in_distribution_and_near_chance_ood(task, store):
    data = make_task(task, 1200, 400, 400, bias_strength=0.9)
    tokenizer = backbones.load_tokenizer("packaged")
    model = backbones.load_model("packaged", len(data.label_names), num_layers=1)
    predictions = bias.bias_predictions(task, data, tokenizer, backbones.input_embeddings(model), "packaged")
    dev = split_metric(data.metric, data.dev, predictions.probs["dev"].argmax(1))
    (name, ood), = data.ood.items()
    ood_score = split_metric(data.metric_of(name), ood, predictions.probs[name].argmax(1))
    assert dev > 0.6, dev
    assert ood_score < 0.62, ood_score
    assert dev - ood_score > 0.1


def test_authors_mnli_predictions_are_reordered_to_our_labels_by_example_id(tmp_path):
    # their MNLI columns are [contradiction, entailment, neutral], one row per index-column value
    (tmp_path / "MNLI").mkdir()
    np.save(tmp_path / "MNLI" / "log_probs.npy", np.log([[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.2, 0.2, 0.6]]))
    train = Split("train", ["a", "b"], ["c", "d"], [0, 2], ["entailment", "neutral", "contradiction"], ids=[2, 0])
    probs, kept = bias.authors_predictions("nli", train, tmp_path)
    assert kept.tolist() == [0, 1]
    np.testing.assert_allclose(probs, [[0.2, 0.6, 0.2], [0.2, 0.1, 0.7]])  # [entailment, neutral, contradiction]


def test_authors_qqp_predictions_drop_rows_without_an_entry(tmp_path):
    import pickle

    (tmp_path / "QQP").mkdir()
    with (tmp_path / "QQP" / "log_probs.pkl").open("wb") as handle:
        pickle.dump({"101": np.log([0.9, 0.1]), 103: np.log([0.3, 0.7])}, handle)
    train = Split("train", ["a", "b", "c"], ["d", "e", "f"], [0, 1, 1], ["not_duplicate", "duplicate"],
                  ids=[101, 102, 103])
    probs, kept = bias.authors_predictions("paraphrase", train, tmp_path)
    assert kept.tolist() == [0, 2]  # pair 102 has no prediction: dropped, as the authors' loader does
    np.testing.assert_allclose(probs, [[0.9, 0.1], [0.3, 0.7]])


def test_authors_predictions_missing_or_unkeyed_say_what_to_do(tmp_path):
    from srnets_lib.data.local import DataFileError

    train = Split("train", ["a"], ["b"], [0], ["SUPPORTS", "REFUTES", "NOT ENOUGH INFO"], ids=[0])
    with pytest.raises(DataFileError, match=r"fever/log_probs.npy not found.*bias_model=ours"):
        bias.authors_predictions("factcheck", train, tmp_path)
    (tmp_path / "fever").mkdir()
    np.save(tmp_path / "fever" / "log_probs.npy", np.log([[0.5, 0.25, 0.25]]))
    unkeyed = Split("train", ["a"], ["b"], [0], train.label_names)
    with pytest.raises(DataFileError, match="data.source=local"):
        bias.authors_predictions("factcheck", unkeyed, tmp_path)


def test_authors_predictions_are_found_where_their_repository_keeps_them(tmp_path, monkeypatch):
    """bias_path unset: data/bias_model_preds, else bias_model_preds/ beside data/ (their layout)."""
    from srnets_lib import paths
    from srnets_lib.data.local import DataFileError

    monkeypatch.setattr(paths, "PROJECT_ROOT", tmp_path)
    monkeypatch.chdir(tmp_path)
    train = Split("train", ["a"], ["b"], [0], ["SUPPORTS", "REFUTES", "NOT ENOUGH INFO"], ids=[0])
    with pytest.raises(DataFileError, match=r"data/bias_model_preds/fever/log_probs.npy not found \(nor "
                                            r".*/bias_model_preds/fever/log_probs.npy\)"):
        bias.authors_predictions("factcheck", train, None)
    (tmp_path / "bias_model_preds" / "fever").mkdir(parents=True)
    np.save(tmp_path / "bias_model_preds" / "fever" / "log_probs.npy", np.log([[0.5, 0.25, 0.25]]))
    probs, kept = bias.authors_predictions("factcheck", train, None)
    np.testing.assert_allclose(probs, [[0.5, 0.25, 0.25]])


def test_a_pickle_that_would_run_code_is_refused_naming_the_file(tmp_path):
    """The authors' QQP predictions are a pickle from someone's data folder: only numbers load."""
    import os
    import pickle

    from srnets_lib.data.local import DataFileError

    class Payload:
        def __reduce__(self):
            return os.system, (f"touch {tmp_path / 'ran'}",)

    (tmp_path / "QQP").mkdir()
    path = tmp_path / "QQP" / "log_probs.pkl"
    path.write_bytes(pickle.dumps({101: Payload()}))
    train = Split("train", ["a"], ["d"], [0], ["not_duplicate", "duplicate"], ids=[101])
    with pytest.raises(DataFileError, match=rf"{path}: not readable .*refers to (posix|os)\.system"):
        bias.authors_predictions("paraphrase", train, tmp_path)
    assert not (tmp_path / "ran").exists()
    path.write_bytes(pickle.dumps([0.1, 0.9]))
    with pytest.raises(DataFileError, match="a list, expected a dict of example ids"):
        bias.authors_predictions("paraphrase", train, tmp_path)
