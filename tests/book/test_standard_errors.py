"""How precise a reported number is (standard_errors.py): the standard error of a score from its
per-example predictions, and the optimism of reporting the score checkpoints were selected on."""

import json
from pathlib import Path

import numpy as np
import pytest

from srnets_lib.settings import params
from srnets_lib.book import standard_errors, sections
from srnets_lib.book import runs as book_runs


def test_an_accuracy_on_a_random_sample_has_the_binomial_standard_error():
    """sqrt(p (1 - p) / n): half right out of four examples, 0.25."""
    assert standard_errors.standard_error("accuracy", np.array([1, 1, 0, 0]), np.array([1, 1, 1, 1])) == pytest.approx(0.25)


def test_on_a_stratified_sample_only_the_variance_within_the_strata_counts():
    """sqrt(sum_h (n_h / n)^2 s_h^2 / n_h): strata that are all right or all wrong add nothing;
    one stratum of two with one right (s^2 = 0.5) of four examples gives sqrt(1/4 * 0.5 / 2)."""
    labels = np.ones(4, dtype=int)
    assert standard_errors.standard_error("accuracy", np.array([1, 1, 0, 0]), labels, np.array(["a", "a", "b", "b"])) == 0
    assert standard_errors.standard_error("accuracy", np.array([1, 0, 1, 1]), labels,
                                    np.array(["a", "a", "b", "b"])) == pytest.approx(0.25)


def test_the_bootstrap_agrees_with_the_exact_standard_error_of_an_accuracy():
    rng = np.random.default_rng(1)
    labels = rng.integers(2, size=300)
    predicted = np.where(rng.random(300) < 0.85, labels, 1 - labels)
    strata = labels * 2 + rng.integers(2, size=300)
    for groups, exact in [([np.arange(300)], standard_errors.standard_error("accuracy", predicted, labels)),
                          ([np.flatnonzero(strata == s) for s in range(4)],
                           standard_errors.standard_error("accuracy", predicted, labels, strata))]:
        assert standard_errors.bootstrap_error("accuracy", predicted, labels, groups) == pytest.approx(exact, rel=0.15)
    assert standard_errors.standard_error("f1", labels, labels) == 0  # every resample scores 1


def test_each_reported_score_of_a_run_and_its_selection_gap_come_from_the_store(store, tiny_params):
    p = params.load(tiny_params)
    full = [pt for pt in sections.points("sec4_2", p) if pt.reference and pt.task == "nli"]
    assert all(o.ok for o in book_runs.compute(full, p))
    errors = standard_errors.errors(full + full)  # a run shown twice is counted once
    assert sorted(errors.kind) == ["ID test", "ID test", "OOD", "OOD"]  # dev, which selected, is not reported
    gaps = standard_errors.selection_gaps(full)
    for pt in full:
        final = json.loads((Path(store) / pt.config.key() / "final.json").read_text())
        rows = errors[errors.key == pt.config.key()].set_index("kind")
        assert rows.loc["ID test", "score"] == pytest.approx(final["id"])
        assert rows.loc["OOD", "score"] == pytest.approx(next(iter(final["ood"].values())))
        assert rows.loc["ID test", "se"] == pytest.approx(np.sqrt(final["id"] * (1 - final["id"]) / 32))
        assert gaps[pt.config.key()] == pytest.approx(100 * (final["dev"] - final["id"]))
