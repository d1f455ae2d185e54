"""SQuAD v1.1, the span-extraction task TAMT transfers to (section 4.1): its questions from the hub
(`rajpurkar/squad`, parquet) or the original json files; their 384-token windows; answers from logits.

Local layout: `<data.path>/squad/train-v1.1.json, dev-v1.1.json` (nested data/paragraphs/qas).
"""

from __future__ import annotations

import hashlib
import itertools
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from srnets_lib.data import hub, local
from srnets_lib.data.encode import Encoded
from srnets_lib.data.local import DataFileError, decoded

SQUAD = "rajpurkar/squad"
SQUAD_FILES = {"train": "train-v1.1.json", "dev": "dev-v1.1.json"}
SQUAD_HUB_SPLITS = {"train": "train", "dev": "validation"}


@dataclass(frozen=True)
class QAExample:
    """One question: its id, the question, its context paragraph, and its gold answers (texts and
    character starts in the context; dev questions have several, train questions one)."""

    id: str
    question: str
    context: str
    answers: tuple[str, ...]
    answer_starts: tuple[int, ...]


@dataclass
class SquadData:
    """SQuAD's questions as a run reads them: what fit.py records of a task (its metric, no OOD
    sets) beside the train and dev questions."""

    train: list[QAExample]
    dev: list[QAExample]
    description: str = ""  # the source, and what training left out
    task: str = "squad"
    metric: str = "squad_f1"  # the dev F1, also the checkpoint-selection metric (squad_trans.py: 'f1')
    ood: dict = field(default_factory=dict)  # none
    ood_missing: dict = field(default_factory=dict)  # none missing: SQuAD has no OOD sets

    def metric_of(self, split: str) -> str:
        return self.metric

    def fingerprints(self) -> dict[str, str]:
        """Split name -> fingerprint of its questions (ids, questions, contexts, gold answers)."""
        return {"train": questions_fingerprint(self.train), "dev": questions_fingerprint(self.dev)}


def questions_fingerprint(examples: list[QAExample]) -> str:
    digest = hashlib.sha256()
    for e in examples:
        digest.update(json.dumps([e.id, e.question, e.context, e.answers, e.answer_starts]).encode())
    return digest.hexdigest()[:16]


def read_squad_json(path: Path) -> list[QAExample]:
    """Every question of a SQuAD v1.1 json file, in file order."""
    if not path.is_file():
        raise DataFileError(f"SQuAD v1.1: {path} not found; get it from rajpurkar.github.io/SQuAD-explorer, "
                            "or use data.source=hub")
    try:
        with decoded(path):
            articles = json.loads(path.read_text(encoding="utf-8"))["data"]
    except json.JSONDecodeError as err:
        raise DataFileError(f"{path}, line {err.lineno}: not valid JSON ({err.msg})") from None
    except (KeyError, TypeError):
        raise DataFileError(f"{path}: no top-level 'data' list (SQuAD v1.1's data/paragraphs/qas)") from None
    examples: list[QAExample] = []
    try:
        for article in articles:
            for paragraph in article["paragraphs"]:
                for qa in paragraph["qas"]:
                    examples.append(QAExample(qa["id"], qa["question"], paragraph["context"],
                                              tuple(a["text"] for a in qa["answers"]),
                                              tuple(int(a["answer_start"]) for a in qa["answers"])))
    except (KeyError, TypeError) as err:
        after = f"after question {examples[-1].id}" if examples else "at the first question"
        raise DataFileError(f"{path}: missing field {err} {after} (expected data/paragraphs/qas with "
                            "id, question, answers of text and answer_start, and each paragraph's context)") from None
    return examples


def _hub_examples(loaded, hub_split: str) -> list[QAExample]:
    where = f"{SQUAD} {hub_split}"
    if hub_split not in loaded:
        raise DataFileError(f"{where}: no such split; the hub has {sorted(loaded)}")
    wanted = ["id", "question", "context", "answers"]
    missing = [c for c in wanted if c not in loaded[hub_split].column_names]
    if missing:
        raise DataFileError(f"{where}: missing column(s) {missing}; it has {loaded[hub_split].column_names}")
    rows = loaded[hub_split].select_columns(wanted).to_dict()
    return [QAExample(i, q, c, tuple(a["text"]), tuple(int(s) for s in a["answer_start"]))
            for i, q, c, a in zip(rows["id"], rows["question"], rows["context"], rows["answers"])]


def answer_found(example: QAExample) -> bool:
    """The first gold answer's text sits at its answer_start in the context."""
    if not example.answers:
        return False
    start = example.answer_starts[0]
    return example.context[start:start + len(example.answers[0])] == example.answers[0]


SQUAD_ROWS = {"train": 87_599, "dev": 10_570}  # questions of SQuAD v1.1's files (data/tasks.py)


def hub_datasets(task: str = "squad") -> list[tuple[str, str, tuple[str, ...]]]:
    """(hub id, config, the splits read) of SQuAD v1.1 on the hub."""
    return [(SQUAD, "plain_text", tuple(SQUAD_HUB_SPLITS.values()))]


def expected_files(task: str, folder) -> list[tuple[str, Path]]:
    """(dataset, path) of the files a local SQuAD run reads, without reading them."""
    root = local.data_folder(folder) / "squad"
    return [("SQuAD v1.1", root / file) for file in SQUAD_FILES.values()]


def load_squad(source: str, folder: str | Path | None = None, train_size: int | None = None,
               sizes: bool = False) -> SquadData:
    """Train (its first `train_size` usable questions) and dev questions from `source` "hub" or
    "local" (the files under `folder`; with `sizes`, each checked against its published number of
    questions). Training keeps the questions whose first answer is found
    at its start, as squad_convert_example_to_features (used by imp_and_fine_tune/squad_trans.py
    of llyx97/TAMT) skips those it cannot find; a note counts the others."""
    if source == "local":
        root = local.data_folder(folder) / "squad"
        splits = {name: read_squad_json(root / file) for name, file in SQUAD_FILES.items()}
        described = f"local files in {root}"
    elif source == "hub":
        loaded = hub._load_dataset(SQUAD, "plain_text")
        splits = {name: _hub_examples(loaded, hub_split) for name, hub_split in SQUAD_HUB_SPLITS.items()}
        described = f"hub {SQUAD} (plain_text)"
    else:
        raise ValueError(f"unknown SQuAD source {source!r}; accepted: hub, local")
    for name, questions in splits.items():
        where = (local.data_folder(folder) / "squad" / SQUAD_FILES[name] if source == "local"
                 else f"{SQUAD} (plain_text) {SQUAD_HUB_SPLITS[name]}")
        local.check_rows(len(questions), (SQUAD_ROWS[name],), where, sizes)
    train = [e for e in splits["train"] if answer_found(e)]
    if splits["train"] and not train:
        where = root / SQUAD_FILES["train"] if source == "local" else f"{SQUAD} {SQUAD_HUB_SPLITS['train']}"
        first = splits["train"][0]
        raise DataFileError(f"{where}: no training question's answer is at its answer_start (question {first.id}: "
                            f"{(first.answers or ('none',))[0][:60]!r} is not at character "
                            f"{(first.answer_starts or ('-',))[0]} of its context); is it SQuAD v1.1?")
    notes = [f"skipped {len(splits['train']) - len(train)} training questions whose answer is not at its "
             "answer_start"] if len(train) < len(splits["train"]) else []
    return SquadData(train[:train_size], splits["dev"], "; ".join([described, *notes]))


# --- windows (features in HF's run_squad) and predictions ---------------------------------------

@dataclass
class Windows:
    """The windows of `examples`: each holds [CLS] question [SEP] a stretch of the context [SEP].

    `encoded` holds the model inputs flat, as data/encode.py stores them (collate and the batch
    orders apply); its labels are the (start, end) token positions of the first gold answer, (0, 0)
    = [CLS] when the answer is not wholly inside the window. Per token, flat beside encoded.ids:
    `char_spans`, its character span in the context ((-1, -1) outside the context), and
    `max_context`, whether this window gives it the most context of all windows holding it (only
    there may an answer start: _check_is_max_context of the authors' hg_transformers)."""

    examples: list[QAExample]
    encoded: Encoded
    example: np.ndarray  # per window: its example's index in `examples`
    char_spans: np.ndarray
    max_context: np.ndarray

    def __len__(self) -> int:
        return len(self.example)

    def tokens(self, i: int) -> slice:
        """Where window i's tokens sit in the flat arrays."""
        return slice(int(self.encoded.offsets[i]), int(self.encoded.offsets[i + 1]))


def _truncated_questions(questions: list[str], tokenizer, max_query: int) -> list[str]:
    """Each question cut after its `max_query`-th token (squad_convert_example_to_features'
    truncated_query)."""
    spans = tokenizer(questions, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
    return [q if len(s) <= max_query else q[:s[max_query - 1][1]] for q, s in zip(questions, spans)]


def _answer_tokens(spans: np.ndarray, context: np.ndarray, example: QAExample) -> tuple[int, int]:
    """Token positions of the first answer's first and last characters, (0, 0) if not all inside."""
    if not example.answers:
        return 0, 0
    start_char = example.answer_starts[0]
    end_char = start_char + len(example.answers[0])
    starts, ends = spans[context, 0], spans[context, 1]
    if starts[0] > start_char or ends[-1] < end_char:
        return 0, 0
    return (int(context[0] + np.searchsorted(starts, start_char, side="right") - 1),
            int(context[0] + np.searchsorted(ends, end_char, side="left")))


def _max_context(lengths: list[int], stride: int) -> list[np.ndarray]:
    """Per window of one example (window k starts at context token k * stride): whether each of
    its context tokens has its highest score min(left, right) + 0.01 * length there (first window
    on ties), the rule of the authors' _new_check_is_max_context."""
    total = (len(lengths) - 1) * stride + lengths[-1]
    best, owner = np.full(total, -np.inf), np.full(total, -1)
    for k, n in enumerate(lengths):
        position = np.arange(n)
        score = np.minimum(position, n - 1 - position) + 0.01 * n
        better = score > best[k * stride:k * stride + n]
        best[k * stride + position[better]] = score[better]
        owner[k * stride + position[better]] = k
    return [owner[k * stride:k * stride + n] == k for k, n in enumerate(lengths)]


def _windows_of_group(examples, questions, group, tokenizer, max_length, overlap):
    """(example index, ids, type ids, char spans, (start, end), in context) of every window of
    the examples in `group`, whose questions all have the same length."""
    out = tokenizer([questions[i] for i in group], [examples[i].context for i in group], truncation="only_second",
                    max_length=max_length, stride=overlap, return_overflowing_tokens=True,
                    return_offsets_mapping=True, return_token_type_ids=True)
    rows = []
    for j, sample in enumerate(out["overflow_to_sample_mapping"]):
        in_context = np.array([s == 1 for s in out.sequence_ids(j)])
        spans = np.where(in_context[:, None], np.array(out["offset_mapping"][j]).reshape(-1, 2), -1)
        position = _answer_tokens(spans, np.flatnonzero(in_context), examples[group[sample]])
        rows.append((group[sample], out["input_ids"][j], out["token_type_ids"][j], spans, position, in_context))
    return rows


def features(examples: list[QAExample], tokenizer, max_length: int = 384, stride: int = 128,
             max_query: int = 64) -> Windows:
    """The windows of `examples` as squad_convert_examples_to_features makes them for
    imp_and_fine_tune/squad_trans.py of llyx97/TAMT (max_seq_length 384, doc_stride 128,
    max_query_length 64): the question cut to `max_query` tokens, the context in windows of the
    tokens left, window k starting at context token k * `stride` (the fast tokenizer's overflow
    keeps the rest of each window as overlap), the last one reaching the context's end."""
    questions = _truncated_questions([e.question for e in examples], tokenizer, max_query)
    lengths = [len(ids) for ids in tokenizer(questions, add_special_tokens=False)["input_ids"]]
    room = max_length - tokenizer.num_special_tokens_to_add(pair=True)
    if room - max(lengths) < stride:
        raise ValueError(f"max_length {max_length} leaves {room - max(lengths)} context tokens beside a "
                         f"{max(lengths)}-token question, fewer than the stride {stride}")
    rows = []
    for length in sorted(set(lengths)):  # one tokenizer call per question length: one overlap each
        group = [i for i, n in enumerate(lengths) if n == length]
        rows += _windows_of_group(examples, questions, group, tokenizer, max_length, room - length - stride)
    rows.sort(key=lambda row: row[0])  # stable: an example's windows stay in order
    max_context = []
    for _, windows in itertools.groupby(rows, key=lambda row: row[0]):
        windows = list(windows)
        for (*_, in_context), owned in zip(windows, _max_context([int(w[-1].sum()) for w in windows], stride)):
            flags = np.zeros(len(in_context), dtype=bool)
            flags[in_context] = owned
            max_context.append(flags)
    sizes = [len(row[1]) for row in rows]
    encoded = Encoded(np.concatenate([np.asarray(row[1], dtype=np.int32) for row in rows]),
                      np.concatenate([np.asarray(row[2], dtype=np.int8) for row in rows]),
                      np.concatenate([[0], np.cumsum(sizes)]), np.array([row[4] for row in rows], dtype=np.int64))
    return Windows(examples, encoded, np.array([row[0] for row in rows], dtype=np.int64),
                   np.concatenate([row[3] for row in rows]), np.concatenate(max_context))


def predictions(windows: Windows, start_logits, end_logits, n_best: int = 20, max_answer: int = 30) -> dict[str, str]:
    """Each question's answer: over its windows, the span of the highest start + end logit among
    a window's `n_best` best starts and ends, with its start where the window gives it max context,
    its end in the context, start <= end and at most `max_answer` tokens; "empty" if none is.
    compute_predictions_logits of the authors' hg_transformers for v1.1 (n_best 20, max_answer 30),
    cutting the text from the context by character spans instead of re-aligning tokens.
    Row i of the logits is window i's (at least its length; positions past it are ignored)."""
    best: dict[int, tuple[float, str]] = {}
    for i, example in enumerate(windows.example.tolist()):
        tokens = windows.tokens(i)
        size = tokens.stop - tokens.start
        start, end = (np.asarray(logits[i], dtype=np.float64)[:size] for logits in (start_logits, end_logits))
        if len(start) < size or len(end) < size:
            raise ValueError(f"window {i} has {size} tokens but {len(start)} start and {len(end)} end logits")
        firsts = np.argsort(-start, kind="stable")[:n_best, None]
        lasts = np.argsort(-end, kind="stable")[None, :n_best]
        spans = windows.char_spans[tokens]
        valid = (windows.max_context[tokens][firsts] & (spans[lasts, 0] >= 0) & (lasts >= firsts)
                 & (lasts - firsts < max_answer))
        if not valid.any():
            continue
        score = np.where(valid, start[firsts] + end[lasts], -np.inf)
        a, b = np.unravel_index(np.argmax(score), score.shape)  # the first best, as the authors' stable sort
        if example not in best or score[a, b] > best[example][0]:
            context = windows.examples[example].context
            best[example] = (score[a, b], context[spans[firsts[a, 0], 0]:spans[lasts[0, b], 1]])
    return {e.id: best[k][1] if k in best else "empty" for k, e in enumerate(windows.examples)}
