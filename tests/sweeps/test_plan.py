"""The paper-scale plan: params/paper.yaml computes the authors' runs and only those.

Counts and values are transcribed from their scripts (github.com/llyx97/sparse-and-robust-PLM,
scripts/...; the file each value comes from is named beside it). Steps use the published
dataset sizes (appendix table 1; QQP as GLUE's file has it), batch 32, ceil(n / 32) per epoch.
"""

import subprocess
import sys

import pytest

from srnets_lib.sweeps import cost, plan
from srnets_lib.settings import params
from srnets_lib.book import sections
from srnets_lib.settings.recipes import Recipes
from srnets_lib.book.runs import of_notebooks as graph
from srnets_lib import methods
from srnets_lib.data.tasks import planned_train_rows

NOTEBOOKS = [f"book/{s}.ipynb" for s in ("sec4_2", "sec4_3", "sec4_4", "sec4_5", "sec5_1", "sec5_2", "appc1", "appc5")]
MNLI_EPOCH, QQP_EPOCH, FEVER_EPOCH = 12_272, 11_371, 7_591  # steps per epoch


def paper_plan():
    runs, shown = graph(NOTEBOOKS, params.load("params/paper.yaml"))
    return plan.plan(shown, runs)


@pytest.fixture(scope="module")
def planned():
    return paper_plan()


@pytest.fixture(scope="module")
def R():
    return Recipes(params.load("params/paper.yaml"))


def test_the_paper_is_928_runs_in_these_sections(planned):
    counts = {}
    for p in planned:
        counts[p.section] = counts.get(p.section, 0) + 1
    # per seed: 4.2 = 6 full models + 36 masks + 9 IMP runs (one per setting yields 0.1-0.9);
    # 4.3 = 3 ticket searches + 48 retrains; 4.4 = 24; 4.5 = 24 OOD masks + 12 retrains;
    # 5.1 = 12 (4 checkpoints x 3 tasks); 5.2 = 18 (figure 8 at two budgets, table 5 at its caption's);
    # C.1 = 6 full + 24 masks; C.5 = 2 backbones x 5 runs on NLI
    per_seed = {"sec4_2": 51, "sec4_3": 51, "sec4_4": 24, "sec4_5": 36, "sec5_1": 12, "sec5_2": 18,
                "appc1": 30, "appc5": 10}
    assert counts == {k: 4 * v for k, v in per_seed.items()}
    assert len(planned) == 928


def test_plan_command_ends_with_the_total_line():
    out = subprocess.run([sys.executable, "-m", "srnets_lib", "plan", *NOTEBOOKS, "--params", "params/paper.yaml"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    last = out.stdout.strip().splitlines()[-1]
    runs, steps = last.removeprefix("TOTAL: ").split(" runs, ")
    assert last == f"TOTAL: {runs} runs, {steps}" and runs == "928" and steps.endswith(" optimizer steps")
    assert int(steps.split()[0]) == sum(p.steps for p in paper_plan())
    assert "== sec4_2: 204 runs" in out.stdout


def test_full_models_as_scripts_full_bert(R):
    std = R.full("nli", "std", 1)  # full_bert/std_train/mnli.sh
    assert (std.lr, std.epochs, std.warmup_steps, std.eval_interval, std.max_grad_norm) == (5e-5, 3, 3600, 1000, 1.0)
    assert (std.backbone, std.batch_size, std.max_length, std.padding, std.precision) == (
        "bert-base-uncased", 32, 128, "max_length", "fp32")
    assert R.full("nli", "poe", 1).epochs == 5  # robust_train/poe/mnli.sh
    assert R.full("nli", "confreg", 1).epochs == 5 and R.full("nli", "reweight", 1).epochs == 3
    qqp = R.full("paraphrase", "poe", 1)  # robust_train/poe/qqp.sh: --global_grad_clip false
    assert (qqp.lr, qqp.epochs, qqp.warmup_steps, qqp.grad_clip) == (2e-5, 3, 3400, "per_parameter")
    fever = R.full("factcheck", "std", 1)  # std_train/fever.sh
    assert (fever.lr, fever.epochs, fever.warmup_steps, fever.eval_interval) == (2e-5, 3, 0, 500)
    assert methods.planned_schedule(std).steps == 3 * MNLI_EPOCH


def test_mask_training_as_scripts_mask_train(R):
    m = R.prune_ft("nli", "mask", "poe", 0.7, 1)  # mask_train/mask_on_plm_ft/plm_std_ft/poe/mnli/0.7.sh
    assert (m.lr, m.epochs, m.warmup_steps, m.select, m.mask_init, m.phi, m.alpha) == (
        5e-5, 5, 3600, "best_after_0.7", "hard", 0.01, 2.0)
    assert m.init_from == R.full("nli", "std", 1) and m.threshold_ties == "authors"
    q = R.prune_ft("paraphrase", "mask", "std", 0.2, 1)  # .../plm_std_ft/std/qqp/0.2.sh
    assert (q.lr, q.epochs, q.warmup_steps, q.grad_clip) == (2e-5, 7, 3400, "per_parameter")
    f = R.prune_ft("factcheck", "mask", "poe", 0.9, 1, full_loss="poe")  # .../plm_poe_ft/poe/fever/0.9.sh
    assert (f.lr, f.epochs, f.warmup_steps, f.eval_interval, f.init_from.loss) == (2e-5, 7, 0, 500, "poe")
    assert R.prune_ft("nli", "mask", "reweight", 0.5, 1).epochs == 3  # .../reweighting/mnli/0.5.sh
    pt = R.prune_pt("nli", "mask", "std", 0.5, 1)  # mask_on_plm_pt/std/mnli/0.5.sh: --start_step_ratio 0.
    assert (pt.select, pt.epochs, pt.init_from) == ("best", 5, None)
    assert methods.planned_schedule(q).steps == 7 * QQP_EPOCH


def test_imp_as_scripts_imp(R):
    imp = R.imp("nli", "poe", 1, start="poe")  # imp/prune_after_robust_ft/poe/mnli.sh
    assert (imp.method, imp.sparsity, imp.epochs, imp.lr, imp.warmup_steps) == ("imp", 0.9, 5, 5e-5, 0)
    assert imp.init_from.loss == "poe"
    assert methods.planned_schedule(imp).steps == 9 * int(5 * MNLI_EPOCH / 10)  # stops after the 90% interval: 55,224
    lt = R.imp("paraphrase", "poe", 1, start="pt")  # imp/lt/pruning/qqp.sh: from bert-base-uncased
    assert (lt.method, lt.init_from, lt.epochs, lt.grad_clip) == ("imp-rw", None, 7, "global")


def test_retraining_in_isolation_as_scripts_retrain(R):
    tickets = R.imp("nli", "poe", 1, start="pt")
    lt_std = R.isolate("nli", tickets, "std", 1, level=0.5)  # imp/lt/retrain/std/mnli/0.5.sh: 5 epochs
    assert (lt_std.epochs, lt_std.lr, lt_std.warmup_steps, lt_std.mask_level) == (5, 5e-5, 3600, 0.5)
    masks = R.prune_ft("nli", "mask", "poe", 0.5, 1)
    assert R.isolate("nli", masks, "std", 1).epochs == 3  # .../poe/mnli/retrain/std/0.5.sh
    assert R.isolate("nli", masks, "poe", 1).epochs == 5  # .../poe/mnli/retrain/poe/0.5.sh
    assert R.isolate("factcheck", R.prune_ft("factcheck", "mask", "poe", 0.5, 1), "poe", 1).epochs == 3


def test_ood_runs_as_scripts_ood(R):
    ft = R.prune_ft("nli", "mask", "std", 0.9, 1, ood=True)  # .../plm_std_ft/ood/mnli/0.9.sh
    assert (ft.lr, ft.epochs, ft.warmup_steps, ft.data.ood_train) == (2e-5, 7, 3600, True)
    assert not ft.init_from.data.ood_train  # the ID-only std model
    assert R.prune_ft("nli", "mask", "std", 0.5, 1, ood=True).epochs == 3
    q = R.prune_ft("paraphrase", "mask", "std", 0.7, 1, ood=True)  # .../ood/qqp/0.7.sh
    assert (q.epochs, q.warmup_steps) == (5, 0)
    assert R.prune_ft("factcheck", "mask", "std", 0.9, 1, ood=True).epochs == 5
    pt = R.prune_pt("paraphrase", "mask", "std", 0.9, 1, ood=True)  # mask_on_plm_pt/ood/qqp/0.9.sh
    assert (pt.epochs, pt.lr, pt.warmup_steps, pt.select) == (3, 2e-5, 0, "best")
    retrain = R.isolate("nli", ft, "std", 1)  # .../ood/mnli/retrain/0.9.sh: ID data, 5e-5, 3 epochs
    assert (retrain.data.ood_train, retrain.lr, retrain.epochs) == (False, 5e-5, 3)
    assert planned_train_rows(ft.task, ft.data) == 392_702 + 30_000  # MNLI + HANS train


def test_timing_and_gradual_sections_as_scripts(R):
    points = sections.points("sec5_1", R.p, tasks=["factcheck"], seeds=[1])
    assert [p.config.init_step for p in points] == [None, 5000, 10000, 15000, 20000, None]
    assert {p.config.sparsity for p in points} == {0.9}  # appendix figure 3's caption (the scripts: 0.7)
    assert points[-1].config == R.prune_ft("factcheck", "mask", "poe", 0.9, 1)  # "ft to end" = 4.2's run
    scripts = Recipes(R.p.model_copy(update={"sections": R.p.sections.model_copy(update={"sec5_1": R.p.sections.sec5_1.model_copy(update={"sparsity": 0.7})})}))
    assert {p.config.sparsity for p in sections.points("sec5_1", scripts.p, tasks=["factcheck"], seeds=[1])} == {0.7}
    # QQP's mask_on_checkpoints scripts misspell --best_metric and --global_grad_clip: as they ran,
    # accuracy and global clipping; the "ft to end" run is 4.2's (plm_std_ft/poe/qqp/0.7.sh: F1, per parameter)
    qqp = sections.points("sec5_1", R.p, tasks=["paraphrase"], seeds=[1])
    assert {(p.config.select_metric, p.config.grad_clip) for p in qqp if p.config.init_step} == {("accuracy", "global")}
    assert (qqp[-1].config.select_metric, qqp[-1].config.grad_clip) == (None, "per_parameter")
    gradual = R.gradual("paraphrase", 0.7, 0.9, 1, epochs=7)  # .../poe/qqp/gradual_sparsity_increase/0.9.sh
    assert (gradual.mask_init, gradual.schedule, gradual.sparsity_init, gradual.ramp_end) == ("soft", "cubic", 0.7, 1.0)
    assert gradual.select_at_target is False
    table5 = {p.series: p.x for p in sections.points("sec5_2", R.p, tasks=["nli"], seeds=[1]) if not p.reference}
    assert table5["fixed, soft init"] == 3 and table5["gradual 0.2->0.9"] == 3  # table 5's caption


def test_the_std_models_keep_the_checkpoints_section_5_1_starts_from(planned):
    std = [p for p in planned if p.config.method == "finetune" and p.config.loss == "std"
           and p.config.mask_from is None and p.config.backbone == "bert-base-uncased"]
    assert len(std) == 12 and all(p.request.keep_steps == (5000, 10000, 15000, 20000) for p in std)
    assert all(p.request.weights for p in std)  # pruning runs start from them


def test_disk_estimate_counts_only_weights_a_later_run_reads(planned):
    disk = plan.disk_bytes(planned)
    # std and poe full models (3 tasks x 4 seeds) are read by pruning runs; reweight ones are not
    assert disk["weights"] > 0 and disk["kept steps (5.1)"] == pytest.approx(12 * 4 * 4 * 109_482_240, rel=0.01)


def test_plan_states_the_evaluation_cost_as_requested_and_the_authors_way(planned):
    """The paper's params score the OOD sets at the selected checkpoint only (the same reported
    numbers: tests/training/test_end_to_end.py); the plan prints the evaluated examples and GPU-hours of
    both that and the authors' every-evaluation scoring, side by side."""
    assert params.load("params/paper.yaml").execution.eval_ood == "selected"
    requested = sum(p.evaluated_rows() for p in planned)
    every = sum(p.evaluated_rows(True) for p in planned)
    assert 2 * requested < every  # 0.88B vs 2.03B examples
    rates = cost.Assumed(20, 6400)
    text = plan.report(planned, rates)
    assert f"evaluation: {requested / 1e9:.2f}B examples evaluated as requested" in text
    assert f"{every / 1e9:.2f}B with every OOD set at every evaluation" in text
    hours = [cost.gpu_hours(planned, rates, None, mode)[0] for mode in (None, True)]
    assert hours[0] < hours[1] and f"as planned (fp32/max_length/compiled): {hours[0]:.1f} ({hours[1]:.1f} with eval_ood: every)" in text


def test_each_part_plans_alone_and_a_page_asks_of_each_run_what_the_whole_book_asks():
    """make book PART=1 / PART=2 (sweep --part): the pages of one part; and a page swept alone asks
    of every run what the whole book asks of it, so sweeping page by page computes no run twice
    (its requests, what it keeps and scores, are those of the book's graph)."""
    toy = params.load("params/toy.yaml")
    book = [f"book/{s}.ipynb" for s in sections.SECTIONS]
    whole, _ = graph(book, toy)
    for part, first in ((1, "sec4_2"), (2, "tamt_transfer")):
        _, shown = graph(book, toy, part=part)
        assert next(iter(shown)) == first and all(sections.get(s).part == part for s in shown)
    for section in sections.SECTIONS:
        if sections.get(section).opt_in:
            continue
        alone, _ = graph([f"book/{section}.ipynb"], toy)
        assert alone.nodes and all(node.request == whole[key].request for key, node in alone.nodes.items())
    # the 4.2 page alone keeps the std model's weights after 5.1's steps and scores IMP's levels for 4.3 too
    alone, _ = graph(["book/sec4_2.ipynb"], toy)
    assert {n.request.keep_steps for n in alone if n.config.method == "finetune" and n.config.loss == "std"} == {
        tuple(toy.sections.sec5_1.steps)}


@pytest.mark.parametrize("file, runs, digest", [("params/paper.yaml", 6013, "d1502f4e20d9aec4"),
                                                ("params/toy.yaml", 147, "e6b3954519feec62")])
def test_the_books_runs_keep_their_keys(file, runs, digest):
    """Every run the book computes, by key: a refactoring that changed one run's settings, or what
    a key hashes, changes this digest (a deliberate change comes with `rekey` or a new
    ALGORITHM_VERSION, and a new digest here)."""
    import hashlib

    every, _ = graph([f"book/{s}.ipynb" for s in sections.SECTIONS], params.load(file))
    assert len(every.nodes) == runs
    assert hashlib.sha256(" ".join(sorted(every.nodes)).encode()).hexdigest()[:16] == digest
