"""SQuAD v1.1 (TAMT section 4.1): its questions from the json files and the hub's schema (offline,
tests/transfer_fixture.py), the 384-token windows with doc stride 128 (their gold positions map back
to the answer text; an answer outside a window is [CLS]), answers recovered from logits, the span
loss as the QA head computes it, the dev scores, and a corpus mask's subnetwork fine-tuned on it."""

import json

import numpy as np
import pytest

from srnets_lib.data import hub, squad
from srnets_lib.data.local import DataFileError
from srnets_lib.data.squad import QAExample
from srnets_lib.model.backbones import load_tokenizer
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


def test_a_file_with_no_answer_at_its_start_names_the_file_and_a_question(tmp_path, store):
    """Training keeps only questions whose answer is at its answer_start: with none left, the run
    stops in one line naming the file and the first question (before, an IndexError in windowing)."""
    from srnets_lib.sweeps.executors import execute

    path = write_squad(tmp_path) / "squad" / "train-v1.1.json"
    content = json.loads(path.read_text())
    for article in content["data"]:
        for qa in article["paragraphs"][0]["qas"]:
            qa["answers"][0]["answer_start"] += 1
    path.write_text(json.dumps(content))
    with pytest.raises(DataFileError) as err:
        execute(squad_run(tmp_path))
    message = str(err.value)
    assert message.startswith(f"{path}: no training question's answer is at its answer_start")
    assert "question t1" in message and len(message.splitlines()) == 1


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


def squad_run(folder, **overrides):
    """A SQuAD run on the fixture files: the tiny model, 128-token windows, 2 windows a batch."""
    from srnets_lib.settings.config import DataConfig, RunConfig

    settings = dict(task="squad", backbone="tiny", max_length=128, batch_size=2, epochs=1, eval_interval=1,
                    data=DataConfig(source="local", path=str(folder), check_sizes=False))
    return RunConfig(**{**settings, **overrides})


def test_load_task_reads_the_first_questions_and_fingerprints_them(tmp_path):
    from srnets_lib.settings.config import DataConfig
    from srnets_lib.data.load import fingerprints, load_task

    write_squad(tmp_path)
    data = load_task("squad", DataConfig(source="local", path=str(tmp_path), train_size=2, dev_size=1, check_sizes=False))
    assert [e.id for e in data.train] == ["t1", "t2"] and [e.id for e in data.dev] == ["d1"]
    assert data.metric == "squad_f1" and data.ood == {}
    whole = load_task("squad", DataConfig(source="local", path=str(tmp_path), check_sizes=False))
    before, after = fingerprints(data), fingerprints(whole)
    assert set(before) == {"train", "dev"} and before["train"] != after["train"] and before["dev"] != after["dev"]
    with pytest.raises(ValueError, match="task squad has no synthetic version"):
        load_task("squad", DataConfig(train_size=2, dev_size=2, ood_size=2))


def test_span_loss_is_the_qa_heads_own(tmp_path, tokenizer):
    """span_kind.SpanLoss gives what BertForQuestionAnswering computes from start and end positions
    (the loss squad_trans.py of llyx97/TAMT trains on)."""
    import torch

    from srnets_lib.model import backbones
    from srnets_lib.engine import runtime
    from srnets_lib.engine.kinds import span as span_kind
    from srnets_lib.data.encode import collate

    windows = squad.features(squad.load_squad("local", write_squad(tmp_path)).train, tokenizer, 128, 42)
    model = backbones.load_qa_model("tiny").eval()  # no dropout: both forwards see the same model
    inputs = runtime.model_inputs(collate(windows.encoded, np.arange(len(windows)), tokenizer.pad_token_id))
    labels = torch.from_numpy(windows.encoded.labels)
    ours = span_kind.SpanLoss(model, "fp32")({"inputs": inputs, "labels": labels})
    theirs = model(**inputs, start_positions=labels[:, 0], end_positions=labels[:, 1]).loss
    assert torch.allclose(ours, theirs)


class PeakedModel:
    """A stand-in QA model: start and end logits 10 at each window's gold positions (`shift`
    tokens earlier for the end), found by the window's token ids."""

    def __init__(self, windows, shift=0):
        self.gold = {tuple(windows.encoded.ids[windows.tokens(i)].tolist()): windows.encoded.labels[i]
                     for i in range(len(windows))}
        self.shift = shift

    def __call__(self, input_ids, attention_mask, token_type_ids):
        from types import SimpleNamespace

        import torch

        start, end = torch.zeros(input_ids.shape), torch.zeros(input_ids.shape)
        for row, (ids, mask) in enumerate(zip(input_ids, attention_mask)):
            s, e = self.gold[tuple(ids[mask.bool()].tolist())]
            start[row, s], end[row, e - self.shift] = 10.0, 10.0
        return SimpleNamespace(start_logits=start, end_logits=end)

    def named_modules(self):
        return iter(())

    def eval(self):
        return self

    def train(self):
        return self


def test_dev_scores_are_f1_and_exact_match_against_every_gold_answer(tmp_path, tokenizer):
    from srnets_lib.engine.kinds import span as span_kind

    windows = squad.features(squad.load_squad("local", write_squad(tmp_path)).dev, tokenizer, 128, 42)
    evaluator = span_kind.SpanEvaluator(windows, 1, tokenizer.pad_token_id, "fp32")
    assert evaluator.scores(PeakedModel(windows)) == {"dev": 1.0, "dev_squad_exact_match": 1.0}
    short = evaluator.scores(PeakedModel(windows, shift=1))  # each answer one token short
    assert short["dev_squad_exact_match"] == 0.0 and 0.0 < short["dev"] < 1.0
    assert evaluator.scores(PeakedModel(windows), ("dev_mismatched",)) == {} and evaluator.ood == ()


def test_squad_runs_are_eager_and_say_so(store, tmp_path, monkeypatch):
    from srnets_lib.engine import runtime
    from srnets_lib.training.prepare import build_run
    from srnets_lib.settings.request import Request
    from srnets_lib.store.runs import Run

    write_squad(tmp_path)
    monkeypatch.setattr(runtime, "compiled", lambda: True)
    config = squad_run(tmp_path)
    with pytest.warns(UserWarning, match="SQuAD runs are not compiled; this one runs eagerly"):
        run = build_run(config, Run(config), Request())
    assert run.forward.__class__.__name__ == "SpanLoss"


@pytest.mark.parametrize("padding", ["dynamic", "max_length"])
def test_a_subnetwork_transfers_to_squad_from_its_files(store, tmp_path, padding):
    """TAMT's transfer (section 4.1) to SQuAD v1.1 on its own files: a one-shot mask found on the
    corpus (pooler included), the subnetwork fine-tuned with a fresh span head (no pooler: its
    mask is left out) on the training windows, scored by dev F1 (the run's score) and exact match."""
    import torch

    from srnets_lib.model import backbones, pruning
    from srnets_lib.training.prepare import build_run
    from srnets_lib.settings.config import DataConfig, RunConfig
    from srnets_lib.sweeps.executors import execute
    from srnets_lib.settings.request import Request
    from srnets_lib.store.runs import Run

    write_squad(tmp_path)
    omp = RunConfig(task="corpus", method="omp", loss="mlm", sparsity=0.5, backbone="tiny", max_length=32,
                    data=DataConfig(train_size=4, dev_size=2, ood_size=2))
    transfer = squad_run(tmp_path, padding=padding, mask_from=omp)
    result = execute(transfer, Request(weights=True))
    assert result.metric == "squad_f1" and set(result.scores) == {"dev_squad_exact_match"} and result.ood == {}
    assert 0.0 <= result.scores["dev_squad_exact_match"] <= result.id <= 1.0  # EM never above F1
    assert result.steps_run == 2 and result.sparsity == pytest.approx(0.5, abs=0.02)  # 3 windows, batch 2
    assert Run(transfer).serves(Request(weights=True))  # its data fingerprint reads the same again
    run = build_run(transfer, Run(transfer), Request())
    source, masked = Run(omp).masks(), pruning.masked_modules(run.model)
    assert "bert.pooler.dense" in source and not any("pooler" in n for n, _ in run.model.named_modules())
    assert set(masked) == {n for n in source if backbones.is_transformer_matrix(n)}
    assert all(torch.equal(m.mask, source[n]) for n, m in masked.items())
    Run(transfer).load_weights(run.model)  # the weights it trained score what it recorded
    assert run.evaluator.scores(run.model)["dev"] == pytest.approx(result.id)
