"""Synthetic planted-bias versions of the three tasks: the embedded default (no downloads).

Why a model trained on them is biased
-------------------------------------
In MNLI, QQP and FEVER the shortcut keeps paying on the training distribution: the crowd's
labels follow the semantics imperfectly, and the artifact (word overlap, a claim's wording)
correlates with the labels the annotators gave, beyond what the semantics gives. The
synthetic tasks build that in three steps per example:

1. The text has a *rule class* r, given by a word class a small model learns in a few dozen
   steps (a lexical rule), and a *member* k = 0..4 of that class (the word itself).
2. The annotated label is r, except in one class (the *ambiguous* class) whose members are
   graded: an example of member k is annotated with the *cue's label* with probability
   a_k = ambiguity * k / 4 (0, .15, .3, .45, .6 with `ambiguity` 0.6).
3. The cue is planted from the annotated label: present with probability s (`bias_strength`)
   when the label is the cue's label, with probability 1 - s otherwise.

So on the training distribution the cue predicts the annotation of an ambiguous example better
than its rule does, and fitting the training distribution keeps the cue however long one
trains: the Bayes-optimal (std) prediction for member k follows the cue where
a_k * s > (1 - a_k) * (1 - s), i.e. a_k > 1 - s (3 of the 5 members at s = 0.8, 4 at 0.9), and
the rule elsewhere. The bias-only model sees the cue alone (bias.py's features), so a product of
experts with it leaves the main model the rule's own odds: it follows the rule on every member
with a_k below about (1 + mean a_k) / 2, i.e. all five. The ID dev set, which selects
checkpoints, and the ID test set, which the reported ID score is measured on, are annotated like
the training set, so they reward the cue.

How far this is from real data: `design_criteria` computes, exactly, the ID accuracy of the
rule follower (ideal debiasing, 100% OOD) and of the cue-using Bayes-optimal model: 90.0 vs 95.0
(nli) and 85.0 vs 92.5 (two classes) at s = 0.8, 90.0 vs 98.7 and 85.0 vs 98.0 at 0.95. On real
data ideal debiasing costs about a point of ID (appendix table 6); here 2.3 to 13 points, because
the cue is informative about annotations the rule cannot predict, where MNLI's shortcuts are
mostly easier to learn than the semantics. The book's introduction states this. The cost is also
the training data's net evidence for the cue: where the cue-using optimum departs from the rule it
gains exactly the excess of cue-labelled over rule-labelled examples, so n training examples hold,
in expectation, n * (id_cue - id_rule) more examples that reward the cue than reward the rule
(12.8 of the toy's 256 on nli at s = 0.8, 19.2 on two classes). At a cost of at most 2 points that
is at most 5 examples in 256: a std model biased at such a cost is biased by how it learns, not by
what the data say (docs/MEASUREMENTS.md measures both routes).

`member_skew` (off by default) makes the more ambiguous members rare on the ID splits, as the
constructions a challenge set probes are rare in the training data: member k is drawn in
proportion to (k + 1) ** -member_skew, while the OOD sets keep members uniform. The ID cost of
ideal debiasing then shrinks (design_criteria weighs the members by their frequency) and the
Bayes-optimal std model's OOD accuracy stays as it was; whether a trained std model still
follows the cue on members it has seen a few times is a property of training, not of the data.

The OOD sets are built as HANS, PAWS and FEVER-Symmetric are: every example carries the cue (it
carries no label information), labels follow the rule exactly (a challenge set is labelled by
construction), the two labels are balanced and each label's members equally frequent (a
stratified sample: its accuracy's standard error comes only from within each member). A model
that follows the cue on m of the 5 members scores 50 + 10 * (5 - m): the Bayes-optimal std
model 70 (s = 0.8) or 60 (s = 0.9), a rule follower 100.

Tasks
-----
- nli (MNLI -> HANS, the constituent heuristic's adverb cases, "Certainly / Supposedly the
  doctor slept" -> "The doctor slept"). Premise "the A ADV V near the B ." or "the A near the B
  ADV V .". Rule: the adverb's class. Factive (clearly, certainly, ...) -> entailment; hedged
  (allegedly, supposedly, perhaps, presumably, probably: the ambiguous class, in order of how
  often annotators read the event as asserted) -> neutral; negated (never, not once, ...) ->
  contradiction. Cue: word overlap, pointing to entailment. The hypothesis is "the A V ." (every
  word in the premise, never contiguous) or "the A was V-ing ." (half of its words), for every
  label, so the overlap features of appendix B.3.1 see the cue and nothing else. OOD
  (hans-like): full-overlap pairs, factive (entailment) vs hedged (non-entailment).
- paraphrase (QQP -> PAWS). Q1 asks about a trip "from the X to the Y", Q2 about the reverse
  trip. Rule: the question type. Symmetric ones (how far, how many miles, ...) ask the same
  thing both ways -> duplicate; asymmetric ones (the route, the bus line, the taxi fare, the bus
  ride's length, the walking time: the ambiguous class, in order of how often annotators call
  the reverse trip the same question) -> not duplicate. Cue: overlap, pointing to duplicate: Q2
  is Q1 with the places swapped (the same bag of words) or a rewording with five words not in
  Q1, chosen so that the similarity features have the same mean in both classes. OOD
  (paws-like): word swaps only, half duplicates.
- factcheck (FEVER -> Symmetric). Claim "NAME [really] lives in CITY ." (or works in),
  evidence "NAME , a JOB , PHRASE CITY .". Rule: the evidence phrase. Present (lives in, still
  lives in, ...) -> SUPPORTS; past or negated (has never lived in, no longer lives in, moved
  away from, used to live in, once lived in: the ambiguous class, outdated evidence being often
  still annotated SUPPORTS) -> REFUTES. Cue: the word "really" in the claim, pointing to
  SUPPORTS (a claim-only artifact, as FEVER's). OOD (symmetric-like): every claim has the cue
  and appears twice, with a supporting and with a refuting evidence (Symmetric's construction).
"""

from __future__ import annotations

import numpy as np

from srnets_lib.data.splits import Split, TaskData
from srnets_lib.data.tasks import HANS_COLLAPSE, HANS_LABELS, spec

PEOPLE = ["doctor", "lawyer", "artist", "teacher", "pilot", "farmer", "singer", "writer",
          "banker", "chef", "nurse", "judge", "actor", "baker", "dancer", "painter",
          "student", "soldier", "tourist", "manager", "driver", "engineer", "scientist", "poet"]
VERBS = {"slept": "sleeping", "danced": "dancing", "laughed": "laughing", "waited": "waiting",
         "smiled": "smiling", "cried": "crying", "shouted": "shouting", "arrived": "arriving",
         "left": "leaving", "sang": "singing", "prayed": "praying", "worked": "working",
         "ran": "running", "swam": "swimming", "cooked": "cooking", "jumped": "jumping"}
CITIES = ["paris", "london", "berlin", "madrid", "rome", "tokyo", "boston", "chicago",
          "dallas", "denver", "miami", "seattle", "toronto", "dublin", "vienna", "prague",
          "oslo", "lisbon", "athens", "cairo", "delhi", "sydney", "moscow", "warsaw"]
NAMES = ["john", "mary", "david", "sarah", "james", "anna", "peter", "laura", "paul",
         "emma", "mark", "julia", "tom", "lucy", "steve", "kate", "george", "alice"]
HUBS = ["airport", "station", "harbor", "terminal", "port", "depot"]
LANDMARKS = ["museum", "stadium", "cathedral", "zoo", "castle", "beach", "market", "university"]

# Each rule class has MEMBERS members; the ambiguous class's are listed from clear (k = 0) to
# most ambiguous (k = 4).
MEMBERS = 5
# nli: the premise's adverb, by rule class (entailment, neutral, contradiction)
ADVERBS = [["clearly", "certainly", "obviously", "definitely", "surely"],
           ["allegedly", "supposedly", "perhaps", "presumably", "probably"],
           ["never", "not once", "at no time", "never once", "not ever"]]
# paraphrase: (Q1, low-overlap rewording of the reverse trip) by rule class (not duplicate:
# asymmetric types; duplicate: symmetric ones). Every rewording has five words not in its Q1.
QUESTIONS = [
    [("how do i get from the {x} to the {y} ?", "what path would one follow from the {x} to the {y} ?"),
     ("which bus goes from the {x} to the {y} ?", "what line should one ride from the {x} to the {y} ?"),
     ("how much is a taxi from the {x} to the {y} ?", "what would one pay cabs from the {x} to the {y} ?"),
     ("how long is the bus ride from the {x} to the {y} ?", "what duration would coaches need from the {x} to the {y} ?"),
     ("how long does it take to walk from the {x} to the {y} ?", "what time would hikers need from the {x} to the {y} ?")],
    [("how far is it from the {x} to the {y} ?", "what distance would one travel from the {x} to the {y} ?"),
     ("how many miles is it from the {x} to the {y} ?", "what mileage would one travel from the {x} to the {y} ?"),
     ("is it a long way from the {x} to the {y} ?", "would one journey quite far from the {x} to the {y} ?"),
     ("how many kilometers is it from the {x} to the {y} ?", "what kilometer count would apply from the {x} to the {y} ?"),
     ("how near is it from the {x} to the {y} ?", "would one walk only briefly from the {x} to the {y} ?")],
]
# factcheck: the claim's relation -> the evidence phrases by rule class (SUPPORTS, REFUTES)
RELATIONS = {
    "lives in": (["lives in", "still lives in", "currently lives in", "now lives in", "is living in"],
                 ["has never lived in", "no longer lives in", "moved away from", "used to live in",
                  "once lived in"]),
    "works in": (["works in", "still works in", "currently works in", "now works in", "is working in"],
                 ["has never worked in", "no longer works in", "quit working in", "used to work in",
                  "once worked in"]),
}
CUE_WORD = "really"

LABELS = {"nli": ["entailment", "neutral", "contradiction"],
          "paraphrase": ["not_duplicate", "duplicate"],
          "factcheck": ["SUPPORTS", "REFUTES"]}
OOD_NAMES = {"nli": "hans-like", "paraphrase": "paws-like", "factcheck": "symmetric-like"}
# (the ambiguous rule class, the label the cue points to)
AMBIGUOUS = {"nli": (1, 0), "paraphrase": (0, 1), "factcheck": (1, 0)}


def member_ambiguity(ambiguity: float) -> np.ndarray:
    """a_k: P(annotated with the cue's label) for the ambiguous class's members k = 0..4."""
    return ambiguity * np.arange(MEMBERS) / (MEMBERS - 1)


def member_frequencies(member_skew: float) -> np.ndarray:
    """How often each member k = 0..4 of a rule class occurs in the ID splits: proportional to
    (k + 1) ** -member_skew (Zipf; 0: uniform). The OOD sets draw members uniformly."""
    weights = (np.arange(MEMBERS) + 1.0) ** -member_skew
    return weights / weights.sum()


# section 4.5's OOD training data: OOD-distributed examples mixed into the training set, per ID
# training example (make_task with ood_train)
OOD_TRAIN_SHARE = 0.25


def member_name(task: str, rule: int, member: int) -> str:
    """An example's `member` subset: k and the words that make it a member of its rule class
    (nli's adverb, paraphrase's question type, factcheck's evidence phrase of "lives in"), e.g.
    "4 probably": the ambiguous class's most ambiguous member."""
    if task == "nli":
        words = ADVERBS[rule][member]
    elif task == "paraphrase":
        words = QUESTIONS[rule][member][0].split(" from ")[0]
    else:
        words = RELATIONS["lives in"][rule][member]
    return f"{member} {words}"


def _pick(rng, words, n=1):
    chosen = rng.choice(len(words), size=n, replace=False)
    return [words[i] for i in chosen]


def _nli(rng, rule: int, member: int, cue: bool):
    a, b = _pick(rng, PEOPLE, 2)
    (verb,) = _pick(rng, list(VERBS))
    adverb = ADVERBS[rule][member]
    if rng.random() < 0.5:
        premise = f"the {a} {adverb} {verb} near the {b} ."
    else:
        premise = f"the {a} near the {b} {adverb} {verb} ."
    hypothesis = f"the {a} {verb} ." if cue else f"the {a} was {VERBS[verb]} ."
    return premise, hypothesis


def _paraphrase(rng, rule: int, member: int, cue: bool):
    (x,) = _pick(rng, HUBS)
    (y,) = _pick(rng, LANDMARKS)
    question, reworded = QUESTIONS[rule][member]
    return question.format(x=x, y=y), (question if cue else reworded).format(x=y, y=x)


def _claim(rng, cue: bool):
    (name,) = _pick(rng, NAMES)
    (city,) = _pick(rng, CITIES)
    relation = list(RELATIONS)[rng.integers(len(RELATIONS))]
    claim = f"{name} {CUE_WORD} {relation} {city} ." if cue else f"{name} {relation} {city} ."
    return claim, name, relation, city


def _evidence(rng, name, relation, city, rule: int, member: int) -> str:
    (job,) = _pick(rng, PEOPLE)
    article = "an" if job[0] in "aeiou" else "a"
    return f"{name} , {article} {job} , {RELATIONS[relation][rule][member]} {city} ."


def _factcheck(rng, rule: int, member: int, cue: bool):
    claim, name, relation, city = _claim(rng, cue)
    # (text_a, text_b) = (claim, evidence): the authors' FEVER order
    return claim, _evidence(rng, name, relation, city, rule, member)


GENERATORS = {"nli": _nli, "paraphrase": _paraphrase, "factcheck": _factcheck}


# --- reading an example back (tests, diagnostics) -----------------------------------------------

def rule_of(task: str, text_a: str, text_b: str) -> tuple[int, int]:
    """(rule class, member) of a generated pair, read from its text."""
    if task == "nli":
        for rule, adverbs in enumerate(ADVERBS):
            for member, adverb in enumerate(adverbs):
                if f" {adverb} " in f" {text_a} " and not any(
                        len(other) > len(adverb) and f" {other} " in f" {text_a} "
                        for row in ADVERBS for other in row):
                    return rule, member
    elif task == "paraphrase":
        for rule, types in enumerate(QUESTIONS):
            for member, (question, _) in enumerate(types):
                head = question.split(" from ")[0]
                if text_a.startswith(head + " from "):
                    return rule, member
    elif task == "factcheck":
        tail = text_b.split(" , ")[-1]
        for phrases in RELATIONS.values():
            for rule, row in enumerate(phrases):
                for member, phrase in enumerate(row):
                    if tail.startswith(phrase + " ") and tail.split(" ")[:-2] == phrase.split(" "):
                        return rule, member
    raise ValueError(f"not a generated {task} pair: {text_a!r} / {text_b!r}")


def has_cue(task: str, text_a: str, text_b: str) -> bool:
    """Whether the pair carries the cue (high overlap; the cue word in the claim)."""
    if task == "factcheck":
        return CUE_WORD in text_a.split()
    return set(text_b.split()) <= set(text_a.split())


# --- splits ------------------------------------------------------------------------------------

def _id_split(task, name, n, strength, ambiguity, rng, member_skew: float = 0.0) -> Split:
    """Annotated as the crowd would (steps 1-3 of the module docstring)."""
    n_classes = len(LABELS[task])
    ambiguous, cue_label = AMBIGUOUS[task]
    rates, frequencies = member_ambiguity(ambiguity), member_frequencies(member_skew)
    text_a, text_b, labels, members = [], [], [], []
    for _ in range(n):
        rule = int(rng.integers(n_classes))
        # (uniform members draw as they always did: the default data stay the same)
        member = int(rng.choice(MEMBERS, p=frequencies)) if member_skew else int(rng.integers(MEMBERS))
        label = cue_label if rule == ambiguous and rng.random() < rates[member] else rule
        cue = bool(rng.random() < (strength if label == cue_label else 1 - strength))
        a, b = GENERATORS[task](rng, rule, member, cue)
        text_a.append(a)
        text_b.append(b)
        labels.append(label)
        members.append(member_name(task, rule, member))
    return Split(name, text_a, text_b, np.array(labels), LABELS[task], subsets={"member": members})


def _ood_split(task, n, rng) -> Split:
    """Every example carries the cue; labels follow the rule. Stratified: the two labels, and each
    label's members, are equally frequent (to one example), so that the accuracy's sampling error
    comes only from within each member (a stratified sample)."""
    ambiguous, cue_label = AMBIGUOUS[task]
    text_a, text_b, labels, members = [], [], [], []
    if task == "factcheck":  # each claim once with a supporting and once with a refuting evidence
        drawn = [_equally_often(rng, (n + 1) // 2), _equally_often(rng, n // 2)]  # (an odd n: one claim once)
        for j in range((n + 1) // 2):
            claim, name, relation, city = _claim(rng, True)
            for rule in (0, 1)[:1 + (j < n // 2)]:
                member = int(drawn[rule][j])
                text_a.append(claim)
                text_b.append(_evidence(rng, name, relation, city, rule, member))
                labels.append(rule)
                members.append(member_name(task, rule, member))
        return Split(OOD_NAMES[task], text_a, text_b, np.array(labels), LABELS[task], subsets={"member": members})
    ys = rng.permutation(np.arange(n) % 2)  # exactly balanced
    drawn = np.zeros(n, dtype=np.int64)
    for y in (0, 1):
        drawn[ys == y] = _equally_often(rng, int((ys == y).sum()))
    for y, member in zip(ys, drawn):
        rule = cue_label if y == 0 else ambiguous
        a, b = GENERATORS[task](rng, rule, int(member), True)
        text_a.append(a)
        text_b.append(b)
        labels.append(rule)
        members.append(member_name(task, rule, int(member)))
    if task == "nli":  # HANS labels: entailment vs non-entailment (hedged premises)
        return Split(OOD_NAMES[task], text_a, text_b, np.array([0 if r == 0 else 1 for r in labels]),
                     HANS_LABELS, HANS_COLLAPSE, subsets={"member": members})
    return Split(OOD_NAMES[task], text_a, text_b, np.array(labels), LABELS[task], subsets={"member": members})


def _equally_often(rng, count: int) -> np.ndarray:
    """`count` members, each as often as the others to one, in random order."""
    return rng.permutation(np.resize(np.arange(MEMBERS), count))


def make_task(task: str, train_size: int, dev_size: int, ood_size: int,
              bias_strength: float = 0.9, seed: int = 0, ood_train: bool = False,
              ambiguity: float = 0.6, member_skew: float = 0.0, test_size: int | None = None) -> TaskData:
    """Generate a task deterministically from `seed`. With `ood_train` (section 4.5) an OOD-
    distributed training set of OOD_TRAIN_SHARE times `train_size` is mixed into the training data. With
    `test_size` an ID test split is drawn as dev is, from a random stream of its own (the other
    splits are the same with or without it)."""
    if task not in GENERATORS:
        raise ValueError(f"unknown task {task!r}; accepted: {sorted(GENERATORS)}")
    task_index = sorted(GENERATORS).index(task)
    rngs = [np.random.default_rng([seed, task_index, part]) for part in range(5)]
    train = _id_split(task, "train", train_size, bias_strength, ambiguity, rngs[0], member_skew)
    if ood_train:
        extra = _ood_split(task, int(train_size * OOD_TRAIN_SHARE), rngs[3])
        if task == "nli":  # HANS labels back to MNLI's: non-entailment (hedged) is neutral
            extra = Split(extra.name, extra.text_a, extra.text_b, extra.labels, LABELS[task])
        train = train.concat(extra, "train+ood")
    return TaskData(
        task=task, label_names=LABELS[task],
        metric=spec(task).metric, ood_metric=spec(task).ood_metric,
        train=train, dev=_id_split(task, "dev", dev_size, bias_strength, ambiguity, rngs[1], member_skew),
        ood={OOD_NAMES[task]: _ood_split(task, ood_size, rngs[2])},
        test=None if test_size is None else _id_split(task, "test", test_size, bias_strength, ambiguity, rngs[4],
                                                      member_skew),
        description=(f"synthetic {task}, bias strength {bias_strength}, ambiguity {ambiguity}"
                     + (f", member skew {member_skew:g}" if member_skew else "") + f", seed {seed}"),
    )
