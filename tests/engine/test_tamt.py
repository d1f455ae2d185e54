"""Task-agnostic mask training (TAMT, Liu et al. NAACL 2022) as definitions: MLM corruption,
the KD loss, random mask init, IMP rewinding the backbone only, mask similarity, masks fixed
in transfer; and the task-agnostic runs end to end on the tiny model."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from srnets_lib import methods
from srnets_lib.model import backbones, pruning
from srnets_lib.engine.kinds import corpus as corpus_kind
from srnets_lib.training.prepare import build_run
from srnets_lib.settings.config import DataConfig, RunConfig
from srnets_lib.sweeps.executors import execute
from srnets_lib.settings.request import Request
from srnets_lib.store.runs import Run

CORPUS = dict(task="corpus", backbone="tiny", data=DataConfig(train_size=24, dev_size=4, ood_size=4),
              max_length=32, batch_size=8, lr=1e-2, eval_interval=3)


def test_mlm_corrupts_15_percent_of_the_tokens_80_10_10_and_never_a_special_one():
    rng = np.random.default_rng(0)
    ids = rng.integers(5, 1000, size=(400, 250))
    special = np.zeros(ids.shape, dtype=bool)
    special[:, 0] = special[:, -1] = True
    inputs, labels = corpus_kind.corrupt(ids, special, 1000, 3, rng)
    chosen = labels != corpus_kind.IGNORE
    assert chosen.mean() == pytest.approx(0.15 * 248 / 250, abs=0.003) and not chosen[special].any()
    assert (labels[chosen] == ids[chosen]).all() and (inputs[~chosen] == ids[~chosen]).all()
    masked, kept = (inputs[chosen] == 3).mean(), (inputs[chosen] == ids[chosen]).mean()
    assert masked == pytest.approx(0.8, abs=0.01) and kept == pytest.approx(0.1 + 0.1 / 1000, abs=0.01)


def test_kd_loss_is_the_mean_over_layers_1_to_l_of_one_minus_cosine():
    torch.manual_seed(0)
    student, teacher = ([torch.randn(2, 5, 8) for _ in range(4)] for _ in range(2))
    expected = np.mean([np.mean(1 - F.cosine_similarity(s, t, dim=-1).numpy()) for s, t in zip(student[1:], teacher[1:])])
    assert corpus_kind.kd_loss(tuple(student), tuple(teacher)).item() == pytest.approx(expected, rel=1e-6)
    assert corpus_kind.kd_loss(tuple(student), tuple(student)).item() == pytest.approx(0.0, abs=1e-6)


def test_random_mask_init_prunes_a_seeded_random_k_with_the_hard_scores():
    a, b = (pruning.MaskedLinear(torch.nn.Linear(30, 20)) for _ in range(2))
    b.weight.data.copy_(a.weight.data)
    for module in (a, b):
        module.start_mask_training("random", 0.7, generator=torch.Generator().manual_seed(3))
    assert torch.equal(a.binary_mask(), b.binary_mask()) and (~a.binary_mask()).sum() == 420
    assert sorted(a.mask_scores.detach().unique().tolist()) == [0.0, pytest.approx(0.02)]
    hard = pruning.MaskedLinear(torch.nn.Linear(30, 20))
    hard.weight.data.copy_(a.weight.data)
    hard.start_mask_training("hard", 0.7)
    assert not torch.equal(hard.binary_mask(), a.binary_mask())  # not the magnitude mask


def test_jaccard_on_known_masks():
    a = {"m": torch.tensor([1, 1, 0, 0], dtype=torch.bool), "n": torch.tensor([1, 0], dtype=torch.bool)}
    b = {"m": torch.tensor([1, 0, 1, 0], dtype=torch.bool), "n": torch.tensor([1, 0], dtype=torch.bool)}
    assert pruning.jaccard(a, b) == pytest.approx((1 / 3 + 1) / 2)  # unweighted mean over matrices
    assert pruning.jaccard(a, a) == 1.0
    with pytest.raises(pruning.MaskFileError, match="different matrices"):
        pruning.jaccard(a, {"m": a["m"]})


def test_imp_rewinds_the_backbone_to_theta_0_and_not_the_mlm_head():
    config = RunConfig(method="imp-rw", loss="mlm", sparsity=0.2, imp_rewind=True, epochs=6, **CORPUS)
    method = methods.create(config, 24)  # 3 steps per epoch, t_max 18: prune every 1 step
    model = backbones.load_pretraining_model("tiny")
    pruning.install(model, method.masked_layers())
    method.prepare(model)
    theta_0 = {n: p.detach().clone() for n, p in model.named_parameters()}
    with torch.no_grad():
        for p in model.parameters():
            p.add_(1.0)  # as if trained
    method.before_step(model, 1)  # the second pruning: to 20%, by the trained magnitudes
    for name, p in model.named_parameters():
        assert torch.equal(p, theta_0[name]) == name.startswith("bert."), name
    assert all((~m.mask).float().mean() == pytest.approx(0.2, abs=0.01) for m in pruning.masked_modules(model).values())


def test_mask_training_on_the_corpus_trains_the_scores_and_the_mlm_head_only():
    config = RunConfig(method="mask", loss="mlm", sparsity=0.5, **CORPUS)
    method = methods.create(config, 24)
    model = backbones.load_pretraining_model("tiny")
    pruning.install(model, method.masked_layers())
    method.prepare(model)
    names = {id(p): n for n, p in model.named_parameters()}
    trained = {names[id(p)] for p in method.trainable(model)}
    assert {n for n in trained if not n.endswith("mask_scores")} == {
        "cls.predictions.bias", "cls.predictions.transform.dense.weight", "cls.predictions.transform.dense.bias",
        "cls.predictions.transform.LayerNorm.weight", "cls.predictions.transform.LayerNorm.bias"}
    assert "bert.embeddings.word_embeddings.weight" not in trained  # the tied decoder stays frozen


def test_task_agnostic_runs_then_transfer_with_the_mask_fixed(store):
    """A mask trained on the corpus (MLM+KD, taken at max_steps, no selection) serves a task: its
    subnetwork is fine-tuned with a fresh head and the mask never changes."""
    tamt = RunConfig(method="mask", loss="mlm+kd", sparsity=0.5, epochs=4, max_steps=6, select="last", **CORPUS)
    result = execute(tamt)
    assert result.steps_run == 6 and result.selected_step == 6 and result.t_max == 12
    assert set(result.scores) == {"mlm_loss", "kd_loss"} and result.id == pytest.approx(-sum(result.scores.values()))
    transfer = RunConfig(task="nli", backbone="tiny", data=DataConfig(train_size=64, dev_size=16, ood_size=16),
                         max_length=32, batch_size=16, epochs=2, eval_interval=4, lr=1e-3, mask_from=tamt)
    final = execute(transfer, Request(weights=True))
    run = build_run(transfer, Run(transfer), Request())  # theta_pt with the corpus run's mask...
    source = Run(tamt).masks()
    assert all(torch.equal(m.mask, source[n]) for n, m in pruning.masked_modules(run.model).items())
    Run(transfer).load_weights(run.model)  # ...and the weights the transfer trained
    assert run.evaluator.scores(run.model)["dev"] == pytest.approx(final.id)  # that is the subnetwork it scored
    assert final.sparsity == pytest.approx(0.5, abs=0.01)


def test_word_embeddings_masked_on_the_corpus_and_in_transfer(store):
    """TAMT's code masks the word embeddings too (weight_types "E"): the mask file holds them, a
    transfer applies them, and the tied MLM decoder reads the unmasked table."""
    omp = RunConfig(method="omp", loss="mlm", sparsity=0.5, mask_embeddings=True, **CORPUS)
    execute(omp)
    masks = Run(omp).masks()
    table = masks["bert.embeddings.word_embeddings"]
    assert (~table).float().mean().item() == pytest.approx(0.5, abs=1e-3)
    transfer = RunConfig(task="nli", backbone="tiny", data=DataConfig(train_size=32, dev_size=16, ood_size=16),
                         max_length=32, batch_size=16, epochs=1, eval_interval=2, mask_from=omp, mask_embeddings=True)
    run = build_run(transfer, Run(transfer), Request())
    embedding = pruning.masked_modules(run.model)["bert.embeddings.word_embeddings"]
    assert torch.equal(embedding.mask, table) and isinstance(embedding, pruning.MaskedEmbedding)
    model = backbones.load_pretraining_model("tiny")
    pruning.install(model, backbones.masked_layers(backbones.is_imp_prunable, True))
    assert model.cls.predictions.decoder.weight is model.bert.embeddings.word_embeddings.weight


def tiny_roberta(folder):
    """A two-layer RobertaForMaskedLM saved as a local backbone (with the packaged BERT tokenizer,
    whose token types it accepts): the layout of roberta-base, offline."""
    from transformers import RobertaConfig, RobertaForMaskedLM

    tokenizer = backbones.load_tokenizer("tiny")
    torch.manual_seed(0)
    config = RobertaConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                           intermediate_size=64, max_position_embeddings=130, type_vocab_size=2,
                           pad_token_id=tokenizer.pad_token_id)
    RobertaForMaskedLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


def test_a_roberta_mask_transfers_to_the_encoder_not_the_new_head(store, tmp_path):
    """TAMT figure 4 (RoBERTa-base): the corpus run masks the encoder and word embeddings (its MLM
    model has no pooler), and the transfer masks exactly those; the classification head's
    classifier.dense is new and stays dense (glue_trans.py of llyx97/TAMT masks model.roberta)."""
    backbone = tiny_roberta(tmp_path / "tiny-roberta")
    omp = RunConfig(method="omp", loss="mlm", sparsity=0.5, mask_embeddings=True, **{**CORPUS, "backbone": backbone})
    execute(omp)
    source = Run(omp).masks()
    assert "roberta.embeddings.word_embeddings" in source and not any("pooler" in n for n in source)
    transfer = RunConfig(task="nli", backbone=backbone, data=DataConfig(train_size=32, dev_size=16, ood_size=16),
                         max_length=32, batch_size=16, epochs=1, eval_interval=2, mask_from=omp, mask_embeddings=True)
    assert transfer.task_agnostic_mask
    result = execute(transfer)
    run = build_run(transfer, Run(transfer), Request())
    masked = pruning.masked_modules(run.model)
    assert set(masked) == set(source) and "classifier.dense" not in masked
    assert all(torch.equal(m.mask, source[n]) for n, m in masked.items())
    assert result.sparsity == pytest.approx(0.5, abs=0.01)


@pytest.mark.slow
def test_part_two_pages_compute_and_gather_on_the_tiny_model(store, tmp_path, tiny_params):
    """papermill computes a Part II page's runs (the MLM head, the masks, IMP, the transfers, the
    probes); the other page then only gathers: every point finished, a figure, verdicts, no error."""
    import json

    import papermill

    from srnets_lib import paths

    def run(notebook, **parameters):
        out = tmp_path / f"{notebook}.ipynb"
        papermill.execute_notebook(f"book/{notebook}.ipynb", str(out), cwd=str(paths.PROJECT_ROOT), progress_bar=False,
                                   parameters={"params_file": str(tiny_params), **parameters})
        outputs = [o for c in json.loads(out.read_text())["cells"] if c["cell_type"] == "code" for o in c["outputs"]]
        text = "".join("".join(o.get("data", {}).get("text/markdown", "")) for o in outputs)
        return outputs, text

    outputs, text = run("tamt_pretraining", compute=True)
    assert any("image/png" in o.get("data", {}) for o in outputs) and "mask distance to OMP" in text
    # a verdict names the runs behind its values (one mask seed, one fine-tuning seed here)
    assert "mean of 1 seed" in text and "mean of 0 seeds" not in text
    outputs, text = run("tamt_transfer", compute=False)
    assert "have no finished run" not in text and "TAMT-MLM at sparsity 0.7" in text
    assert "mean of 1 seed" in text and "mean of 0 seeds" not in text
    assert sum("image/png" in o.get("data", {}) for o in outputs) == 1
    # figure 4: another backbone's subnetworks, a figure and verdicts of their own
    other = tmp_path / "other.yaml"
    other.write_text(f"base: {tiny_params.name}\ntamt:\n  other_backbones:\n"
                     f"    - {{name: tiny RoBERTa, backbone: {tiny_roberta(tmp_path / 'tiny-roberta')}, "
                     "set: {pooling: cls}}\n")
    outputs, text = run("tamt_transfer", compute=True, params_file=str(other))
    assert sum("image/png" in o.get("data", {}) for o in outputs) == 3 and "tiny RoBERTa" in text  # and figure 11


def test_a_cut_corpus_block_cache_is_rebuilt(store):
    from srnets_lib.data import corpus
    from srnets_lib.model.backbones import load_tokenizer

    data = corpus.load_corpus(DataConfig(train_size=4, dev_size=2, ood_size=2))
    tokenizer = load_tokenizer("packaged")
    first = corpus.blocks(data.train, tokenizer, 32, 4, "packaged")
    (cached,) = (store / "_cache" / "tokens").glob("*.npz")
    cached.write_bytes(cached.read_bytes()[:100])
    assert (corpus.blocks(data.train, tokenizer, 32, 4, "packaged").ids == first.ids).all()


def test_a_corpus_too_short_for_its_blocks_names_the_file_and_the_setting(store, tmp_path):
    from srnets_lib.data.local import DataFileError
    from srnets_lib.sweeps.executors import execute

    folder = tmp_path / "wikitext-103"
    folder.mkdir()
    (folder / "wiki.train.raw").write_text(" = Valkyria = \n\n A short article .\n")
    (folder / "wiki.valid.raw").write_text(" A held-out line of text , long enough for a block or two .\n" * 8)
    config = RunConfig(task="corpus", method="omp", loss="mlm", sparsity=0.5, backbone="tiny", max_length=32,
                       data=DataConfig(source="local", path=str(tmp_path), train_size=256, dev_size=1))
    with pytest.raises(DataFileError) as err:
        execute(config)
    message = str(err.value)
    assert f"{folder / 'wiki.train.raw'}" in message and "256 asked for by data.train_size" in message
    assert len(message.splitlines()) == 1
