"""Taking a subnetwork out (srnets_lib/export/): a toy run exported as a Hugging Face folder is the
subnetwork f(m . theta) itself: its weights are W * m for every masked layer, transformers loads it
in a fresh process that never imports srnets_lib, and it predicts on every evaluation split the
class the run stored (predictions.npz). Also: an IMP run (its weights recomputed, the store kept
none) and an IMP level, a page's series in one command, the card's metadata, clear errors, a corpus
mask as a masked LM, a SQuAD subnetwork as a question-answering model, the size/latency/memory
measurement, and the command on every page.

The toy runs here are params/toy.yaml's (the packaged MiniLM, its first 2 layers, mean pooling) on
smaller evaluation splits, so that the predictions compared are a trained model's, not a constant."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from safetensors.torch import load_file

from srnets_lib import paths
from srnets_lib.__main__ import main
from srnets_lib.book import page as book_page
from srnets_lib.data.load import load_task
from srnets_lib.export import check, hf, measure, rebuild
from srnets_lib.model import backbones, pruning
from srnets_lib.settings import params as params_lib
from srnets_lib.settings.config import DataConfig, RunConfig
from srnets_lib.settings.recipes import Recipes
from srnets_lib.store.runs import Run
from srnets_lib.sweeps.executors import execute

# the toy's settings on smaller evaluation splits, one seed, and IMP to 30% (section 4.2's IMP points
# at 20% and 30% are levels of one run)
SMALL = ["data.dev_size=64", "data.test_size=64", "data.ood_size=64", "seeds=[1]", "sparsities=[0.2,0.3]",
         "imp_target=0.3"]
TIE = 1e-5  # top-two logits closer than this may swap under another batching's float noise: not compared


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    """A store with the toy's nli std model, its PoE mask at 30% and IMP (std) to 30%, each run's
    stored predictions as the sweep left them (export computes the IMP run again), and the mask
    run exported by its key with the command line."""
    tmp = tmp_path_factory.mktemp("toy")
    root = tmp / "runs"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SRNETS_RUNS", str(root))
        params = params_lib.load("params/toy.yaml", SMALL)
        recipes = Recipes(params)
        mask, imp = recipes.prune_ft("nli", "mask", "poe", 0.3, 1), recipes.imp("nli", "std", 1)
        for config in (mask, imp):
            execute(config, params.execution.request())
        stored = {"mask": Run(mask).predictions(), "imp": Run(imp).predictions(), "imp@0.2": Run(imp).predictions(0.2)}
        toy = {"root": root, "params": params, "mask": mask, "imp": imp, "base": mask.init_from, "stored": stored,
               "folder": tmp / "mask"}
        before = digest(root)
        done = export_cli(toy, mask.key(), "--out", str(toy["folder"]), "--no-measure")
        assert done.returncode == 0, done.stderr
        toy["unchanged"] = digest(root) == before
        yield toy


def digest(root: Path) -> dict[str, bytes]:
    """Every file of a run store, by path: what must be byte-identical before and after an export."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def export_cli(toy, *args):
    """`python -m srnets_lib export ...` on the toy store and settings, in its own process."""
    command = [sys.executable, "-m", "srnets_lib", "export", *args, "--params", "params/toy.yaml", "--set", *SMALL]
    return subprocess.run(command, capture_output=True, text=True, env={**os.environ, "SRNETS_RUNS": str(toy["root"])})


# A user's script: transformers alone, in a fresh process; the splits' texts come as JSON.
USER_SCRIPT = """
import json, sys, torch, transformers
folder, auto, remote, texts, out = sys.argv[1:6]
model = getattr(transformers, auto).from_pretrained(folder, trust_remote_code=remote == "1").eval()
tokenizer = transformers.AutoTokenizer.from_pretrained(folder, trust_remote_code=remote == "1")
found = {}
for split, pairs in json.load(open(texts)).items():
    logits = []
    for i in range(0, len(pairs["a"]), 64):
        second = pairs["b"][i:i + 64] if pairs["pairs"] else None
        batch = tokenizer(pairs["a"][i:i + 64], second, truncation=True, padding=True, return_tensors="pt")
        with torch.no_grad():
            logits += model(**batch).logits.tolist()
    found[split] = logits
json.dump({"logits": found, "srnets_imported": "srnets_lib" in sys.modules}, open(out, "w"))
"""


def predict_in_fresh_process(folder: Path, config: RunConfig, tmp_path: Path) -> dict:
    """{split: logits} of the exported folder, computed by USER_SCRIPT on the run's evaluation
    splits (pairs as data/encode.py passes them: a second text only where the task has one)."""
    data = load_task(config.task, config.data)
    texts = {name: {"a": list(s.text_a), "b": list(s.text_b), "pairs": any(s.text_b)}
             for name, s in data.eval_splits.items()}
    (tmp_path / "texts.json").write_text(json.dumps(texts))
    remote = "1" if config.pooling == "mean" else "0"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run([sys.executable, "-c", USER_SCRIPT, str(folder), "AutoModelForSequenceClassification", remote,
                          str(tmp_path / "texts.json"), str(tmp_path / "out.json")],
                         capture_output=True, text=True, env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    found = json.loads((tmp_path / "out.json").read_text())
    assert not found["srnets_imported"]
    return {split: np.asarray(logits) for split, logits in found["logits"].items()}


def assert_predicts_what_the_run_stored(logits: dict, stored: dict) -> None:
    """The exported model's class is the stored one on every example of every split (but near-ties)."""
    assert set(stored) <= set(logits)
    for split, classes in stored.items():
        top = np.sort(logits[split], axis=1)
        decided = top[:, -1] - top[:, -2] > TIE
        assert decided.mean() > 0.99, split
        assert np.array_equal(logits[split].argmax(1)[decided], classes[decided]), split


def masked_weights(folder: Path) -> tuple[dict, dict]:
    return load_file(str(folder / "model.safetensors")), pruning.load_masks(folder / "mask.npz")


def test_a_mask_training_run_exports_as_w_times_m(toy):
    """f(m . theta_ft): the std model's weights times the trained mask, the classifier and pooler
    included (mask training masks them too); config.json keeps the toy's 2 of 6 layers."""
    weights, masks = masked_weights(toy["folder"])
    theta_ft = backbones.load_model("packaged", 3, 2, seed=1, pooling="mean")
    Run(toy["base"], toy["root"]).load_weights(theta_ft)
    own = dict(theta_ft.named_parameters())
    assert "classifier" in masks and "bert.pooler.dense" in masks
    for name, kept in masks.items():
        assert (~kept).sum().item() == pruning.pruned_count(kept.numel(), 0.3)
        assert torch.equal(weights[f"{name}.weight"], own[f"{name}.weight"].detach() * kept)
    config = json.loads((toy["folder"] / "config.json").read_text())
    assert config["num_hidden_layers"] == 2 and config["srnets"]["backbone_layers"] == 6
    assert config["id2label"] == {"0": "entailment", "1": "neutral", "2": "contradiction"}


def test_exporting_a_mask_run_leaves_the_store_byte_identical(toy):
    assert toy["unchanged"]


def test_transformers_alone_loads_it_and_predicts_what_the_run_stored(toy, tmp_path):
    logits = predict_in_fresh_process(toy["folder"], toy["mask"], tmp_path)
    assert_predicts_what_the_run_stored(logits, toy["stored"]["mask"])


def test_the_folder_refuses_to_pool_the_cls_state_without_its_modeling_code(toy, tmp_path):
    script = ("import transformers\ntry:\n    transformers.AutoModelForSequenceClassification.from_pretrained("
              f"{str(toy['folder'])!r}, trust_remote_code=False)\nexcept ValueError as err:\n    print('refused', err)\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert "refused" in done.stdout and "trust_remote_code" in done.stdout


def test_an_imp_series_exports_in_one_command_each_level_predicting_what_it_stored(toy, tmp_path):
    """The IMP run kept no weights: it is computed again once, keeping its weights at the end of
    level 0.2 and at its end (0.3); each folder is that level's model, W * m at exact sparsity,
    the classifier dense."""
    assert not Run(toy["imp"], toy["root"]).result().weights
    before = digest(toy["root"])
    done = export_cli(toy, "--page", "sec4_2", "--series", "imp (std)", "--task", "nli", "--out", str(tmp_path),
                      "--no-measure")
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("trains weights the store did not keep: computing it again") == 1
    assert digest(toy["root"]) == before  # computed again in a scratch folder, never in the store
    assert "reproduced its scores and files bit for bit" in (tmp_path / "imp-std-nli-s0.2-seed1" / "README.md").read_text()
    for level, stored in ((0.2, toy["stored"]["imp@0.2"]), (0.3, toy["stored"]["imp"])):
        folder = tmp_path / f"imp-std-nli-s{level}-seed1"
        weights, masks = masked_weights(folder)
        assert masks and "classifier" not in masks
        for name, kept in masks.items():
            assert (~kept).sum().item() == pruning.pruned_count(kept.numel(), level)
            assert not weights[f"{name}.weight"][~kept].any()
        logits = predict_in_fresh_process(folder, toy["imp"], tmp_path)
        assert_predicts_what_the_run_stored(logits, stored)
    assert "IMP level 0.2" in (tmp_path / "imp-std-nli-s0.2-seed1" / "README.md").read_text()


def test_the_card_front_matter_parses_and_names_what_it_reports(toy):
    text = (toy["folder"] / "README.md").read_text()
    meta = yaml.safe_load(text.split("---\n")[1])
    assert meta["base_model"] == "sentence-transformers/all-MiniLM-L6-v2" and meta["pipeline_tag"] == "text-classification"
    reported = [m for r in meta["model-index"][0]["results"] for m in r["metrics"]]
    assert meta["metrics"] == ["accuracy"] and {m["type"] for m in reported} == {"accuracy"}
    final = Run(toy["mask"], toy["root"]).result()
    assert sorted(m["value"] for m in reported) == sorted(round(100 * v, 2) for v in (final.id, *final.ood.values()))
    assert "synthetic-data" in meta["tags"] and "A synthetic-data model, not the paper's" in text
    assert "section 4.2" in text and "`mask train (poe)`" in text and "papermill book/sec4_2.ipynb" in text
    assert "heads emptied" in text and "push_to_hub" in text and "exported with `--no-measure`" in text


def test_the_card_gives_the_seed_spread_of_its_point_where_the_store_has_other_seeds(toy, tmp_path, monkeypatch):
    monkeypatch.setenv("SRNETS_RUNS", str(toy["root"]))
    second = Recipes(toy["params"]).prune_ft("nli", "mask", "poe", 0.3, 2)
    execute(second, toy["params"].execution.request())
    point = ["--page", "sec4_2", "--series", "mask train (poe)", "--task", "nli", "--sparsity", "0.3", "--seed", "1"]
    assert main(["export", *point, "--out", str(tmp_path), "--no-measure", "--params", "params/toy.yaml",
                 "--set", *SMALL, "seeds=[1,2]"]) == 0
    scores = [Run(c, toy["root"]).result().ood["hans-like"] for c in (toy["mask"], second)]
    spread = f"{100 * np.mean(scores):.1f} ± {100 * np.std(scores, ddof=1):.1f} (2 seeds)"
    assert f"| hans-like | accuracy (x100) | {100 * scores[0]:.1f} | {spread} |" in (tmp_path / "README.md").read_text()


def test_each_page_shows_the_command_that_exports_its_points():
    text = book_page.reproduce_text("sec4_2", params_lib.load("params/toy.yaml"), [0.7], [1])
    assert '`python -m srnets_lib export --page sec4_2 --series "mask train (std)"' in text


@pytest.mark.parametrize("args, names", [
    (["nli-mask-poe-000000000000"], "finished runs there: nli-mask-poe-"),
    (["--page", "sec4_2", "--series", "mask training (poe)"], "its series values: 'full bert (std)'"),
    (["--page", "sec4_2", "--sparsity", "0.7"], "its sparsity values: 0, 0.2, 0.3"),
    (["--page", "sec9_9"], "unknown section 'sec9_9'; accepted: sec4_2"),
])
def test_a_bad_key_or_point_is_refused_in_one_line_naming_what_exists(toy, tmp_path, args, names, capsys,
                                                                        monkeypatch):
    monkeypatch.setenv("SRNETS_RUNS", str(toy["root"]))
    assert main(["export", *args, "--out", str(tmp_path / "x"), "--params", "params/toy.yaml", "--set", *SMALL]) == 2
    error = capsys.readouterr().err
    assert names in error and len(error.strip().splitlines()) == 1, error


def test_a_corpus_mask_exports_as_a_masked_lm_whose_decoder_reads_the_unmasked_table(store, tmp_path):
    """TAMT's task-agnostic mask (section 3.4) on the word embeddings too: a masked LM folder whose
    logits are the srnets model's, the decoder untied from the masked input table."""
    corpus = RunConfig(task="corpus", method="mask", loss="mlm", sparsity=0.5, mask_embeddings=True, backbone="tiny",
                       data=DataConfig(train_size=24, dev_size=4, ood_size=4), max_length=32, batch_size=8,
                       lr=1e-2, eval_interval=3, epochs=2, select="last")
    execute(corpus)
    before = digest(store)
    rebuilt = rebuild.rebuild(corpus, say=lambda line: None)
    assert rebuilt.recomputed is None and "computed again here" in rebuilt.weights  # its MLM head trains
    reference = check.outputs(rebuilt.model, check.probe_batch(rebuilt.model, 32))
    folder = hf.write(rebuilt, tmp_path / "mlm")
    assert folder.auto_class == "AutoModelForMaskedLM"
    assert check.check(folder, rebuilt, reference).max_output_difference < 1e-5
    weights = load_file(str(tmp_path / "mlm" / "model.safetensors"))
    table = rebuilt.masks["bert.embeddings.word_embeddings"]
    assert not weights["bert.embeddings.word_embeddings.weight"][~table].any()
    assert weights["cls.predictions.decoder.weight"][~table].any()
    assert main(["export", corpus.key(), "--out", str(tmp_path / "cli"), "--no-measure"]) == 0
    meta = yaml.safe_load((tmp_path / "cli" / "README.md").read_text().split("---\n")[1])
    assert meta["pipeline_tag"] == "fill-mask" and meta["metrics"] == ["mlm_loss", "kd_loss"]
    assert digest(store) == before  # its mask read from the store, its MLM head computed again beside it


def test_a_subnetwork_fine_tuned_on_squad_exports_as_a_question_answering_model(store, tmp_path):
    """TAMT's transfer to SQuAD (section 4.1): a corpus mask's subnetwork fine-tuned with a span
    head trains weights the store did not keep, so it is computed again; the folder holds W * m on
    the encoder's matrices and computes the srnets model's start and end logits."""
    from transfer_fixture import write_squad

    write_squad(tmp_path)
    omp = RunConfig(task="corpus", method="omp", loss="mlm", sparsity=0.5, backbone="tiny", max_length=32,
                    data=DataConfig(train_size=4, dev_size=2, ood_size=2))
    transfer = RunConfig(task="squad", backbone="tiny", max_length=128, batch_size=2, epochs=1, eval_interval=1,
                         data=DataConfig(source="local", path=str(tmp_path), check_sizes=False), mask_from=omp)
    execute(transfer)
    before = digest(store)
    rebuilt = rebuild.rebuild(transfer, say=lambda line: None)
    assert "computed again here" in rebuilt.weights and digest(store) == before
    assert set(rebuilt.masks) == {n for n in Run(omp).masks() if backbones.is_transformer_matrix(n)}
    reference = check.outputs(rebuilt.model, check.probe_batch(rebuilt.model, 128))
    folder = hf.write(rebuilt, tmp_path / "qa")
    assert folder.auto_class == "AutoModelForQuestionAnswering" and not folder.remote_code
    assert check.check(folder, rebuilt, reference).max_output_difference < 1e-5
    weights = load_file(str(tmp_path / "qa" / "model.safetensors"))
    assert all(not weights[f"{n}.weight"][~m].any() for n, m in rebuilt.masks.items())


def test_measurement_compares_dense_and_pruned_side_by_side(tmp_path):
    dense, pruned, masks = measure.bert_base_shape(tmp_path, 0.7, config=dict(hidden_size=32, num_hidden_layers=2,
                                                                            num_attention_heads=2, intermediate_size=64))
    m = measure.measure(dense, pruned, masks, "AutoModelForSequenceClassification", False, 16, (1, 2), 0.01)
    assert [r["name"] for r in m.rows] == ["dense", "pruned, dense kernels", "pruned, sparse CSR"]
    dense_row, pruned_row, _ = m.rows
    assert pruned_row["sizes"]["safetensors"] == dense_row["sizes"]["safetensors"]  # the zeros are stored
    assert pruned_row["sizes"]["gzip"] < dense_row["sizes"]["gzip"]
    assert pruned_row["sizes"]["packed"] < m.rows[2]["sizes"]["safetensors"] < pruned_row["sizes"]["safetensors"]
    assert m.csr_difference < 1e-4
    assert "| pruned, sparse CSR |" in measure.markdown(m)


def test_another_runs_mask_copied_into_a_run_is_refused_naming_the_file(toy, tmp_path, monkeypatch):
    """A 20% IMP level's mask where the 30% mask run's mask should be (an rsync from the wrong
    folder): final.json's CRC-32 says it is not the run's, and nothing is exported."""
    mask = Run(toy["mask"], toy["root"]).file(paths.MASK)
    original = mask.read_bytes()
    other = Run(toy["imp"], toy["root"]).file(paths.level_mask(0.2))
    try:
        mask.write_bytes(other.read_bytes())
        done = export_cli(toy, toy["mask"].key(), "--out", str(tmp_path / "swapped"), "--no-measure")
    finally:
        mask.write_bytes(original)
    assert done.returncode == 2 and not (tmp_path / "swapped").exists()
    error = done.stderr.strip().splitlines()[-1]
    assert f"{mask}: damaged" in error and "nothing was exported" in error


def test_a_mask_of_another_sparsity_is_refused_even_where_no_checksum_was_recorded(toy, tmp_path):
    """A store written before checksums were recorded (its final.json without `files`), the IMP
    run's 30% mask replaced by its 20% level's: the mask in force is checked against the sparsity
    the run recorded, and nothing is exported."""
    import shutil

    root = tmp_path / "runs"
    shutil.copytree(toy["root"], root)
    imp = Run(toy["imp"], root)
    record = json.loads(imp.file(paths.FINAL).read_text())
    record.pop("files")
    record["schema_version"] = 2
    imp.file(paths.FINAL).write_text(json.dumps(record))
    shutil.copyfile(imp.file(paths.level_mask(0.2)), imp.file(paths.MASK))
    done = export_cli({**toy, "root": root}, toy["imp"].key(), "--out", str(tmp_path / "x"), "--no-measure")
    assert done.returncode == 2 and not (tmp_path / "x").exists()
    error = done.stderr.strip().splitlines()[-1]
    assert f"{imp.file(paths.MASK)}: its mask is 20.00% sparse, but run {imp.key} recorded 30.00%" in error


def test_an_earlier_export_of_the_same_run_is_replaced_and_anything_else_refused(toy, tmp_path):
    again = export_cli(toy, toy["mask"].key(), "--out", str(toy["folder"]), "--no-measure")
    assert again.returncode == 0, again.stderr
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "README.md").write_text("my notes")
    refused = export_cli(toy, toy["mask"].key(), "--out", str(mine), "--no-measure")
    assert refused.returncode == 2 and (mine / "README.md").read_text() == "my notes"
    assert "--force" in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
    other = export_cli(toy, toy["imp"].key(), "--out", str(toy["folder"]), "--no-measure")
    assert other.returncode == 2 and f"an earlier export of run {toy['mask'].key()}" in other.stderr
    forced = export_cli(toy, toy["mask"].key(), "--out", str(mine), "--no-measure", "--force")
    assert forced.returncode == 0 and (mine / "README.md").read_text() != "my notes"
    assert {oct(p.stat().st_mode & 0o777) for p in mine.iterdir()} == {oct(0o666 & ~current_umask())}
    assert str(tmp_path) not in (mine / "README.md").read_text()  # no local path in a card meant for the Hub


def current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
