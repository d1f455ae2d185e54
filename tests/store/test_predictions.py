"""Each run keeps its per-example predictions at the selected checkpoint, so every breakdown of a
score (per HANS heuristic, per label, per member of a synthetic class) is post-processing: the
stored predictions give back exactly the scores final.json reports."""

import numpy as np
import pytest
import torch

from srnets_lib.settings.config import DataConfig, RunConfig
from srnets_lib.data.load import load_task
from srnets_lib.sweeps.executors import execute
from srnets_lib.metrics import split_metric
from srnets_lib.settings.request import Request
from srnets_lib.store.runs import Run
from srnets_lib.book.sections import gather
from srnets_lib.book.sections.point import Point
from srnets_lib.book import runs as book_runs

COMMON = dict(backbone="tiny", data=DataConfig(train_size=96, dev_size=48, ood_size=40), epochs=2, batch_size=16,
              eval_interval=2, max_length=48, lr=1e-3)


def test_the_reported_id_score_is_the_test_splits_and_selection_never_reads_it(store):
    """With an ID test split, checkpoints are selected on dev (appendix B.3.3) and the reported ID
    score is the selected checkpoint's on the test split, scored there only: it is not the score
    the checkpoint was selected on."""
    config = RunConfig(task="nli", **{**COMMON, "data": DataConfig(train_size=96, dev_size=48, test_size=64,
                                                                    ood_size=40)})
    result = execute(config, Request())
    data, stored, rows = load_task("nli", config.data), Run(config).predictions(), Run(config).metrics()
    assert result.id_split == "test" and set(stored) == {"dev", "test", "hans-like"}
    assert split_metric("accuracy", data.test, stored["test"]) == result.id
    assert split_metric("accuracy", data.dev, stored["dev"]) == result.dev
    best = max(rows, key=lambda r: r["dev"])  # the first of equals
    assert best["step"] == result.selected_step and best["dev"] == result.dev
    assert all("test" not in r for r in rows)  # never scored while selecting


@pytest.mark.parametrize("request_", [Request(), Request(ood_every=True)], ids=["ood-at-the-end", "ood-every"])
def test_stored_predictions_give_back_the_reported_scores(store, request_):
    config = RunConfig(task="nli", **COMMON)
    result = execute(config, request_)
    stored = Run(config).predictions()
    data = load_task("nli", config.data)
    assert set(stored) == {"dev", "hans-like"}
    assert split_metric("accuracy", data.dev, stored["dev"]) == result.id
    assert split_metric("accuracy", data.ood["hans-like"], stored["hans-like"]) == result.ood["hans-like"]


def test_subsets_break_a_score_down_by_member_and_by_label(store):
    config = RunConfig(task="nli", **COMMON)
    result = execute(config, Request())
    df = gather.subsets([Point("full bert (std)", "nli", 0, 0.0, config, reference=True)])
    ood = df[df.split == "hans-like"]
    by_label = ood[ood.subset == "label"]
    assert set(by_label.value) == {"entailment", "non-entailment"} and by_label.examples.sum() == 40
    members = ood[ood.subset == "member"]
    assert set(members.label) == {"entailment", "non-entailment"}
    # the subsets' accuracies, weighted by their sizes, are the reported score
    for rows in (by_label, members):
        assert np.average(rows.accuracy, weights=rows.examples) == pytest.approx(result.ood["hans-like"])
    assert {v.split(" ", 1)[1] for v in members.value} <= {"clearly", "certainly", "obviously", "definitely", "surely",
                                                           "allegedly", "supposedly", "perhaps", "presumably", "probably"}


def test_each_imp_level_keeps_its_mask_and_the_predictions_its_scores_were_read_from(store):
    config = RunConfig(task="nli", method="imp", sparsity=0.5, imp_delta_s=0.25, init_from=RunConfig(task="nli", **COMMON),
                       **COMMON)
    result = execute(config, Request())
    data = load_task("nli", config.data)
    assert set(result.levels) == {"0.25", "0.5"}
    for name, level in result.levels.items():
        stored = Run(config).predictions(float(name))
        assert split_metric("accuracy", data.dev, stored["dev"]) == level.id
        assert split_metric("accuracy", data.ood["hans-like"], stored["hans-like"]) == level.ood["hans-like"]
    point = Point("imp (std)", "nli", 0, 0.25, config, level=0.25)
    df = gather.subsets([point])
    assert set(df.split) == {"dev", "hans-like"} and (df.x == 0.25).all()
    # algorithm 1: each level prunes further what the previous one kept; the last level is the run's mask
    first, last = Run(config).masks(0.25), Run(config).masks(0.5)
    assert all(torch.equal(last[n], Run(config).masks()[n]) for n in last)
    for name, kept in first.items():
        assert 1 - kept.float().mean().item() == pytest.approx(0.25, abs=0.01)
        assert 1 - last[name].float().mean().item() == pytest.approx(0.5, abs=0.01)
        assert not (last[name] & ~kept).any()
    assert list(gather.masks([point], 0.25)) == [("nli", 0, "imp (std)")]


def test_an_imp_run_scores_only_the_levels_a_result_reads_and_keeps_every_levels_mask(store):
    """A page that reads IMP's level at 0.25 asks for it alone: the levels between are neither
    evaluated nor scored (their masks are kept all the same); the last level is the run's own
    result. A later request for every level is not served by that run."""
    import dataclasses

    from srnets_lib.settings import params as params_lib

    config = RunConfig(task="nli", method="imp", sparsity=0.75, imp_delta_s=0.25,
                       init_from=RunConfig(task="nli", **COMMON), **COMMON)
    point = Point("imp (std)", "nli", 0, 0.25, config, level=0.25)
    (node,) = [n for n in book_runs.graph([point], params_lib.load("params/toy.yaml")) if n.config == config]
    assert node.request.levels == (0.25,)
    result = execute(config, node.request)
    assert set(result.levels) == {"0.25", "0.75"} and result.levels_read == ["0.25", "0.75"]
    assert [r["step"] for r in Run(config).metrics()] == [level.step for level in result.levels.values()]
    for level in (0.25, 0.5, 0.75):
        assert 1 - Run(config).masks(level)["bert.encoder.layer.0.attention.self.query"].float().mean().item() \
            == pytest.approx(level, abs=0.01)
    assert Run(config).serves(node.request)
    assert Run(config).why_not(dataclasses.replace(node.request, levels=(0.5,))) == "it did not score its levels 0.5"
    assert "not every one" in Run(config).why_not(dataclasses.replace(node.request, levels=None))
