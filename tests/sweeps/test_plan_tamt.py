"""Part II's paper-scale plan: params/paper.yaml runs what the TAMT authors' scripts ran
(github.com/llyx97/TAMT; the script behind each value is named beside it), for figures 3 and 4
and the probes of figures 1/5. Steps from the published sizes (TAMT appendix B.2: 27,920 iterations in 2
epochs at batch 16 on WikiText-103; GLUE and SQuAD's distributed sizes)."""

import pytest

from srnets_lib.settings import params
from srnets_lib.sweeps import plan
from srnets_lib.settings.recipes import Recipes
from srnets_lib.book.runs import of_notebooks as graph
from srnets_lib import methods

NOTEBOOKS = ["book/tamt_transfer.ipynb", "book/tamt_pretraining.ipynb"]


@pytest.fixture(scope="module")
def planned():
    runs, shown = graph(NOTEBOOKS, params.load("params/paper.yaml"))
    return plan.plan(shown, runs)


@pytest.fixture(scope="module")
def R():
    return Recipes(params.load("params/paper.yaml"))


def test_figures_3_and_4_and_the_probes_are_5085_runs(planned):
    counts = {}
    for p in planned:
        key = (p.section, "corpus" if p.config.task == "corpus" else "task", p.config.backbone)
        counts[key] = counts.get(key, 0) + 1
    # BERT (figure 3), masks: 3 objectives x 5 sparsities x 3 seeds + 3 IMP runs (every level) + 27 random
    # + 9 OMP (one mask); transfers per task: each mask x 3 fine-tuning seeds (IMP: 5 levels x 3 masks)
    # + the full model x 3
    assert counts[("tamt_transfer", "corpus", "bert-base-uncased")] == 45 + 3 + 27 + 9
    assert counts[("tamt_transfer", "task", "bert-base-uncased")] == 7 * (3 * (45 + 15 + 27 + 9) + 3)
    assert counts[("tamt_pretraining", "corpus", "bert-base-uncased")] == 45 + 15  # TAMT masks and IMP levels
    # RoBERTa-base (figure 4): TAMT and IMP at 0.2-0.9 (8 sparsities), OMP and random at 0.1-0.9
    assert counts[("tamt_transfer", "corpus", "roberta-base")] == 72 + 3 + 27 + 9
    assert counts[("tamt_transfer", "task", "roberta-base")] == 7 * (3 * (72 + 24 + 27 + 9) + 3)
    assert len(planned) == 2181 + 2904


def test_roberta_runs_are_berts_but_the_backbone(R):
    """Figure 4: the RoBERTa scripts (train_mlm/roberta/<s>.sh, imp/roberta/prun_step2792/,
    oneshot/roberta_mag.sh, run_glue/train_mlm/main_result/roberta/<task>/<s>.sh) set what BERT's do;
    its 0.2-0.4 masks are taken at 3000, 6000 and 8000 iterations."""
    roberta = Recipes(R.p.model_copy(update={"forced": {"backbone": "roberta-base"}}))
    for bert_run, roberta_run in [(R.tamt("mlm", 0.7, 1), roberta.tamt("mlm", 0.7, 1)), (R.tamt_imp(2), roberta.tamt_imp(2)),
                                  (R.transfer("rte", R.oneshot("omp", 0.5, 1), 3),
                                   roberta.transfer("rte", roberta.oneshot("omp", 0.5, 1), 3))]:
        assert roberta_run.model_dump(exclude={"backbone", "mask_from"}) == bert_run.model_dump(exclude={"backbone", "mask_from"})
        assert roberta_run.backbone == "roberta-base"
    # TAMT-KD's masks one update earlier: train_kd.py's step_<N-1> (tamt.kd_one_update_fewer)
    assert [roberta.tamt("kd", s, 1).max_steps for s in (0.2, 0.3, 0.4)] == [2999, 5999, 7999]
    assert roberta.transfer("rte", roberta.tamt("mlm", 0.7, 1), 1).task_agnostic_mask


def test_tamt_mask_training_as_shell_scripts_train_mlm_and_train_kd(R):
    mlm = R.tamt("mlm", 0.7, 1)  # mask_training/shell_scripts/train_mlm/bert/0.7.sh; run_glue/train_mlm/main_result
    assert (mlm.lr, mlm.batch_size, mlm.max_length, mlm.epochs, mlm.warmup_steps, mlm.weight_decay) == (
        5e-5, 16, 512, 2, 0, 0.0)
    assert (mlm.max_steps, mlm.select, mlm.mask_init, mlm.phi, mlm.alpha, mlm.eval_interval) == (
        17000, "last", "hard", 0.01, 2.0, 1000)
    assert mlm.init_from is None and mlm.backbone == "bert-base-uncased"  # BERT's own MLM head
    kd = R.tamt("kd", 0.9, 2)  # train_kd/bert/0.9.sh with train_kd.py: BertAdam 2e-5, wd 0.01, eval_step 100
    assert (kd.lr, kd.weight_decay, kd.eval_interval, kd.max_steps) == (2e-5, 0.01, 100, 21999)  # step_21999
    assert methods.planned_schedule(mlm).t_max == 27_920  # the lr decays over the 2 epochs, the mask taken at 17k


def test_imp_on_mlm_as_imp_prun_step2792(R):
    imp = R.tamt_imp(1)  # imp_and_fine_tune/shell_scripts/imp/bert/prun_step2792/pretrain_imp_seed1.sh
    assert (imp.method, imp.imp_rewind, imp.lr, imp.batch_size, imp.epochs, imp.sparsity) == (
        "imp-rw", False, 5e-5, 16, 2, 0.9)  # LT_pretrain.py:397, 528-530: its rewind aliases the live weights
    schedule = methods.planned_schedule(imp)
    assert schedule.restarts[:3] == (0, 2792, 5584) and schedule.steps == 9 * 2792  # LT_pretrain.py
    assert schedule.levels[5 * 2792] == 0.5 and schedule.pick_level


def test_transfer_as_run_glue_and_run_squad(R):
    omp = R.oneshot("omp", 0.7, 1)
    cola = R.transfer("cola", omp, 2)  # run_glue/oneshot/.../cola/0.7.sh
    assert (cola.lr, cola.batch_size, cola.max_length, cola.epochs, cola.warmup_steps, cola.eval_interval) == (
        2e-5, 32, 128, 3, 0, 50)
    assert cola.mask_from == omp and cola.seed == 2
    assert R.transfer("mnli", omp, 1).eval_interval == 500 and R.full("mnli", "std", 1).eval_interval == 500
    squad = R.transfer("squad", omp, 1)  # run_squad/*/bert/0.7.sh
    assert (squad.lr, squad.batch_size, squad.max_length, squad.epochs, squad.eval_interval) == (3e-5, 16, 384, 2, 1000)
    assert methods.planned_schedule(R.transfer("sst2", omp, 1)).steps == 3 * 2105  # ceil(67,349 / 32) per epoch


def test_figure_9_as_run_glue_few_shot(R):
    """imp_and_fine_tune/shell_scripts/run_glue/few_shot/: a random subset per fine-tuning seed
    (glue_trans_few.py:880, squad_trans_few.py:1005), 8 epochs at 1k, 5 fine-tuning seeds per mask
    (CoLA at 2k: IMP and TAMT-KD 5 epochs, TAMT-MLM 6, 3 seeds; 4k: TAMT only), SQuAD evaluated
    every 500 steps and at least once an epoch."""
    from srnets_lib.book import sections

    omp = R.oneshot("omp", 0.7, 1)
    cola = R.reduced("cola", omp, 4, None, 1000, 8)
    assert (cola.data.subset_size, cola.data.subset_seed, cola.epochs, cola.eval_interval) == (1000, 4, 8, 50)
    assert methods.planned_schedule(cola).steps == 8 * 32  # 256 steps where the first 1k at 3 epochs ran 96
    squad = R.reduced("squad", omp, 1, None, 1000, 8)
    assert squad.eval_interval == 63 and R.reduced("squad", omp, 1, None, 40000).eval_interval == 500  # ceil(1000/16)
    reduced = R.p.tamt.reduced_data
    assert reduced.cell("cola", 2000, "TAMT-MLM") == (6, [1, 2, 3]) and reduced.cell("cola", 2000, "IMP") == (5, [1, 2, 3])
    assert reduced.cell("cola", 4000, "OMP") == (None, []) and reduced.cell("sst2", 1000, "OMP") == (8, [1, 2, 3, 4, 5])
    first = Recipes(R.p.model_copy(update={"tamt": R.p.tamt.model_copy(update={
        "reduced_data": reduced.model_copy(update={"subsets": "first"})})}))
    assert first.reduced("cola", omp, 4, None, 1000).data.train_size == 1000
    assert first.reduced("cola", omp, 4, None, 1000).data.subset_size is None
    points = sections.points("tamt_data", R.p)
    counts = {}
    for p in points:
        counts[p.task] = counts.get(p.task, 0) + 1
    # per size: the full model and OMP x 5 seeds, 3 masks x 5 seeds for TAMT-MLM, TAMT-KD and IMP
    assert counts == {"mnli": 5 * 55, "sst2": 4 * 55, "squad": 5 * 55, "cola": 55 + (9 * 3 + 10) + 18 + 55}


def test_figure_7_starts_from_the_initial_masks(R):
    """Figure 7's step 0: the OMP and the random mask themselves, a search stopped after 0 updates
    (no update fewer for TAMT-KD there)."""
    from srnets_lib.book import sections

    assert [R.tamt(o, 0.7, 1, init, steps=0).max_steps for o in ("mlm", "kd") for init in ("hard", "random")] == [0] * 4
    zero = {(p.series, p.config.mask_from.mask_init) for p in sections.points("tamt_iterations", R.p)
            if p.x == 0 and not p.reference}
    assert zero == {("TAMT-MLM", "hard"), ("TAMT-KD", "hard"), ("TAMT-MLM (Rand_init)", "random"),
                    ("TAMT-KD (Rand_init)", "random")}


def test_figures_14_to_16_read_imp_s_levels_of_one_run_per_interval(R):
    """imp/bert/prun_step<n>/ run LT_pretrain.py once per interval, which keeps pruning: figures 6 and
    14-16 read its levels at 60%, 70% and 80%; at 2792 steps it is figure 3's IMP run."""
    from srnets_lib.book import sections

    assert R.tamt_imp(1, 2792) == R.tamt_imp(1) and R.tamt_imp(1, 300).sparsity == 0.9
    imp = {(p.group, p.x, p.config.mask_level) for p in sections.points("tamt_iterations", R.p)
           if p.series == "IMP" and p.config.mask_from.imp_interval == 2792}
    assert imp == {("60% sparsity", 5 * 2792, 0.6), ("", 6 * 2792, 0.7), ("80% sparsity", 7 * 2792, 0.8)}


def test_opt_in_sparsities_beyond_imp_s_last_level_are_left_out():
    """A params file whose IMP stops at 70% (the toy's) with the paper's trajectory and iteration
    sparsities (0.5-0.8): the pages leave 0.8 out (IMP has no level there) instead of failing."""
    from srnets_lib.book import sections

    toy = params.load("params/toy.yaml")
    wide = toy.model_copy(update={"tamt": toy.tamt.model_copy(update={
        "trajectory_sparsities": [0.5, 0.6, 0.7, 0.8], "iteration_sparsities": [0.6, 0.7, 0.8]})})
    groups = {p.group for p in sections.points("tamt_iterations", wide)}
    assert groups == {"", "60% sparsity"}
    assert max(p.x for p in sections.points("tamt_pretraining", wide, full=True) if p.series == "IMP") == 0.7
