"""How sure a verdict is (verdicts/noise.py, verdicts/verdict.py): a margin's standard error from the
stored predictions (paired where models share examples) and from the seeds, and the one outcome
each verdict and each claim reads: within noise when |margin| <= 2 standard errors."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from srnets_lib.book import runs as book_runs, sections, standard_errors
from srnets_lib.book.page import gathered
from srnets_lib.book.verdicts import noise
from srnets_lib.book.sections.srnet_claims import SubnetworkVsFull
from srnets_lib.book.verdicts.verdict import NOISE, Statement, outcome
from srnets_lib.settings import params

RULE = Statement("test-noise-rule", "'a test claim'", "X > GAIN", {"GAIN": 0.01})


def score(value, correct, strata=None, where=("nli", "test", "f")):
    """A Score whose influence on one evaluation set is `correct` (an accuracy's)."""
    return noise.Score(value, {where: (np.asarray(correct, dtype=float), strata)})


def test_an_accuracys_standard_error_is_standard_errors_own():
    rng = np.random.default_rng(0)
    labels = rng.integers(2, size=300)
    predicted = np.where(rng.random(300) < 0.8, labels, 1 - labels)
    strata = np.asarray([f"{label}|{k}" for label, k in zip(labels, rng.integers(5, size=300))])
    terms = noise.influence("accuracy", predicted, labels)
    for chosen in (None, strata):
        exact = standard_errors.standard_error("accuracy", predicted, labels, chosen)
        # a random sample's variance with n - 1 (the sample variance of the influences), binomial's with n
        assert noise.Score(terms.mean(), {"set": (terms, chosen)}).se == pytest.approx(exact, rel=2e-3)


@pytest.mark.parametrize("metric", ["f1", "weighted_f1"])
def test_an_f1s_standard_error_by_its_influence_agrees_with_the_bootstrap(metric):
    rng = np.random.default_rng(2)
    labels = rng.integers(2, size=400)
    predicted = np.where(rng.random(400) < 0.8, labels, 1 - labels)
    terms = noise.influence(metric, predicted, labels)
    assert abs(terms.mean()) < 1e-9  # a ratio's influence is centred
    boot = standard_errors.bootstrap_error(metric, predicted, labels, [np.arange(400)])
    assert noise.Score(0.8, {"set": (terms, None)}).se == pytest.approx(boot, rel=0.2)


def test_models_scored_on_the_same_examples_are_paired_and_other_sets_add():
    right = np.array([1, 1, 1, 0] * 50)
    same = score(0.75, right) - score(0.75, right)
    assert same.se == 0 and float(same) == 0  # the same predictions: no noise in their difference
    other = score(0.75, right) - score(0.75, right, where=("nli", "test", "another set"))
    assert other.se == pytest.approx(np.sqrt(2) * score(0.75, right).se)  # independent sets add variances
    assert (score(0.75, right) * 0.95).se == pytest.approx(0.95 * score(0.75, right).se)
    scaled = 0.95 * score(0.75, right) - 0.01
    assert isinstance(scaled, noise.Score) and float(scaled) == pytest.approx(0.7025)
    smallest = min(score(0.2, right), score(0.5, right))
    assert isinstance(smallest, noise.Score)  # min keeps the deciding score, and with it its terms
    assert noise.Score(0.5, known=False).se is None and (score(0.5, right) - noise.Score(0.4, known=False)).se is None


def test_a_mean_over_seeds_on_one_set_averages_the_influences():
    a, b = np.array([1, 0] * 100), np.array([0, 1] * 100)  # each 50%, never right together
    mean = noise.mean([score(0.5, a), score(0.5, b)])
    assert float(mean) == pytest.approx(0.5) and mean.se == 0  # every example 0.5: no spread


def verdict(margin, sampling=None, seed_margins=()):
    holds = margin > 0  # the threshold cleared (the verdict itself asks for the 1-point margin)
    return RULE.judged("nli", "a case", holds, margin, sampling=sampling, seed_margins=tuple(seed_margins))


def test_the_outcome_of_a_case():
    """Within noise when |margin| <= NOISE standard errors, whatever its sign; else confirmed when it
    clears the 1-point margin, else not confirmed; unknown noise never reads as within noise."""
    assert NOISE == 2
    assert verdict(0.03, sampling=0.01).outcome == "confirmed"
    assert verdict(0.02, sampling=0.01).outcome == "within noise"  # exactly 2 standard errors
    assert verdict(-0.015, sampling=0.01).outcome == "within noise"
    assert verdict(-0.05, sampling=0.01).outcome == "not confirmed"
    assert verdict(0.015).outcome == "confirmed" and verdict(0.015).noise is None
    thin = verdict(0.005, sampling=0.001)
    assert thin.thin and thin.outcome == "not confirmed"
    assert RULE.unmeasurable("nli", "a case").outcome == "not measurable"


def test_the_seeds_spread_is_a_sample_standard_deviation_combined_with_the_predictions():
    """The issue's case: a mean margin of +1.5 points whose seeds alone give -3.3 and +0.5."""
    v = verdict(0.015, seed_margins=(-0.033, 0.005))
    assert v.seed_noise == pytest.approx(np.std([-0.033, 0.005], ddof=1) / np.sqrt(2))
    assert v.outcome == "within noise" and v.seeds_clearing == 0
    both = verdict(0.015, sampling=0.004, seed_margins=(-0.033, 0.005))
    assert both.noise == pytest.approx(np.hypot(0.004, v.seed_noise))


def test_a_claims_outcome_over_its_cases():
    ok, noisy, bad = verdict(0.05, 0.01), verdict(0.01, 0.01), verdict(-0.1, 0.01)
    missing = RULE.unmeasurable("nli", "another case")
    assert outcome([ok, ok]) == "confirmed"
    assert outcome([ok, noisy]) == outcome([ok, bad]) == outcome([ok, missing]) == "partly confirmed"
    assert outcome([noisy, bad]) == "not confirmed"
    assert outcome([noisy, noisy, missing]) == "within noise"
    assert outcome([missing]) == "not measurable"


def test_a_verdict_reads_its_standard_error_from_the_frames_predictions():
    """A claim's margin is built from noise.Scores where the frame carries its predictions
    (gather.frame's attrs): SubnetworkVsFull's margin then has a sampling standard error."""
    class Stored:
        def __deepcopy__(self, memo):
            return self

        def score(self, row, column):
            rng = np.random.default_rng(abs(hash((row["series"], column))) % 1000)
            return noise.Score(float(row[column]), {(column,): ((rng.random(300) < row[column]).astype(float), None)})

    df = pd.DataFrame([{"task": "nli", "series": name, "seed": 1, "x": x, "id": i, "ood:hans": o, "key": name,
                        "level": None, "reference": name.startswith("full"), "group": ""}
                       for name, x, i, o in (("full bert (std)", 0, 0.9, 0.5), ("m", 0.5, 0.88, 0.6))])
    df.attrs["predictions"] = Stored()
    v, = SubnetworkVsFull("m", xs=(0.5,)).evaluate(df[df.task == "nli"])
    assert v.sampling is not None and 0.01 < v.sampling < 0.1 and isinstance(v.margin, float)


def test_a_pages_verdicts_carry_the_standard_error_of_the_stored_predictions(store, tiny_params):
    p = params.load(tiny_params)
    full = [pt for pt in sections.points("sec4_2", p) if pt.reference and pt.task == "nli"]
    assert all(o.ok for o in book_runs.compute(full, p))
    page = gathered("sec4_2", p)
    bias = next(v for v in page.evaluate() if v.claim == "bias-exploited" and v.task == "nli")
    std = next(pt for pt in full if pt.series == "full bert (std)")
    final = json.loads((Path(store) / std.config.key() / "final.json").read_text())
    assert bias.margin == pytest.approx(final["id"] - next(iter(final["ood"].values())) - 0.05)
    assert bias.sampling is not None and bias.sampling > 0  # ID test and OOD: two sets, their variances add
    assert bias.outcome in ("within noise", "confirmed", "not confirmed")
