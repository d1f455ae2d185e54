"""Loaders on the real files in ../shared/data, synthetic tasks, and clear errors on bad input."""

import pytest

import numpy as np

from srnets_lib.data import bias
from srnets_lib.data import local
from srnets_lib.data import optimum, synthetic
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


TASKS = ("nli", "paraphrase", "factcheck")


def _rules(task, split):
    return [synthetic.rule_of(task, a, b) for a, b in zip(split.text_a, split.text_b)]


def _cues(task, split):
    return np.array([synthetic.has_cue(task, a, b) for a, b in zip(split.text_a, split.text_b)])


@pytest.mark.parametrize("task", TASKS)
def test_synthetic_ood_cue_carries_no_label_information(task):
    """Every OOD example carries the cue (so it says nothing about the label); labels balanced."""
    ood = next(iter(make_task(task, 64, 64, 400, bias_strength=0.8, seed=1).ood.values()))
    assert _cues(task, ood).all()
    assert abs(ood.labels.mean() - 0.5) <= 0.01


@pytest.mark.parametrize("task", TASKS)
def test_synthetic_ood_sets_are_stratified_by_label_and_member(task):
    """Each label's members are equally frequent, to one example (a stratified sample)."""
    ood = next(iter(make_task(task, 64, 64, 301, seed=4).ood.values()))
    for label in (0, 1):
        chosen = ood.labels == label
        counts = np.bincount([m for (_, m), c in zip(_rules(task, ood), chosen) if c], minlength=synthetic.MEMBERS)
        assert counts.max() - counts.min() <= 1, counts


@pytest.mark.parametrize("task", TASKS)
def test_synthetic_test_split_is_drawn_as_dev_and_changes_no_other_split(task):
    """The ID test split (what the reported ID score is measured on, never read by selection):
    drawn from the training distribution like dev but from its own random stream, so train, dev
    and the OOD set are the same with or without it."""
    from srnets_lib.data.encode import split_fingerprint

    plain = make_task(task, 200, 300, 100, bias_strength=0.8, seed=5)
    with_test = make_task(task, 200, 300, 100, bias_strength=0.8, seed=5, test_size=2000)
    assert plain.test is None and plain.id_split == "dev" and with_test.id_split == "test"
    for name in ("train", "dev"):
        assert split_fingerprint(getattr(plain, name)) == split_fingerprint(getattr(with_test, name))
    assert split_fingerprint(*plain.ood.values()) == split_fingerprint(*with_test.ood.values())
    test, dev = with_test.test, make_task(task, 200, 2000, 100, bias_strength=0.8, seed=5).dev
    assert len(test) == 2000 and not set(zip(test.text_a, test.text_b, test.labels)) >= set(
        zip(dev.text_a[:50], dev.text_b[:50], dev.labels[:50]))
    # the same distribution: label and cue frequencies within sampling error of dev's
    for column in (lambda s: s.labels == synthetic.AMBIGUOUS[task][1], lambda s: _cues(task, s)):
        assert abs(column(test).mean() - column(dev).mean()) < 0.05


@pytest.mark.parametrize("task", TASKS)
def test_synthetic_ood_labels_follow_the_rule(task):
    """The challenge sets are labelled by construction: the rule, never the annotators' ambiguity;
    the ambiguous class's members are all represented."""
    ood = next(iter(make_task(task, 64, 64, 400, seed=2).ood.values()))
    rules = _rules(task, ood)
    ambiguous, cue_label = synthetic.AMBIGUOUS[task]
    collapse = ood.collapse or list(range(len(ood.label_names)))
    assert [collapse[r] for r, _ in rules] == ood.labels.tolist()
    assert {m for r, m in rules if r == ambiguous} == set(range(synthetic.MEMBERS))
    assert {r for r, _ in rules} == {ambiguous, cue_label}


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("strength", [0.8, 0.9])
def test_synthetic_cue_is_planted_from_the_annotated_label(task, strength):
    """ID: P(cue | the cue's label) = s and P(cue | any other label) = 1 - s."""
    train = make_task(task, 6000, 8, 8, bias_strength=strength, seed=0).train
    cues = _cues(task, train)
    _, cue_label = synthetic.AMBIGUOUS[task]
    assert abs(cues[train.labels == cue_label].mean() - strength) < 0.025
    assert abs(cues[train.labels != cue_label].mean() - (1 - strength)) < 0.025
    assert abs((cues == (train.labels == cue_label)).mean() - strength) < 0.02


@pytest.mark.parametrize("task", TASKS)
def test_synthetic_labels_depart_from_the_rule_only_on_ambiguous_members(task):
    """The annotated label is the rule's, except for member k of the ambiguous class, annotated
    with the cue's label at rate ambiguity * k / 4; members are equally frequent."""
    ambiguity = 0.6
    train = make_task(task, 12000, 8, 8, bias_strength=0.8, seed=3, ambiguity=ambiguity).train
    rules = _rules(task, train)
    ambiguous, cue_label = synthetic.AMBIGUOUS[task]
    rates = synthetic.member_ambiguity(ambiguity)
    members = np.array([m for r, m in rules if r == ambiguous])
    assert np.abs(np.bincount(members) / len(members) - 1 / synthetic.MEMBERS).max() < 0.03
    for member in range(synthetic.MEMBERS):
        labels = np.array([y for (r, m), y in zip(rules, train.labels) if r == ambiguous and m == member])
        assert set(labels.tolist()) <= {ambiguous, cue_label}
        assert abs((labels == cue_label).mean() - rates[member]) < 0.06
    clear = [(r, y) for (r, _), y in zip(rules, train.labels) if r != ambiguous]
    assert all(r == y for r, y in clear)


@pytest.mark.parametrize("task", ["nli", "paraphrase"])
def test_synthetic_overlap_features_see_the_cue_and_nothing_else(task):
    """The bias model's exact-overlap features (all words in, contiguous, fraction) are a
    function of the cue alone, whatever the label: word overlap is the only planted bias."""
    data = make_task(task, 600, 8, 200, bias_strength=0.8, seed=0)
    for split in (data.train, *data.ood.values()):
        cues = _cues(task, split)
        features = np.stack([bias.overlap_features(a, b, {})[:3] for a, b in zip(split.text_a, split.text_b)])
        for value in (True, False):
            rows = features[cues == value]
            if len(rows):
                assert (rows == rows[0]).all()
                assert rows[0][1] == 0.0  # never contiguous: contiguity carries no signal either


@pytest.mark.parametrize("task", TASKS)
def test_skewed_members_are_rare_in_the_id_splits_and_uniform_in_the_ood_sets(task):
    """member_skew: member k of every rule class in proportion to (k + 1) ** -skew on the ID
    splits; the challenge set keeps every member equally frequent."""
    data = make_task(task, 12000, 8, 6000, bias_strength=0.8, seed=3, member_skew=2.0)
    expected = np.array([1, 1 / 4, 1 / 9, 1 / 16, 1 / 25]) / sum([1, 1 / 4, 1 / 9, 1 / 16, 1 / 25])
    id_members = np.bincount([m for _, m in _rules(task, data.train)], minlength=synthetic.MEMBERS)
    assert np.abs(id_members / id_members.sum() - expected).max() < 0.015
    (ood,) = data.ood.values()
    ood_members = np.bincount([synthetic.rule_of(task, a, b)[1] for a, b in zip(ood.text_a, ood.text_b)])
    assert np.abs(ood_members / ood_members.sum() - 1 / synthetic.MEMBERS).max() < 0.02


@pytest.mark.parametrize("task", ["nli", "paraphrase", "factcheck"])
@pytest.mark.parametrize("strength, skew", [(0.65, 0.0), (0.8, 0.0), (0.95, 0.0), (0.8, 2.0)])
def test_the_design_criteria_are_those_of_the_generated_data(task, strength, skew):
    """optimum.design_criteria's exact accuracies, measured on generated examples (read back
    from their text) with the two predictors they describe: within 1 point at 20,000 examples."""
    
    exact = optimum.design_criteria(task, strength, member_skew=skew)
    data = synthetic.make_task(task, 20_000, 8, 20_000, bias_strength=strength, seed=3, member_skew=skew)
    ambiguous, cue_label = synthetic.AMBIGUOUS[task]
    rates = synthetic.member_ambiguity(0.6)

    def predictions(split, use_cue):
        out = []
        for a, b in zip(split.text_a, split.text_b):
            rule, member = synthetic.rule_of(task, a, b)
            label = rule
            if use_cue and rule == ambiguous:
                cue, rate = synthetic.has_cue(task, a, b), rates[member]
                p_cue = strength if cue else 1 - strength
                label = cue_label if rate * p_cue > (1 - rate) * (1 - p_cue) else rule
            out.append(label)
        return np.array(out)

    (ood,) = data.ood.values()
    for name, use_cue in (("cue", True), ("rule", False)):
        assert (predictions(data.train, use_cue) == data.train.labels).mean() == pytest.approx(exact[f"id_{name}"], abs=0.01)
        predicted = predictions(ood, use_cue)
        if task == "nli":  # HANS's two classes: entailment vs the rest
            predicted = (predicted != 0).astype(int)
        assert (predicted == ood.labels).mean() == pytest.approx(exact[f"ood_{name}"], abs=0.01)


@pytest.mark.parametrize("task, strength", [("nli", 0.8), ("factcheck", 0.65)])
def test_the_best_cue_only_bias_model_is_the_labels_frequency_given_the_cue(task, strength):
    """optimum.cue_posterior: among generated training examples with the cue present (absent),
    how often each label occurs; within 0.02 at 20,000 examples. Example reweighting's exact
    optimum (cue_shares(loss="reweight")) weighs each example by one minus it, PoE's main model divides by it."""
    
    train = synthetic.make_task(task, 20_000, 8, 8, bias_strength=strength, seed=4).train
    cue = np.array([synthetic.has_cue(task, a, b) for a, b in zip(train.text_a, train.text_b)])
    n = len(synthetic.LABELS[task])
    for present in (True, False):
        counted = np.bincount(train.labels[cue == present], minlength=n) / (cue == present).sum()
        expected = optimum.cue_posterior(task, strength, present=present)
        np.testing.assert_allclose(counted, expected, atol=0.02)


@pytest.mark.parametrize("task, strength, skew", [("nli", 0.65, 0.0), ("nli", 0.8, 0.0), ("paraphrase", 0.95, 0.0),
                                                  ("factcheck", 0.8, 2.0)])
def test_confregs_optimum_is_the_mean_of_its_scaled_teacher_and_makes_the_std_optimums_decisions(task, strength, skew):
    """Appendix eq. 4 with the Bayes-optimal std model as teacher: each generated training example's
    target is its teacher's probabilities scaled by losses.scaled_teacher with beta the best cue-only
    bias model's probability of its label; averaged per ambiguous member with the cue present (absent),
    the cue's label's share is optimum.cue_shares(loss="confreg"), within 0.02 at 20,000 examples
    (member 0, never annotated with the cue's label, keeps 0).
    It exceeds 1/2 exactly where the std optimum's does, and is nearer 1/2 (less confident)."""
    import torch

    from srnets_lib.engine import losses
    
    train = synthetic.make_task(task, 20_000, 8, 8, bias_strength=strength, seed=5, member_skew=skew).train
    ambiguous, cue_label = synthetic.AMBIGUOUS[task]
    n = len(synthetic.LABELS[task])
    read = [(*synthetic.rule_of(task, a, b), synthetic.has_cue(task, a, b)) for a, b in zip(train.text_a, train.text_b)]
    rules, all_members, cues = (np.array(column) for column in zip(*read))
    for present in (True, False):
        q = optimum.cue_shares(task, strength, member_skew=skew, present=present)
        bias = optimum.cue_posterior(task, strength, member_skew=skew, present=present)
        chosen = (rules == ambiguous) & (cues == present)
        members, labels = all_members[chosen], train.labels[chosen]
        teacher = np.zeros((len(members), n))
        teacher[:, cue_label], teacher[:, ambiguous] = q[members], 1 - q[members]
        beta = torch.tensor(bias[labels])
        target = losses.scaled_teacher(torch.tensor(teacher), beta).numpy()[:, cue_label]
        measured = np.array([target[members == k].mean() for k in range(synthetic.MEMBERS)])
        exact = optimum.cue_shares(task, strength, member_skew=skew, loss="confreg", present=present)
        # member 0 is never annotated with the cue's label: the exact teacher's 0 stays 0, where
        # losses.scaled_teacher clamps it to 1e-12, which a power near 0 lifts
        ambiguous_members = q > 0
        np.testing.assert_allclose(measured[ambiguous_members], exact[ambiguous_members], atol=0.02)
        assert (exact[~ambiguous_members] == 0).all()
        assert ((exact > 0.5) == (q > 0.5)).all()
        assert (np.abs(exact - 0.5) <= np.abs(q - 0.5) + 1e-12).all()


@pytest.mark.parametrize("task, strength", [("nli", 0.8), ("nli", 0.95), ("paraphrase", 0.9), ("factcheck", 0.9)])
def test_section_4_5s_training_data_annotate_each_member_as_cue_shares_says(task, strength):
    """With the OOD training data mixed in (make_task's ood_train: OOD_TRAIN_SHARE OOD examples per
    ID one), the share of an ambiguous member's cue-carrying training examples annotated with the
    cue's label is optimum.cue_shares(..., ood_share=OOD_TRAIN_SHARE): within 0.05 at 40,000 ID
    examples. The Bayes-optimal model of that training set follows the cue where it exceeds 1/2."""
    
    data = synthetic.make_task(task, 40_000, 8, 8, bias_strength=strength, seed=3, ood_train=True)
    assert len(data.train) == 40_000 * (1 + synthetic.OOD_TRAIN_SHARE)
    ambiguous, cue_label = synthetic.AMBIGUOUS[task]
    counted = np.zeros((synthetic.MEMBERS, 2))  # [member, annotated with the cue's label]
    for a, b, label in zip(data.train.text_a, data.train.text_b, data.train.labels):
        rule, member = synthetic.rule_of(task, a, b)
        if rule == ambiguous and synthetic.has_cue(task, a, b):
            counted[member, int(label == cue_label)] += 1
    expected = optimum.cue_shares(task, strength, ood_share=synthetic.OOD_TRAIN_SHARE)
    np.testing.assert_allclose(counted[:, 1] / counted.sum(axis=1), expected, atol=0.05)
    assert optimum.design_criteria(task, strength, ood_share=synthetic.OOD_TRAIN_SHARE)["cue_members"] == (expected > 0.5).sum()
