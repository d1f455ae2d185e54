"""SQuAD v1.1 (TAMT section 4.1): its questions from the json files and the hub's schema (offline,
tests/transfer_fixture.py), the 384-token windows with doc stride 128 (their gold positions map back
to the answer text; an answer outside a window is [CLS]), and answers recovered from logits."""

import json

import numpy as np
import pytest

from srnets_lib.data import hub, squad
from srnets_lib.data.local import DataFileError
from srnets_lib.data.squad import QAExample
from srnets_lib.models import load_tokenizer
from transfer_fixture import squad_hub, write_squad


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer("packaged")


@pytest.fixture
def fake_hub(monkeypatch):
    fixture = squad_hub()
    monkeypatch.setattr(hub, "_load_dataset", lambda hub_id, config: fixture[(hub_id, config)])


@pytest.mark.parametrize("source", ["local", "hub"])
def test_questions_with_every_gold_answer(tmp_path, fake_hub, source):
    data = squad.load_squad(source, write_squad(tmp_path))
    assert [e.id for e in data.train] == ["t1", "t2", "t3"] and [e.id for e in data.dev] == ["d1", "d2"]
    first = data.dev[0]
    assert first.question == "How long is the Rhine?"
    assert first.answers == ("about 1,230 kilometres", "1,230 kilometres", "1,230 kilometres")
    assert first.context[first.answer_starts[1]:].startswith("1,230 kilometres")
    assert squad.load_squad(source, tmp_path, train_size=2).train == data.train[:2]


def test_training_skips_questions_whose_answer_is_not_at_its_start(tmp_path):
    path = write_squad(tmp_path) / "squad" / "train-v1.1.json"
    content = json.loads(path.read_text())
    content["data"][0]["paragraphs"][0]["qas"][0]["answers"][0]["answer_start"] += 1
    path.write_text(json.dumps(content))
    data = squad.load_squad("local", tmp_path)
    assert [e.id for e in data.train] == ["t2", "t3"]
    assert "skipped 1 training questions whose answer is not at its answer_start" in data.description


def test_malformed_files_say_where(tmp_path):
    path = tmp_path / "dev-v1.1.json"
    path.write_text('{"data": [\n{"paragraphs": [}\n')
    with pytest.raises(DataFileError, match=r"dev-v1.1.json, line 2: not valid JSON"):
        squad.read_squad_json(path)
    path.write_text(json.dumps({"data": [{"paragraphs": [{"context": "c", "qas": [
        {"id": "a", "question": "q?", "answers": []}, {"id": "b", "answers": []}]}]}]}))
    with pytest.raises(DataFileError, match=r"dev-v1.1.json: missing field 'question' after question a"):
        squad.read_squad_json(path)
    with pytest.raises(DataFileError, match=r"SQuAD v1.1: .*train-v1.1.json not found; get it from rajpurkar"):
        squad.load_squad("local", tmp_path)


def long_examples():
    """One ~900-token context with answers spread over it, and a short one."""
    sentences = [f"In year {1800 + i} the village of Town{i} painted its bridge colour{i} ." for i in range(70)]
    context = " ".join(sentences)
    examples = [QAExample(f"q{i}", f"Which colour did Town{i} paint its bridge in year {1800 + i}?", context,
                          (f"colour{i}",), (context.index(f"colour{i} "),)) for i in (0, 17, 33, 34, 52, 69)]
    short = "The ferry leaves the harbour at seven o'clock."
    return examples + [QAExample("short", "When does the ferry leave?", short, ("seven o'clock",), (32,))]


def context_range(windows, i):
    spans = windows.char_spans[windows.tokens(i)]
    inside = spans[spans[:, 0] >= 0]
    return inside[0, 0], inside[-1, 1], spans


def test_windows_cover_the_context_with_stride_and_map_gold_back(tokenizer):
    examples = long_examples()
    windows = squad.features(examples, tokenizer)  # 384 tokens, doc stride 128, max query 64
    assert windows.example.tolist() == sorted(windows.example.tolist())
    assert np.bincount(windows.example).tolist()[0] > 2 and windows.example.tolist().count(6) == 1
    for i in range(len(windows)):
        example = examples[windows.example[i]]
        first, last, spans = context_range(windows, i)
        assert len(spans) <= 384 and windows.encoded.ids[windows.tokens(i)][0] == tokenizer.cls_token_id
        start, end = windows.encoded.labels[i]
        gold_start = example.answer_starts[0]
        if first <= gold_start and gold_start + len(example.answers[0]) <= last:
            assert example.context[spans[start, 0]:spans[end, 1]] == example.answers[0]
        else:
            assert (start, end) == (0, 0)  # the answer is not in this window: [CLS]
    # consecutive windows of an example start 128 context tokens apart; the last reaches the end
    ones = np.flatnonzero(windows.example == 0)
    for a, b in zip(ones, ones[1:]):
        spans_a = context_range(windows, a)[2]
        context_a = spans_a[spans_a[:, 0] >= 0]
        assert context_range(windows, b)[0] == context_a[128, 0]
    assert context_range(windows, ones[-1])[1] == len(examples[0].context)


def test_every_context_token_has_its_max_context_in_exactly_one_window(tokenizer):
    examples = long_examples()[:1]
    windows = squad.features(examples, tokenizer, max_length=96, stride=32)
    owned = {}
    for i in range(len(windows)):
        spans = windows.char_spans[windows.tokens(i)]
        flags = windows.max_context[windows.tokens(i)]
        assert not flags[spans[:, 0] < 0].any()  # question and special tokens never
        for span in map(tuple, spans[flags]):
            assert span not in owned
            owned[span] = i
    all_tokens = {tuple(s) for i in range(len(windows)) for s in windows.char_spans[windows.tokens(i)] if s[0] >= 0}
    assert set(owned) == all_tokens


def peaked_logits(windows, far_end=None):
    """Logits 10 at each window's gold start and end (and 0 elsewhere); `far_end`: an end logit
    of 15 that many tokens after the gold start: the best pair if it were not too long an answer."""
    starts, ends = [], []
    for i in range(len(windows)):
        size = windows.tokens(i).stop - windows.tokens(i).start
        start, end = np.zeros(size + 5), np.zeros(size + 5)  # padded rows: the extra positions are ignored
        s, e = windows.encoded.labels[i]
        if s:
            start[s], end[e] = 10.0, 10.0
            if far_end is not None and s + far_end < size:
                end[s + far_end] = 15.0
        starts.append(start)
        ends.append(end)
    return starts, ends


@pytest.mark.parametrize("far_end", [None, 40])
def test_predictions_recover_the_gold_answers(tokenizer, far_end):
    examples = long_examples()
    windows = squad.features(examples, tokenizer)
    answers = squad.predictions(windows, *peaked_logits(windows, far_end))
    assert answers == {e.id: e.answers[0] for e in examples}


def test_predictions_without_a_valid_span_are_empty(tokenizer):
    examples = long_examples()[-1:]
    windows = squad.features(examples, tokenizer)
    size = windows.tokens(0).stop
    start = np.zeros(size)
    start[0] = 50.0  # [CLS] is never a start: among the 20 best, the first one-token span in the context
    end = np.zeros(size)
    assert squad.predictions(windows, [start], [end], max_answer=1) == {"short": "The"}
    assert squad.predictions(windows, [start], [end], n_best=1) == {"short": "empty"}
