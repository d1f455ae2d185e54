"""Configuration: stable keys, validation, params files and overrides."""

import pytest

from srnets_lib.settings import params
from srnets_lib import paths
from srnets_lib.settings.config import DataConfig, RunConfig
from srnets_lib.book import runs as book_runs


def test_a_yaml_syntax_error_names_the_file(tmp_path):
    bad = tmp_path / "broken.yaml"
    bad.write_text("name: x\ndefaults: {lr: [1e-4\n")
    with pytest.raises(params.ParamsError, match=r"broken.yaml: not valid YAML"):
        params.load(bad)


def test_run_keys_are_pinned():
    """Changing these strings renames every stored run: bump ALGORITHM_VERSION instead."""
    full = RunConfig(task="nli")
    assert full.key() == RunConfig(task="nli").key()
    mask = RunConfig(task="nli", method="mask", loss="poe", sparsity=0.7, init_from=full)
    assert full.key().startswith("nli-finetune-std-") and mask.key().startswith("nli-mask-poe-")
    assert full.key() != RunConfig(task="nli", lr=1e-4).key()
    assert mask.key() != RunConfig(task="nli", method="mask", loss="poe", sparsity=0.7,
                                   init_from=RunConfig(task="nli", seed=2)).key()
    assert full.key() == "nli-finetune-std-ade612a9abc2"  # ALGORITHM_VERSION 4


@pytest.mark.parametrize("setting", ["eval_batch_size=32", "eval_ood=every", "eval_ood=selected"])
def test_execution_settings_are_not_part_of_the_run_key(setting):
    """Only scientific settings key a run: the evaluation batch size and which evaluations score
    the OOD sets change speed and what is logged, not what is computed."""
    toy, changed = params.load("params/toy.yaml"), params.load("params/toy.yaml", [setting])
    full = toy.run("nli", "finetune", "std")
    assert changed.run("nli", "finetune", "std").key() == full.key()
    assert changed.execution != toy.execution or setting == "eval_ood=selected"


def test_scientific_settings_are_part_of_the_run_key():
    toy = params.load("params/toy.yaml")
    full = toy.run("nli", "finetune", "std")
    for setting in ["precision=bf16", "dropout_rng=torch", "padding=max_length", "lr=1.0e-3", "data.bias_strength=0.7"]:
        assert params.load("params/toy.yaml", [setting]).run("nli", "finetune", "std").key() != full.key(), setting


@pytest.mark.parametrize("fields, message", [
    ({"task": "sentiment"}, "task"),
    ({"task": "nli", "method": "mask", "sparsity": 1.0}, "sparsity"),
    ({"task": "nli", "method": "mask", "sparsity": -0.1}, "sparsity"),
    ({"task": "nli", "loss": "focal"}, "loss"),
    ({"task": "nli", "method": "imp", "sparsity": 0.75}, "multiple"),
    ({"task": "nli", "loss": "confreg"}, "teacher"),
    ({"task": "nli", "lr_typo": 1.0}, "lr_typo"),
    ({"task": "nli", "seed": -1}, "seed"),
    ({"task": "nli", "data": {"data_seed": -1}}, "data_seed"),
])
def test_bad_configs_are_refused_with_the_field_named(fields, message):
    with pytest.raises(ValueError, match=message):
        RunConfig(**fields)


def test_synthetic_data_needs_sizes():
    with pytest.raises(ValueError, match="train_size"):
        DataConfig(source="synthetic")


@pytest.mark.parametrize("path", ["params/toy.yaml", "params/paper.yaml"])
def test_every_params_file_loads_and_resolves(path):
    p = params.load(path)
    for task in p.preset.tasks:
        for loss in ("std", "poe", "reweight"):
            assert p.run(task, "finetune", loss).task == task


def test_paper_hyper_parameters_from_tables_3_and_4():
    p = params.load("params/paper.yaml")
    assert p.run("nli", "finetune", "std").epochs == 3
    assert p.run("nli", "finetune", "poe").epochs == 5
    assert p.run("nli", "mask", "poe", sparsity=0.5).epochs == 5
    assert p.run("paraphrase", "mask", "poe", sparsity=0.5).epochs == 7
    assert p.run("factcheck", "finetune", "std").eval_interval == 500
    mask = p.run("nli", "mask", "poe", sparsity=0.5)
    assert (mask.phi, mask.alpha, mask.mask_init, mask.batch_size, mask.max_length) == (0.01, 2.0, "hard", 32, 128)


def test_params_typo_names_file_and_key(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(open("params/toy.yaml").read().replace("eval_interval:", "eval_intreval:"))
    with pytest.raises(params.ParamsError, match=r"(?s)bad.yaml.*unknown key .eval_intreval"):
        params.load(bad)


@pytest.mark.parametrize("override, message", [
    (["sparsities=[1.0]"], "outside"), (["sparsities=[-0.1]"], "outside"),
    (["seeds=[]"], "seeds"), (["seeds=[-1]"], "seeds"), (["tasks=[sentiment]"], "tasks"), (["sparsity"], "key=value"),
])
def test_bad_overrides(override, message):
    with pytest.raises(params.ParamsError, match=message):
        params.load("params/toy.yaml", override)


def test_missing_params_file():
    with pytest.raises(params.ParamsError, match="does not exist"):
        params.load("params/nope.yaml")


def test_file_overrides_apply_in_order_and_command_line_wins():
    p = params.load("params/toy.yaml")
    assert p.run("nli", "finetune").epochs == 3  # defaults
    assert p.run("nli", "finetune", "poe").epochs == 5  # {task: nli, stage: full, loss: poe}
    assert p.run("paraphrase", "mask", "poe", sparsity=0.5).epochs == 7  # {stage: prune}
    assert p.run("nli", "mask", "poe", sparsity=0.5).epochs == 5  # the later {task: nli, stage: prune}
    assert p.run("nli", "mask", "poe", sparsity=0.5).lr == 2e-3  # {method: mask, start: pt}
    forced = params.load("params/toy.yaml", ["lr=0.5"])
    assert forced.run("nli", "finetune").lr == 0.5
    assert forced.run("nli", "mask", "poe", sparsity=0.5).lr == 0.5


def test_backbone_path_that_does_not_exist():
    from srnets_lib.model.backbones import BackboneError, resolve

    with pytest.raises(BackboneError, match="does not exist"):
        resolve("./no/such/model")


def test_notebooks_executed_in_book_find_params_and_the_checkout_run_store(monkeypatch):
    # Jupyter Book runs notebooks with book/ as the working directory
    monkeypatch.chdir(paths.BOOK_DIR)
    monkeypatch.delenv("SRNETS_RUNS", raising=False)
    assert params.load("params/toy.yaml").source == str(paths.PARAMS_DIR / "toy.yaml")
    assert paths.runs_root() == paths.PROJECT_ROOT / "runs"


def test_overrides_select_on_where_a_run_starts():
    p = params.load("params/toy.yaml")
    full = p.run("nli", "finetune", "std", seed=1)
    from_pt = p.run("nli", "mask", "std", seed=1, sparsity=0.5)
    from_ft = p.run("nli", "mask", "std", seed=1, sparsity=0.5, init_from=full)
    assert from_pt.lr != from_ft.lr  # params/toy.yaml: `when: {method: mask, start: pt}`


def test_a_params_file_extends_its_base(tmp_path):
    derived = tmp_path / "derived.yaml"
    derived.write_text(f"base: {paths.PARAMS_DIR / 'paper.yaml'}\nname: derived\npreset: {{seeds: [7]}}\n"
                       "forced: {backbone: tiny}\noverrides: [{when: {task: nli}, set: {lr: 1.0e-3}}]\n")
    p = params.load(derived)
    assert p.preset.seeds == [7] and p.preset.sparsities == [0.2, 0.5, 0.7, 0.9]  # merged, not replaced
    assert p.run("nli").lr == 1e-3 and p.run("nli").backbone == "tiny"  # its overrides come last
    assert p.run("paraphrase").warmup_steps == 3400  # the base's overrides still apply
    (tmp_path / "loop.yaml").write_text("base: loop.yaml\n")
    with pytest.raises(params.ParamsError, match="cycle"):
        params.load(tmp_path / "loop.yaml")


def test_each_section_computes_by_default_the_sparsities_its_claims_judge():
    """sections.judged_only narrows a page's default build to its claims' sparsities (the toy's
    CPU budget); `full` (make book-full) gives the preset's, and the sweep plans the others only then."""
    from srnets_lib.book import sections

    toy = params.load("params/toy.yaml")
    for section in (s for s in sections.BY_NAME.values() if s.part == 1):
        judged = {x for claim in section.claims for x in getattr(claim, "xs", ())}
        assert judged <= set(section.sparsities(toy)), section.name
        assert section.sparsities(toy, full=True) == toy.preset.sparsities
    assert sections.get("sec4_2").sparsities(toy) == [0.5, 0.7]
    assert sections.get("sec5_2").sparsities(toy) == toy.preset.sparsities
    default, _ = book_runs.of_notebooks(["book/sec4_2.ipynb"], toy)
    full, _ = book_runs.of_notebooks(["book/sec4_2.ipynb"], toy, full=True)
    assert {n.config.sparsity for n in default if n.config.method == "mask"} == {0.5, 0.7}
    # an IMP run trains through every level: the default build scores the opt-in ones too (evaluations only)
    assert {n.request.levels for n in default if n.config.method == "imp"} == {(0.2, 0.5, 0.7, 0.9)}
    assert {n.key for n in full if n.config.method == "imp"} == {n.key for n in default if n.config.method == "imp"}
    assert {n.config.sparsity for n in full if n.config.method == "mask"} == {0.2, 0.5, 0.7, 0.9}
    jobs = book_runs.notebook_jobs(["book/sec4_2.ipynb"], "params/toy.yaml")
    assert [j.sparsity for j in jobs if j.seed == 1] == [0.5, 0.7]


def test_the_judged_sparsities_are_the_claims_own_and_only_narrow_the_preset(tmp_path):
    """A page's claims are the one place its judged sparsities are written: judged_only keeps the
    preset's that they judge, or the whole preset where they judge none of it (its verdicts then say
    so); the old per-page list is refused as an unknown key."""
    from srnets_lib.book import sections

    derived = tmp_path / "derived.yaml"
    for preset, expected in (("[0.5, 0.9]", [0.5]), ("[0.9]", [0.9])):
        derived.write_text(f"base: {paths.PARAMS_DIR / 'toy.yaml'}\nname: derived\npreset: {{sparsities: {preset}}}\n")
        assert sections.get("sec4_4").judged == (0.2, 0.5)
        assert sections.get("sec4_4").sparsities(params.load(derived)) == expected
    derived.write_text(f"base: {paths.PARAMS_DIR / 'toy.yaml'}\nname: derived\n"
                       "sections: {sparsities: {sec4_2: [0.5]}}\n")
    with pytest.raises(params.ParamsError, match=r"(?s)derived.yaml.*unknown key 'sections.sparsities'"):
        params.load(derived)


def test_a_section_can_run_on_its_own_seeds(tmp_path):
    """sections.<page>.seeds narrows a page's seeds (the toy's compute budget): the recipes, the
    sweep's notebook jobs and the page's scope line all follow it; the other sections keep the preset's."""
    from srnets_lib.book import banner, sections

    derived = tmp_path / "derived.yaml"
    derived.write_text(f"base: {paths.PARAMS_DIR / 'toy.yaml'}\nname: derived\n"
                       "sections: {sec4_4: {seeds: [2]}, sec4_2: {seeds: null}}\n")
    p = params.load(derived)
    assert sections.get("sec4_4").seeds(p) == [2] and sections.get("sec4_2").seeds(p) == p.preset.seeds == [1, 2]
    assert {point.seed for point in sections.points("sec4_4", p)} == {2}
    assert {point.seed for point in sections.points("sec4_2", p)} == {1, 2}
    jobs = book_runs.notebook_jobs(["book/sec4_4.ipynb", "book/sec4_2.ipynb"], str(derived))
    assert {j.seed for j in jobs if "sec4_4" in j.notebook} == {2}
    assert {j.seed for j in jobs if "sec4_2" in j.notebook} == {1, 2}
    assert "seed 2 (the preset's: 1, 2)" in banner.scope(p, ["nli"], [2])
    toy = params.load("params/toy.yaml")  # named relative to the project, however it was loaded
    assert banner.scope(toy, ["nli"], [1]).endswith("as `sections` in `params/toy.yaml` chooses.")
    assert banner.scope(p, p.preset.tasks, p.preset.seeds) == ""
    assert banner.scope(toy, toy.tamt.tasks, toy.tamt.mask_seeds, "tamt_transfer") == ""  # Part II: its own block
    assert "seed 2 (the default's: 1)" in banner.scope(toy, toy.tamt.tasks, [2], "tamt_transfer")
    derived.write_text(f"base: {paths.PARAMS_DIR / 'toy.yaml'}\nname: derived\nsections: {{sec9: {{seeds: [1]}}}}\n")
    with pytest.raises(params.ParamsError, match="sec9"):
        params.load(derived)


@pytest.mark.parametrize("when, message", [("{task: nil}", "selector task: 'nil' never matches"),
                                           ("{loss: [std, pooe]}", "selector loss: 'pooe' never matches"),
                                           ("{source: mask-training}", "selector source: 'mask-training'")])
def test_a_selector_value_that_never_matches_is_refused(tmp_path, when, message):
    bad = tmp_path / "bad.yaml"
    bad.write_text(f"base: {paths.PARAMS_DIR / 'toy.yaml'}\nname: bad\noverrides:\n  - when: {when}\n    set: {{lr: 1.0}}\n")
    with pytest.raises(params.ParamsError, match=rf"(?s)bad.yaml.*{message}"):
        params.load(bad)


def test_command_line_tasks_and_seeds_win_over_the_files_per_section_choices():
    """--set tasks=[paraphrase] seeds=[2] applies to every Part I section, also those the toy's
    sections block narrows (sections.tasks: [nli]; sections.sec4_3.seeds: [1])."""
    from srnets_lib.book import sections

    p = params.load("params/toy.yaml", ["tasks=[paraphrase]", "seeds=[2]", "sparsities=[0.5]"])
    for name in ("sec4_2", "sec4_3", "sec5_2"):
        points = sections.points(name, p)
        assert {pt.task for pt in points if not pt.reference} == {"paraphrase"} and {pt.seed for pt in points} == {2}
    chosen = params.load("params/toy.yaml", ["sections.sec4_2.tasks=[nli]", "tasks=[paraphrase]"])
    assert sections.get("sec4_2").tasks(chosen) == ["nli"]


def test_plan_refuses_a_rate_that_is_not_above_zero(capsys):
    from srnets_lib.__main__ import main

    for rate in ("0", "-5", "abc"):
        with pytest.raises(SystemExit):
            main(["plan", "book/sec4_2.ipynb", "--steps-per-second", rate])
        assert "argument --steps-per-second" in capsys.readouterr().err


@pytest.mark.parametrize("parameters, message", [({"sparsity": "abc"}, "parameter sparsity='abc': expected a number"),
                                                 ({"sparsity": 1.5}, "parameter sparsity=1.5"),
                                                 ({"seeds": "[-1]"}, "parameter seeds=\\[-1\\]"),
                                                 ({"seeds": "one"}, "parameter seeds=\\['one'\\]")])
def test_a_notebook_parameter_of_the_wrong_kind_is_named(parameters, message):
    from srnets_lib.book import page as book_page

    with pytest.raises(ValueError, match=message):
        book_page.load("sec4_2", compute=False, **parameters)


# --- settings that cannot be silently replaced -----------------------------------------------------

def test_a_key_given_twice_is_refused_with_file_line_and_key(tmp_path):
    """PyYAML keeps the last of two equal keys: a second `defaults:` block would replace the whole
    first one (the toy's backbone and sizes with the library's defaults)."""
    bad = tmp_path / "twice.yaml"
    toy = open("params/toy.yaml").read()
    bad.write_text(toy + "defaults:\n  lr: 1.0e-3\n")
    line = toy.count("\n") + 1
    with pytest.raises(params.ParamsError, match=rf"twice.yaml, line {line}: key 'defaults' is given twice "
                                                 rf"\(first on line \d+\)"):
        params.load(bad)
    bad.write_text("name: x\ndescription: y\npreset: {seeds: [1], sparsities: [0.5], tasks: [nli]}\n"
                   "defaults:\n  lr: 1.0e-3\n  epochs: 2\n  lr: 2.0e-3\n")
    with pytest.raises(params.ParamsError, match=r"twice.yaml, line 7: key 'lr' is given twice \(first on line 5\)"):
        params.load(bad)


def test_yaml_aliases_are_refused_before_they_expand(tmp_path):
    """A 1.5 KB file of nested aliases expands to hundreds of MB: refused when read, in one line."""
    import time

    levels = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    levels += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("name: bomb\ndescription: x\npreset: {seeds: [1], sparsities: [0.5], tasks: [nli]}\n"
                    "defaults:\n" + "".join(f"  {line}\n" for line in levels) + "  lr: *a8\n")
    started = time.time()
    with pytest.raises(params.ParamsError) as err:
        params.load(bomb)
    assert time.time() - started < 5
    message = str(err.value)
    assert message.startswith(f"{bomb}, line 5: YAML anchors and aliases") and len(message) < 300
    with pytest.raises(params.ParamsError, match="aliases"):
        params.load("params/toy.yaml", ["tasks=[&t nli, *t]"])


@pytest.mark.parametrize("override", ["epochs=inf", "epochs=.inf", "lr=.nan", "max_grad_norm=1e999",
                                      "data.bias_strength=.nan", "sections.imp_target=.inf"])
def test_a_number_that_is_not_finite_is_refused_by_name(override):
    with pytest.raises(params.ParamsError, match=rf"{override.split('=')[0].split('.')[-1]}: .*finite"):
        params.load("params/toy.yaml", [override])


@pytest.mark.parametrize("command", [["plan", "book/sec4_4.ipynb", "--set", "epochs=inf"],
                                     ["run", "params/toy.yaml", "epochs=inf"]])
def test_plan_and_run_refuse_an_infinite_number_of_epochs_in_one_line(command, store, capsys):
    from srnets_lib.__main__ import main

    assert main(command) == 2
    err = capsys.readouterr().err
    assert "epochs: Input should be a finite number (got 'inf'), set on the command line (epochs=inf)" in err
    assert "input_value" not in err
    assert "OverflowError" not in err and len(err.strip().splitlines()) <= 3


def test_an_error_quotes_a_value_at_most_a_line_long(tmp_path):
    huge = "x" * 5_000_000
    bad = tmp_path / "huge.yaml"
    bad.write_text(open("params/toy.yaml").read().replace("lr: 5.0e-4", f"lr: {huge}"))
    with pytest.raises(params.ParamsError) as err:
        params.load(bad)
    lines = str(err.value).splitlines()
    assert any("lr: Input should be a valid number" in line and "(5000000 characters)" in line for line in lines)
    assert max(len(line) for line in lines) <= 300
    with pytest.raises(params.ParamsError) as err:
        params.load("params/toy.yaml", [f"tasks={huge}"])
    assert max(len(line) for line in str(err.value).splitlines()) <= 300


@pytest.mark.parametrize("override, read", [
    ("execution.eval_ood=every", lambda p: p.execution.eval_ood == "every"),
    ("sections.imp_target=0.8", lambda p: p.sections.imp_target == 0.8),
    ("preset.seeds=[3]", lambda p: p.preset.seeds == [3]),
    ("tamt.sparsities=[0.7]", lambda p: p.tamt.sparsities == [0.7]),
    ("defaults.lr=0.25", lambda p: p.run("nli").lr == 0.25),
    ("data.train_size=64", lambda p: p.run("nli").data.train_size == 64),
])
def test_the_command_line_reaches_every_block_of_a_params_file(override, read):
    assert read(params.load("params/toy.yaml", [override]))


@pytest.mark.parametrize("override, where", [("bogus=1", "bogus"), ("execution.bogus=1", "execution.bogus"),
                                             ("data.bogus=1", "data.bogus"), ("tamt.bogus=1", "tamt.bogus")])
def test_an_unknown_key_on_the_command_line_is_blamed_on_the_command_line(override, where):
    with pytest.raises(params.ParamsError) as err:
        params.load("params/toy.yaml", [override])
    assert f"unknown key '{where}' (typo?), set on the command line ({override})" in str(err.value)
    bad = "params/toy.yaml"
    assert f"{bad}:\n" not in str(err.value)  # the file is not blamed


@pytest.mark.parametrize("variable, read", [
    ("SRNETS_RUNS", lambda: paths.runs_root()),
    ("SRNETS_PARAMS", lambda: __import__("srnets_lib.book.page").book.page.load("sec4_2", compute=False)),
    ("SRNETS_COMPUTE", lambda: __import__("srnets_lib.book.page").book.page._computing(None)),
    ("SRNETS_CHECKPOINT_SECONDS", lambda: __import__("srnets_lib.training.fit").training.fit.checkpoint_seconds()),
    ("SRNETS_COMPILE", lambda: __import__("srnets_lib.engine.runtime").engine.runtime.compiled()),
])
def test_a_setting_set_but_empty_is_refused_by_name(monkeypatch, variable, read):
    """SRNETS_RUNS= once made the working directory the run store."""
    monkeypatch.setenv(variable, "")
    with pytest.raises(ValueError, match=rf"\$?{variable}.*(empty|expected)"):
        read()


def test_an_empty_run_store_variable_stops_the_command_line_in_one_line(monkeypatch, tmp_path, capsys):
    from srnets_lib.__main__ import main

    monkeypatch.setenv("SRNETS_RUNS", "")
    monkeypatch.chdir(tmp_path)
    assert main(["run", str(paths.PARAMS_DIR / "toy.yaml"), "backbone=tiny", "data.train_size=16"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: SRNETS_RUNS is set but empty") and len(err.strip().splitlines()) == 1
    assert not any(tmp_path.iterdir())  # nothing written where the command ran
