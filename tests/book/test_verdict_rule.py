"""The one statistical rule (book/verdicts/verdict.py) on constructed seeds: every seed judged on
every part of a rule, a seed failing a prerequisite failing (never set aside), the margin the mean
of the seeds' margins of the whole rule (so between them), each part judged with its own noise,
"confirmed" only beyond twice its standard error with half the seeds clearing alone, a tie at the
printed precision named, and models right on the very same examples said so."""

import re

import numpy as np
import pandas as pd
import pytest

from srnets_lib.book.verdicts import verdict_text
from srnets_lib.book.sections.srnet_claims import SRNET, SubnetworkVsFull
from srnets_lib.book.verdicts.noise import Score
from srnets_lib.book.sections.sec5_1 import EarlyStart
from srnets_lib.book.sections.sec5_2 import GradualVsFixed
from srnets_lib.book.verdicts.verdict import Verdict


def frame(rows) -> pd.DataFrame:
    """[(series, seed, x, id, ood)] as sections.gather.frame gives them."""
    return pd.DataFrame([{"task": "nli", "series": s, "seed": seed, "x": x, "id": i, "ood:hans": o,
                          "reference": s.startswith("full"), "group": ""} for s, seed, x, i, o in rows])


def text(verdicts) -> str:
    return re.sub(r"<span [^>]*>[^<]*</span> ", "", verdict_text.render(verdicts))


def test_a_seed_reversing_the_other_leaves_gradual_vs_fixed_unconfirmed():
    """Section 5.2: seed 1's gradual beats fixed by 46.7 ID points; seed 2's fixed beats gradual by
    11 ID and 7 OOD points and neither of seed 2's keeps 80% of the full model (a failed
    prerequisite: that seed fails, it is not set aside)."""
    df = frame([("full bert (std)", s, 0.0, 0.953, 0.69) for s in (1, 2)] + [
        ("gradual 0.7->0.9", 1, 5.0, 0.890, 0.950), ("fixed", 1, 5.0, 0.423, 0.500),
        ("gradual 0.7->0.9", 2, 5.0, 0.630, 0.530), ("fixed", 2, 5.0, 0.743, 0.603)])
    v, = GradualVsFixed({"nli": 5}).evaluate(df)
    first, second = v.seed_margins
    assert first == pytest.approx(0.890 - 0.8 * 0.953) and second == pytest.approx(0.630 - 0.743)
    assert min(v.seed_margins) <= v.margin <= max(v.seed_margins)
    assert v.margin == pytest.approx((first + second) / 2) and v.seeds_clearing == 1
    assert v.outcome in ("within noise", "not confirmed") and v.seed_noise > 0.1


def test_the_mean_margin_lies_between_the_seeds_and_each_part_carries_its_seeds_spread():
    """Section 4.2, IMP (PoE) at 0.5: seed 1 fails the OOD part (69.3 against the full model's 69.0
    + 1), seed 2 the ID part (89.0 against 95% of 95.3); the means over seeds pass both parts, yet
    no seed passes the rule, and their margins nearly agree while their OOD scores differ by 30 points."""
    df = frame([("full bert (std)", s, 0.0, 0.953, 0.690) for s in (1, 2)] + [
        ("imp (poe)", 1, 0.5, 0.930, 0.693), ("imp (poe)", 2, 0.5, 0.890, 0.997)])
    v, = SubnetworkVsFull("imp (poe)", xs=(0.5,)).evaluate(df)
    assert v.seed_margins == pytest.approx((0.693 - 0.700, 0.890 - 0.95 * 0.953))
    assert min(v.seed_margins) <= v.margin <= max(v.seed_margins) and v.margin < 0
    assert v.seeds_clearing == 0 and v.outcome != "confirmed"
    assert v.part_noise["OOD gained"] == pytest.approx(np.std([0.003, 0.307], ddof=1) / np.sqrt(2))
    assert "its parts ID kept" in text([v]) and "OOD gained +14.5 points ± 15.2 points" in text([v])


def test_confirmed_needs_the_margin_beyond_twice_its_error_and_half_the_seeds():
    clear = SRNET.judged("nli", "case", True, 0.05, seed_margins=(0.04, 0.05, 0.06))
    assert clear.outcome == "confirmed" and clear.margin == pytest.approx(0.05)
    spread = SRNET.judged("nli", "case", True, 0.05, seed_margins=(0.30, -0.05, -0.10))
    assert spread.outcome == "within noise"  # +5 points, but +-12 from the seeds
    half = SRNET.judged("nli", "case", True, 0.05, seed_margins=(0.05, 0.05, 0.009, 0.009))
    assert half.seeds_clearing == 2 and half.outcome == "confirmed"  # 2 of 4 seeds clear it alone: half
    fewer = SRNET.judged("nli", "case", True, 0.05, seed_margins=(0.0108, 0.0108, 0.0099, 0.0099, 0.0099, None))
    assert fewer.margin > 0.01 and fewer.seeds_clearing == 2 and fewer.outcome == "not confirmed"  # 2 of 6


def test_a_part_failing_beyond_its_noise_fails_the_rule_whatever_the_other_parts():
    v = SRNET.judged("nli", "case", False, {"ID kept": Score(-0.10), "OOD gained": Score(0.30)})
    assert v.margin == pytest.approx(-0.10) and v.outcome == "not confirmed"


class Stored:
    """A results frame's predictions source (noise.Predictions' interface): each row's per-example
    correctness on one evaluation set of 10 examples."""

    def __init__(self, right: dict):
        self.right = right

    def score(self, row, column):
        terms = np.asarray(self.right[(row["series"], column)], dtype=float)
        return Score(float(row[column]), {("nli", column, "fp"): (terms, None)})


def test_models_right_on_the_very_same_examples_are_said_so():
    """Section 5.1: every start scores exactly 90.0 because each is right on the same 9 of 10
    examples: a margin of +1.8 with a standard error of 0.0, which the page explains."""
    right = [1] * 9 + [0]
    df = frame([("ft to end", 1, 0.0, 0.9, 0.9), ("ft step=8", 1, 8.0, 0.9, 0.9), ("ft step=0", 1, 0.0, 0.9, 0.9)])
    df["x"] = [24.0, 8.0, 0.0]
    df.attrs["predictions"] = Stored({(s, c): right for s in set(df.series) for c in ("id", "ood:hans")})
    df["key"] = df.series
    early = [v for v in EarlyStart().evaluate(df) if v.claim == "early-start"][0]
    assert early.identical and "ft to end and ft step=8 (ID)" in early.identical[0]
    assert "right and wrong on the very same examples: their difference has no sampling noise" in text([early])


def test_a_tie_at_the_printed_precision_is_named_and_a_close_call_gets_a_digit_more():
    tie = SRNET.judged("nli", "case", True, Score(0.0004))
    assert "margin +0.0 points over its thresholds, a tie at the printed precision (+0.040 points)" in text([tie])
    close = Verdict("srnet", "s", "nli", "case", "r", {}, False, -0.0066, sampling=0.0034)
    assert close.outcome == "within noise"  # 0.66 <= 2 x 0.34
    assert "margin -0.66 points" in text([close]) and "standard error 0.34 points" in text([close])


def test_a_claim_most_of_whose_cases_fail_is_not_called_partly_confirmed():
    """Section 4.5: one case of three confirmed, two failing by 14-17 points."""
    from srnets_lib.book.verdicts.verdict import outcome

    ok = SRNET.judged("nli", "a", True, 0.05)
    bad = SRNET.judged("nli", "b", False, -0.15)
    assert outcome([ok, bad, bad]) == "not confirmed" and outcome([ok, ok, bad]) == "partly confirmed"


class _Stored:
    """Per run key: its predictions on one shared 400-example test set, as the store keeps them."""

    def __init__(self, labels, predicted):
        self.labels, self.predicted = labels, predicted

    def score(self, row, column):
        from srnets_lib.book.verdicts.noise import influence

        predicted = self.predicted[row["key"]]
        terms = influence("accuracy", predicted, self.labels)
        return Score(float((predicted == self.labels).mean()), {("sst2", "test", "fp"): (terms, None)})


def _subnetworks(accuracies: dict) -> pd.DataFrame:
    """TAMT's subnetworks at 0.7 on one task, each right on the first `accuracy` of 400 examples."""
    labels = np.zeros(400, dtype=int)
    predicted = {s: np.where(np.arange(400) < round(a * 400), 0, 1) for s, a in accuracies.items()}
    df = pd.DataFrame([{"series": s, "task": "sst2", "x": 0.7, "seed": 1, "key": s, "id": a}
                       for s, a in accuracies.items()])
    df.attrs["predictions"] = _Stored(labels, predicted)
    return df


def test_a_task_separates_no_method_when_no_two_subnetworks_differ_beyond_twice_their_noise():
    """TAMT figure 3's panels: subnetworks right on 304, 303 and 302 of 400 examples (Rand among
    them) differ within noise; one right on 360 is separated from them."""
    from srnets_lib.book.sections.tamt_transfer import separation

    close = separation(_subnetworks({"TAMT-MLM": 0.76, "OMP": 0.7575, "Rand": 0.755}))
    assert close is not None and close[0] is False and close[1] == pytest.approx(0.5)
    apart = separation(_subnetworks({"TAMT-MLM": 0.90, "OMP": 0.7575, "Rand": 0.755}))
    assert apart is not None and apart[0] is True and apart[1] == pytest.approx(14.5)
    assert separation(_subnetworks({"TAMT-MLM": 0.76})) is None  # one series: nothing to separate


def test_a_statement_id_names_one_claim_a_second_claim_under_it_is_refused():
    from srnets_lib.book.verdicts.verdict import STATEMENTS, Statement

    taken = next(iter(STATEMENTS.values()))
    assert Statement(taken.id, taken.text, taken.rule, dict(taken.thresholds), taken.unit, taken.words) == taken
    with pytest.raises(ValueError, match=f"statement id '{taken.id}' is taken by another claim"):
        Statement(taken.id, "another claim", taken.rule)
    assert STATEMENTS[taken.id] is taken


def test_the_units_and_outcomes_are_typed_as_the_rule_writes_them():
    from typing import get_args

    from srnets_lib.book.verdicts import verdict

    assert set(get_args(verdict.Unit)) == set(verdict.UNITS)
    assert set(verdict.OUTCOMES) == {"confirmed", "partly confirmed", "within noise", "not confirmed",
                                     "not measurable"}
    with pytest.raises(ValueError, match="unit 'percent' is not one of"):
        verdict.Statement("a-new-claim", "text", "rule", unit="percent")
