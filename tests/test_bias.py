"""Appendix B.3.1: hand-crafted bias features, and the bias-only model on synthetic data."""

import numpy as np
import pytest

from srnets_lib import bias, models
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
    tokenizer = models.load_tokenizer("packaged")
    model = models.load_model("packaged", len(data.label_names), num_layers=1)
    predictions = bias.bias_predictions(task, data, tokenizer, models.input_embeddings(model), "packaged")
    dev = split_metric(data.metric, data.dev, predictions.probs["dev"].argmax(1))
    (name, ood), = data.ood.items()
    ood_score = split_metric(data.metric_of(name), ood, predictions.probs[name].argmax(1))
    assert dev > 0.6, dev
    assert ood_score < 0.62, ood_score
    assert dev - ood_score > 0.1
