"""The exact optimum of the synthetic tasks' training distributions (the model of synthetic.py's
docstring): what a bias model that sees the cue alone predicts at best, on how many of the ambiguous
class's members the Bayes-optimal model follows the cue, as each loss sees the data (std, example
reweighting, PoE's main model, confidence regularisation), and the design criteria the book checks
the generator against (what fitting the data scores on OOD, what ideal debiasing keeps of the ID)."""

from __future__ import annotations

import numpy as np

from srnets_lib.data.synthetic import AMBIGUOUS, LABELS, MEMBERS, member_ambiguity, member_frequencies


def cue_posterior(task: str, bias_strength: float, ambiguity: float = 0.6, member_skew: float = 0.0,
                  present: bool = True) -> np.ndarray:
    """P(label | the cue present, or absent) on the training distribution, per label: what a bias
    model that sees the cue alone predicts at best (bias.py's linear model on the cue's features
    approximates it). The cue's label carries the ambiguous members annotated with it."""
    n, s = len(LABELS[task]), bias_strength
    ambiguous, cue_label = AMBIGUOUS[task]
    moved = (member_frequencies(member_skew) * member_ambiguity(ambiguity)).sum() / n
    prior = np.full(n, 1 / n)
    prior[cue_label] += moved
    prior[ambiguous] -= moved
    with_cue = np.where(np.arange(n) == cue_label, s, 1 - s)
    joint = prior * (with_cue if present else 1 - with_cue)
    return joint / joint.sum()


EXACT_LOSSES = ("std", "reweight", "poe", "confreg")  # the losses whose optimum on this data is exact (cue_shares)


def _masses(task, s, ambiguity, member_skew, ood_share, loss, present: bool):
    """Per ambiguous member, the training mass annotated with the cue's label and with the rule's,
    among the examples with the cue present (or absent), as `loss` sees it; see cue_shares."""
    n, a, p = len(LABELS[task]), member_ambiguity(ambiguity), member_frequencies(member_skew)
    p_cue = s if present else 1 - s  # P(cue present or absent | the cue's label); the other labels: 1 - p_cue
    cue, rule = p * a * p_cue / n, p * (1 - a) * (1 - p_cue) / n
    if present:  # the OOD examples all carry the cue
        rule = rule + ood_share * 0.5 / MEMBERS
    if loss != "std":
        ambiguous, cue_label = AMBIGUOUS[task]
        posterior = cue_posterior(task, s, ambiguity, member_skew, present)
        if loss == "reweight":  # appendix eq. 3: each example weighs 1 - p_b(its label)
            cue, rule = cue * (1 - posterior[cue_label]), rule * (1 - posterior[ambiguous])
        else:  # PoE (section 3.3): the main model's best p_m is P(label | x) / p_b(label), renormalised
            cue, rule = cue / posterior[cue_label], rule / posterior[ambiguous]
    return cue, rule


def cue_shares(task: str, bias_strength: float, ambiguity: float = 0.6, member_skew: float = 0.0,
               ood_share: float = 0.0, loss: str = "std", present: bool = True) -> np.ndarray:
    """Per member k of the ambiguous class: of the training examples with the cue present (or
    absent), the share annotated with the cue's label (a_k * s against (1 - a_k) * (1 - s) with the
    cue, weighted by the member's frequency). With `ood_share` (section 4.5: OOD_TRAIN_SHARE with
    make_task's ood_train) the training set has that many OOD examples per ID one, which add
    rule-labelled mass: every one carries the cue, half are of the ambiguous class, its members
    uniform. `loss`: as the std loss sees the data; as example reweighting does (appendix eq. 3:
    each example weighs 1 - the bias model's probability of its label); or as PoE leaves them to
    its main model (section 3.3: the best p_m is P(label | x) divided by the bias model's
    probability), the bias model being cue_posterior; or as confidence regularisation fits them
    (appendix eq. 4: _confreg_shares)."""
    if loss not in EXACT_LOSSES:
        raise ValueError(f"loss={loss!r}: the exact optimum is known for {', '.join(EXACT_LOSSES)}")
    if loss != "std" and ood_share:
        raise ValueError(f"loss={loss} with OOD training data is not a setting of the paper")
    if loss == "confreg":
        return _confreg_shares(task, bias_strength, ambiguity, member_skew, present)
    cue, rule = _masses(task, bias_strength, ambiguity, member_skew, ood_share, loss, present)
    return cue / (cue + rule)


def _confreg_shares(task, s, ambiguity, member_skew, present: bool) -> np.ndarray:
    """Confidence regularisation's optimum (appendix eq. 4), its teacher being the Bayes-optimal
    model of the data: an example whose label is y has the soft target S(p_t, beta_y), the teacher's
    probabilities raised to 1 - beta_y (beta_y: the bias model's probability of y) and renormalised,
    and the best p_m is that target's expectation over the labels. Of the two labels an ambiguous
    example can carry, the teacher gives the cue's the share q (cue_shares with std); raising both to
    the same power keeps the larger one larger, so each target, and their mean, favours the cue's
    label exactly where q > 1/2: at its optimum confreg makes the std optimum's decisions, only less
    confidently. (The book's teacher is a trained std model's probabilities on its own training set.)"""
    q = cue_shares(task, s, ambiguity, member_skew, present=present)
    ambiguous, cue_label = AMBIGUOUS[task]
    posterior = cue_posterior(task, s, ambiguity, member_skew, present)

    def target(beta):  # S(p_t, beta)'s share on the cue's label
        cue, rule = q ** (1 - beta), (1 - q) ** (1 - beta)
        return cue / (cue + rule)

    return q * target(posterior[cue_label]) + (1 - q) * target(posterior[ambiguous])


def design_criteria(task: str, bias_strength: float, ambiguity: float = 0.6, member_skew: float = 0.0,
                    ood_share: float = 0.0, loss: str = "std") -> dict[str, float]:
    """Exact properties of the generated data (the model of the module docstring), as fractions:
    id_cue / ood_cue: ID and OOD accuracy of the Bayes-optimal model of the training distribution,
    which reads the rule, the member and the cue (the best a std model can do); id_rule / ood_rule:
    those of the model that follows the rule on every member (ideal debiasing: what PoE leaves the
    main model); cue_members: on how many of the ambiguous class's members the first follows the
    cue when it is present (as on every OOD example): those whose cue_shares exceed one half, a
    member at exactly one half counting as half (an indifferent model's expected accuracy). The ID
    cost of ideal debiasing is id_cue - id_rule; on real data it is small (appendix table 6:
    RoBERTa-base MNLI 87.14 std, 86.56 PoE). `ood_share`: section 4.5's training data;
    `loss`: the optimum of the data as reweighting weighs them, of PoE's main model, or of confreg
    with the std optimum as its teacher (cue_shares)."""
    n = len(LABELS[task])
    a, s, p = member_ambiguity(ambiguity), bias_strength, member_frequencies(member_skew)

    def follows(present):  # 1 where the optimum predicts the cue's label, 0.5 where it is indifferent
        share = cue_shares(task, s, ambiguity, member_skew, ood_share, loss, present)
        return np.where(np.isclose(share, 0.5), 0.5, (share > 0.5).astype(float))

    with_cue, without_cue = follows(True), follows(False)
    right = (with_cue * a * s + (1 - with_cue) * (1 - a) * (1 - s)
             + without_cue * a * (1 - s) + (1 - without_cue) * (1 - a) * s)  # per member, on the ID data
    return {"id_cue": (n - 1) / n + (p * right).sum() / n, "id_rule": (n - 1) / n + (p * (1 - a)).sum() / n,
            "ood_cue": 0.5 + 0.5 * (1 - with_cue.mean()), "ood_rule": 1.0, "cue_members": float(with_cue.sum())}
