"""SQuAD v1.1 exact match and F1 (TAMT section 4.1), as the official v1.1 evaluation script
computes them: answers normalised (lower case; punctuation, the articles a/an/the and extra
whitespace removed), each question scored against its best gold answer, then averaged. The script
reports percentages; these are fractions, like the other metrics.
"""

from __future__ import annotations

import re
import string
from collections import Counter

PUNCTUATION = set(string.punctuation)


def normalize_answer(text: str) -> str:
    text = "".join(ch for ch in text.lower() if ch not in PUNCTUATION)
    return " ".join(re.sub(r"\b(a|an|the)\b", " ", text).split())


def exact_match(prediction: str, gold: str) -> float:
    return float(normalize_answer(prediction) == normalize_answer(gold))


def token_f1(prediction: str, gold: str) -> float:
    """F1 of the normalised tokens' overlap (0 when none are shared, also when both are empty)."""
    predicted, wanted = normalize_answer(prediction).split(), normalize_answer(gold).split()
    same = sum((Counter(predicted) & Counter(wanted)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(predicted), same / len(wanted)
    return 2 * precision * recall / (precision + recall)


def _best_over_golds(score, predictions, references) -> float:
    if len(predictions) != len(references):
        raise ValueError(f"{len(predictions)} predictions for {len(references)} questions")
    return sum(max(score(p, gold) for gold in golds) for p, golds in zip(predictions, references)) / len(references)


def squad_exact_match(predictions: list[str], references: list[list[str]]) -> float:
    """Mean over questions of the best exact match against the question's gold answers."""
    return _best_over_golds(exact_match, predictions, references)


def squad_f1(predictions: list[str], references: list[list[str]]) -> float:
    """Mean over questions of the best token F1 against the question's gold answers."""
    return _best_over_golds(token_f1, predictions, references)
