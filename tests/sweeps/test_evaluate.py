"""An OOD set whose file was missing (PAWS-qqp: users generate it) is a plan-time error unless
skipped; the runs that skip it say so in final.json; once the file exists, `evaluate` scores the
finished runs that can be rebuilt without training on it, exactly as a run with the file would
have scored, and names those that cannot."""

import pytest

from srnets_lib.sweeps.executors import check_inputs
from srnets_lib import paths
from srnets_lib.settings.config import DataConfig, RunConfig
from srnets_lib.data import local
from srnets_lib.sweeps.executors import execute
from srnets_lib.settings.request import Request
from srnets_lib.sweeps.evaluate import rescore
from srnets_lib.store.runs import Run

from loader_files import write

QQP = "id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate\n"
PAWS = "id\tsentence1\tsentence2\tlabel\n"
WORDS = ["paris", "rome", "tea", "coffee", "python", "java", "sky", "sea", "cat", "dog", "bus", "train"]


def write_qqp_folder(folder, paws_qqp: bool):
    rows = [(f"how far is {a} from {b} ?", f"how far is {b} from {a} ?" if i % 2 else f"is {a} near {b} ?", i % 2)
            for i, (a, b) in enumerate((a, b) for a in WORDS for b in WORDS if a != b)]
    lines = lambda part: "".join(f"{i}\t{2 * i}\t{2 * i + 1}\t{q1}\t{q2}\t{y}\n" for i, (q1, q2, y) in part)  # noqa: E731
    write(folder / "paraphrase" / "train.tsv", QQP + lines(list(enumerate(rows))[:96]))
    write(folder / "paraphrase" / "dev.tsv", QQP + lines(list(enumerate(rows))[96:128]))
    write(folder / "paraphrase" / "paws_wiki" / "test.tsv", PAWS + "".join(
        f"{i}\t{q1}\t{q2}\t{y}\n" for i, (q1, q2, y) in enumerate(rows[128:160])))
    if paws_qqp:
        add_paws_qqp(folder)


def add_paws_qqp(folder):
    write(folder / "paraphrase" / "paws_qqp" / "dev_and_test.tsv", PAWS + "".join(
        f"{i}\thow far is {b} from {a} ?\t{f'how far is {a} from {b} ?' if i % 2 else f'is {b} near {a} ?'}\t{i % 2}\n"
        for i, (a, b) in enumerate(zip(WORDS, WORDS[1:] + WORDS[:1]))))


def configs(folder):
    common = dict(task="paraphrase", backbone="tiny", epochs=8, batch_size=16, eval_interval=6, max_length=32,
                  lr=3e-3, data=DataConfig(source="local", path=str(folder), check_sizes=False))
    full = RunConfig(**common)
    mask = RunConfig(**{**common, "lr": 1e-2}, method="mask", sparsity=0.9, init_from=full, select="best_after_0.7")
    imp = RunConfig(**common, method="imp", sparsity=0.5, init_from=full, imp_delta_s=0.25)
    return full, mask, imp


def test_a_missing_ood_set_stops_a_sweep_unless_skipped_and_evaluate_adds_it_later(tmp_path, store):
    folder = tmp_path / "data"
    write_qqp_folder(folder, paws_qqp=False)
    full, mask, imp = configs(folder)
    with pytest.raises(local.DataFileError, match=r"PAWS-qqp: .*dev_and_test.tsv not found.*skip_ood=\[paws_qqp\]"):
        check_inputs([full, mask, imp])
    check_inputs([full, mask, imp], skip_ood=["paws_qqp"])  # told to go without it

    results = {c.key(): execute(c) for c in (mask, imp)}  # the full model keeps its weights: they read them
    for config in (full, mask, imp):
        result = Run(config).result()
        assert set(result.ood) == {"paws_wiki"} and "dev_and_test.tsv not found" in result.ood_missing["paws_qqp"]

    add_paws_qqp(folder)
    assert all(Run(c).serves(Request()) for c in (full, mask, imp))  # nothing to recompute
    stamp = Run(imp).file(paths.FINAL).stat().st_mtime_ns
    assert rescore(full) == (["paws_qqp"], None) and rescore(mask) == (["paws_qqp"], None)
    new, why = rescore(imp)
    assert new == ["paws_qqp"] and "IMP run" in why and Run(imp).file(paths.FINAL).stat().st_mtime_ns == stamp
    assert rescore(mask) == ([], None)  # scored once

    # the same runs computed with the file present from the start score exactly the same
    fresh = tmp_path / "fresh"
    for config in (full, mask):
        late, whole = Run(config).result(), execute(config, Request(weights=config == full), root=fresh)
        assert late.ood == pytest.approx(whole.ood) and late.id == whole.id and late.ood_missing == {}
        assert late.data_fingerprint == whole.data_fingerprint
        late_predictions, whole_predictions = Run(config).predictions(), Run(config, fresh).predictions()
        assert set(late_predictions) == set(whole_predictions) >= {"dev", "paws_wiki", "paws_qqp"}
        assert all((late_predictions[k] == whole_predictions[k]).all() for k in whole_predictions)
    assert results[mask.key()].selected_step == Run(mask).result().selected_step
    # discriminating: the full model learnt the task (its weights were loaded); the 90% mask does
    # worse (the mask was applied)
    assert Run(full).result().ood["paws_qqp"] == 1.0 > Run(mask).result().ood["paws_qqp"]


def test_the_evaluate_command_reports_what_it_scored(store, tiny_params):
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "srnets_lib", "evaluate", "book/sec4_4.ipynb", "--params",
                          str(tiny_params)], capture_output=True, text=True, env={**__import__("os").environ})
    assert out.returncode == 0, out.stderr
    assert "evaluate: 0 of 0 finished runs scored on sets they lacked; 0 cannot be without training" in out.stdout


def test_evaluate_checks_only_the_part_it_is_told(tmp_path, capsys):
    """After `make book PART=1`, adding PAWS-qqp with `evaluate ... --part 1` checks Part I's inputs
    only; without --part it demands every Part II dataset too (CoLA ... SQuAD)."""
    from srnets_lib.__main__ import main

    command = ["evaluate", "book/sec4_2.ipynb", "book/tamt_transfer.ipynb", "--params", "params/paper.yaml",
               "--set", f"data.path={tmp_path}"]  # an empty data folder: every input is missing
    assert main([*command, "--part", "1"]) == 2
    part_one = capsys.readouterr().err
    assert "HANS:" in part_one and "nyu-mll/glue (mnli)" in part_one
    assert not any(name in part_one for name in ("(cola)", "(sst2)", "rajpurkar/squad", "wikitext"))
    assert main(command) == 2
    both = capsys.readouterr().err
    assert "HANS:" in both and "nyu-mll/glue (cola)" in both and "rajpurkar/squad" in both
