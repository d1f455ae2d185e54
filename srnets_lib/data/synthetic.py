"""Synthetic planted-bias versions of the three tasks: the embedded default (no downloads).

Each task has a *true rule* a model can learn from the text and a *spurious cue* that
agrees with the label with probability `bias_strength` in the ID train/dev splits and
carries no label information in the OOD split, mirroring the real challenge sets:

- nli (MNLI -> HANS): premise "the A near the B V ." or "the A V near the B ."; the rule
  is who did V. Cue: word overlap. Entailment hypotheses ("the A V .") have every word in
  the premise with probability s, neutral ones ("the B V .") with probability 1 - s,
  contradictions ("the A never V .") never. The OOD set has only full-overlap pairs,
  half entailed (HANS-like; neutral/contradiction count as non-entailment).
- paraphrase (QQP -> PAWS): questions about a trip from X to Y; the rule is the direction.
  Cue: overlap; duplicates reuse the first question's words with probability s, non-
  duplicates (direction swapped) with 1 - s. OOD: only full-overlap pairs (PAWS-like).
- factcheck (FEVER -> Symmetric): claim "P <cue?> lives in C .", evidence "P , a job ,
  lives in C2 ."; the rule is C == C2. Cue: an empty intensifier ("really", ...) in the
  claim, present in refuted claims with probability s and in supported ones with 1 - s;
  in the OOD set it appears independently of the label (Symmetric-like).

Contiguity of the hypothesis in the premise is balanced across labels by the two NLI
templates, so the overlap features of appendix B.3.1 carry no signal on the OOD set.
"""

from __future__ import annotations

import numpy as np

from .splits import Split, TaskData
from .tasks import HANS_COLLAPSE, HANS_LABELS, spec

PEOPLE = ["doctor", "lawyer", "artist", "teacher", "pilot", "farmer", "singer", "writer",
          "banker", "chef", "nurse", "judge", "actor", "baker", "dancer", "painter",
          "student", "soldier", "tourist", "manager", "driver", "engineer", "scientist", "poet"]
VERBS = ["slept", "danced", "laughed", "waited", "smiled", "cried", "shouted", "arrived",
         "left", "sang", "prayed", "worked", "ran", "swam", "cooked", "jumped"]
CITIES = ["paris", "london", "berlin", "madrid", "rome", "tokyo", "boston", "chicago",
          "dallas", "denver", "miami", "seattle", "toronto", "dublin", "vienna", "prague",
          "oslo", "lisbon", "athens", "cairo", "delhi", "sydney", "moscow", "warsaw"]
NAMES = ["john", "mary", "david", "sarah", "james", "anna", "peter", "laura", "paul",
         "emma", "mark", "julia", "tom", "lucy", "steve", "kate", "george", "alice"]
CUES = ["really", "definitely", "certainly", "truly"]
QUESTIONS = [  # (question, same-meaning reordering, low-overlap paraphrase)
    ("how do i get from {x} to {y} ?", "how do i get to {y} from {x} ?",
     "what is the best way to travel from {x} to {y} ?"),
    ("what is the cheapest flight from {x} to {y} ?", "what is the cheapest flight to {y} from {x} ?",
     "which airline has the lowest fare from {x} to {y} ?"),
    ("how long is the train from {x} to {y} ?", "how long is the train to {y} from {x} ?",
     "how many hours does a rail trip from {x} to {y} take ?"),
]
RELATIONS = ["lives in", "works in", "was born in", "studied in"]


def _pick(rng, words, n=1):
    chosen = rng.choice(len(words), size=n, replace=False)
    return [words[i] for i in chosen]


def _nli(rng, label: int, high: bool):
    a, b, c = _pick(rng, PEOPLE, 3)
    (v,) = _pick(rng, VERBS)
    if rng.random() < 0.5:
        premise = f"the {a} near the {b} {v} ."
    else:
        premise = f"the {a} {v} near the {b} ."
    if label == 0:  # entailment
        hypothesis = f"the {a} {v} ." if high else f"a person {v} ."
    elif label == 1:  # neutral: somebody else did it
        hypothesis = f"the {b} {v} ." if high else f"a {c} {v} ."
    else:  # contradiction
        hypothesis = f"the {a} never {v} ."
    return premise, hypothesis


def _paraphrase(rng, label: int, high: bool):
    x, y = _pick(rng, CITIES, 2)
    question, reordered, reworded = QUESTIONS[rng.integers(len(QUESTIONS))]
    first = question.format(x=x, y=y)
    if label == 1:  # duplicate: same trip
        second = reordered.format(x=x, y=y) if high else reworded.format(x=x, y=y)
    else:  # not duplicate: the reverse trip
        second = question.format(x=y, y=x) if high else reworded.format(x=y, y=x)
    return first, second


def _factcheck(rng, label: int, cue: bool):
    (name,) = _pick(rng, NAMES)
    (job,) = _pick(rng, PEOPLE)
    city, other = _pick(rng, CITIES, 2)
    relation = RELATIONS[rng.integers(len(RELATIONS))]
    filler = f" {CUES[rng.integers(len(CUES))]}" if cue else ""
    claim = f"{name}{filler} {relation} {city} ."
    evidence = f"{name} , a {job} , {relation} {city if label == 0 else other} ."
    return claim, evidence  # (text_a, text_b) = (claim, evidence): the authors' FEVER order


def _cue_probability(task: str, label: int, strength: float) -> float:
    """P(cue) per label: the cue points to entailment / duplicate / refutes."""
    if task == "nli":
        return {0: strength, 1: 1 - strength, 2: 0.0}[label]
    if task == "paraphrase":
        return strength if label == 1 else 1 - strength
    return strength if label == 1 else 1 - strength  # factcheck: cue -> REFUTES


GENERATORS = {"nli": _nli, "paraphrase": _paraphrase, "factcheck": _factcheck}
LABELS = {"nli": ["entailment", "neutral", "contradiction"],
          "paraphrase": ["not_duplicate", "duplicate"],
          "factcheck": ["SUPPORTS", "REFUTES"]}
OOD_NAMES = {"nli": "hans-like", "paraphrase": "paws-like", "factcheck": "symmetric-like"}


def _id_split(task, name, n, strength, rng) -> Split:
    labels = rng.integers(len(LABELS[task]), size=n)
    pairs = [GENERATORS[task](rng, int(y), bool(rng.random() < _cue_probability(task, int(y), strength)))
             for y in labels]
    return Split(name, [p[0] for p in pairs], [p[1] for p in pairs], labels, LABELS[task])


def _ood_split(task, n, rng) -> Split:
    """The cue carries no information: full overlap everywhere (nli, paraphrase), or a cue
    independent of the label (factcheck)."""
    if task == "nli":
        labels = rng.integers(2, size=n)  # entailment vs neutral, both fully overlapping
        pairs = [_nli(rng, int(y), True) for y in labels]
        return Split(OOD_NAMES[task], [p[0] for p in pairs], [p[1] for p in pairs], labels,
                     HANS_LABELS, HANS_COLLAPSE)
    labels = rng.integers(2, size=n)
    if task == "paraphrase":
        pairs = [_paraphrase(rng, int(y), True) for y in labels]
    else:
        pairs = [_factcheck(rng, int(y), bool(rng.random() < 0.5)) for y in labels]
    return Split(OOD_NAMES[task], [p[0] for p in pairs], [p[1] for p in pairs], labels, LABELS[task])


def make_task(task: str, train_size: int, dev_size: int, ood_size: int,
              bias_strength: float = 0.9, seed: int = 0, ood_train: bool = False) -> TaskData:
    """Generate a task deterministically from `seed`. With `ood_train` (section 4.5) an OOD-
    distributed training set of a quarter of `train_size` is mixed into the training data."""
    if task not in GENERATORS:
        raise ValueError(f"unknown task {task!r}; accepted: {sorted(GENERATORS)}")
    task_index = sorted(GENERATORS).index(task)
    rngs = [np.random.default_rng([seed, task_index, part]) for part in range(4)]
    train = _id_split(task, "train", train_size, bias_strength, rngs[0])
    if ood_train:
        extra = _ood_split(task, train_size // 4, rngs[3])
        if task == "nli":  # OOD labels are HANS's: map non-entailment back to neutral
            extra = Split(extra.name, extra.text_a, extra.text_b, extra.labels, LABELS[task])
        train = train.concat(extra, "train+ood")
    return TaskData(
        task=task, label_names=LABELS[task],
        metric=spec(task).metric, ood_metric=spec(task).ood_metric,
        train=train, dev=_id_split(task, "dev", dev_size, bias_strength, rngs[1]),
        ood={OOD_NAMES[task]: _ood_split(task, ood_size, rngs[2])},
        description=f"synthetic {task}, bias strength {bias_strength}, seed {seed}",
    )
