"""The authors' runs down to the optimiser step (github.com/llyx97/sparse-and-robust-PLM and
github.com/llyx97/TAMT; the file and line behind each behaviour are named in its test): each a switch
with both settings tested, and what params/paper.yaml sets it to. Ours is each switch's default."""

import copy
import math

import pytest
import torch

from srnets_lib import methods
from srnets_lib.engine.step import HFAdamW, Optimization
from srnets_lib.model import backbones, pruning
from srnets_lib.settings import params
from srnets_lib.settings.config import DataConfig, RunConfig
from srnets_lib.settings.recipes import Recipes
from srnets_lib.settings.request import Request
from srnets_lib.store.runs import Run
from srnets_lib.training.prepare import build_run


def hf_adamw_formula(grads: list[float], lr: float, wd: float = 0.0, eps: float = 1e-8, b1=0.9, b2=0.999) -> float:
    """hg_transformers/optimization.py AdamW.step in float64: denom = sqrt(v) + eps, step_size =
    lr sqrt(1 - b2^t) / (1 - b1^t), p -= step_size m / denom, then p -= lr wd p."""
    p, m, v = 1.0, 0.0, 0.0
    for t, g in enumerate(grads, 1):
        m, v = b1 * m + (1 - b1) * g, b2 * v + (1 - b2) * g * g
        p -= lr * math.sqrt(1 - b2 ** t) / (1 - b1 ** t) * m / (math.sqrt(v) + eps)
        p -= lr * wd * p
    return p


def stepped(optimizer, grads: list[float]) -> float:
    p = optimizer.param_groups[0]["params"][0]
    for g in grads:
        p.grad = torch.full_like(p, g)
        optimizer.step()
    return float(p.detach().double()[0])


@pytest.mark.parametrize("grad", [1e-7, 1e-3, 1.0, 40.0])
@pytest.mark.parametrize("wd", [0.0, 0.01])
def test_hf_adamw_steps_as_transformers_3_adamw(grad, wd):
    """Ten steps of a constant gradient, small (a mask score's on BERT-base can be 1e-7) and large:
    the update equals the formula to 1e-6 relative (the distance moved, p0 - p)."""
    grads = [grad * (1 + 0.1 * (t % 3)) for t in range(10)]
    p = torch.nn.Parameter(torch.ones(3, dtype=torch.float64))
    moved = 1.0 - stepped(HFAdamW([p], lr=1e-3, weight_decay=wd), grads)
    assert moved == pytest.approx(1.0 - hf_adamw_formula(grads, 1e-3, wd), rel=1e-6)


def test_hf_adamw_differs_from_torch_adamw_on_small_gradients_only():
    """A constant gradient of 1e-7: their first update is 0.24 lr (eps 1e-8 against sqrt(v) =
    3.2e-9 before the correction), torch's 0.91 lr (eps against the corrected 1e-7); on a gradient
    of 1 both are lr within 1e-6. Their effective eps is eps / sqrt(1 - 0.999^t): 31.6x at step 1."""
    def first(optimizer_name, g):
        p = torch.nn.Parameter(torch.zeros(1, dtype=torch.float64))
        Optimization([p], lr=1.0, weight_decay=0.0, steps=10, warmup=0, optimizer=optimizer_name).step((p * g).sum())
        return -float(p.detach())

    assert first("hf_adamw", 1e-7) == pytest.approx(0.2403, abs=1e-4)
    assert first("adamw", 1e-7) == pytest.approx(0.9091, abs=1e-4)
    assert first("hf_adamw", 1.0) == pytest.approx(first("adamw", 1.0), rel=1e-6)
    assert 1 / math.sqrt(1 - 0.999) == pytest.approx(31.6, abs=0.05)
    assert 1 / math.sqrt(1 - 0.999 ** 1000) == pytest.approx(1.26, abs=0.005)


def test_hf_adamw_resumes_from_its_state_dict():
    """A resume point (fit.Loop.checkpoint) restores each tensor's step count and moments."""
    p = torch.nn.Parameter(torch.ones(2))
    opt = HFAdamW([p], lr=1e-2)
    stepped(opt, [0.5, 0.25])
    q = torch.nn.Parameter(p.detach().clone())
    other = HFAdamW([q], lr=1e-2)
    other.load_state_dict(copy.deepcopy(opt.state_dict()))  # as torch.save and torch.load give it back
    assert stepped(opt, [1.0]) == stepped(other, [1.0])
    assert other.state[q]["step"] == 3


# --- IMP on MLM without rewinding (TAMT's LT_pretrain.py) ------------------------------------------

CORPUS = dict(task="corpus", backbone="tiny", data=DataConfig(train_size=24, dev_size=4, ood_size=4),
              max_length=32, batch_size=8, lr=1e-2, eval_interval=3)


def test_imp_without_rewinding_prunes_and_keeps_the_trained_weights():
    """imp_rewind false (LT_pretrain.py as run: `orig`, line 397, shares storage with the live
    weights, so lines 528-530 copy them onto themselves): after a pruning every weight is the
    trained one, pruned entries aside; with imp_rewind the backbone goes back to theta_0."""
    for rewind in (False, True):
        config = RunConfig(method="imp-rw", loss="mlm", sparsity=0.2, imp_rewind=rewind, epochs=6, **CORPUS)
        method = methods.create(config, 24)  # t_max 18: prune every step
        model = backbones.load_pretraining_model("tiny")
        pruning.install(model, method.masked_layers())
        method.prepare(model)
        theta_0 = {n: p.detach().clone() for n, p in model.named_parameters()}
        with torch.no_grad():
            for p in model.parameters():
                p.add_(1.0)  # as if trained
        method.before_step(model, 1)  # the second pruning, to 20%
        backbone = [n for n in theta_0 if n.startswith("bert.")]
        assert all(torch.equal(dict(model.named_parameters())[n], theta_0[n]) == rewind for n in backbone)


def test_the_aliasing_that_makes_their_rewind_a_no_op():
    """What LT_pretrain.py does, on torch itself: state_dict() taken before prune.l1_unstructured
    shares storage with `weight_orig` (the same Parameter re-registered), an in-place update moves
    both, and load_state_dict of that copy restores nothing."""
    import torch.nn.utils.prune as prune

    layer = torch.nn.Linear(4, 4)
    orig = {"weight_orig": layer.state_dict()["weight"]}  # rewind(): key + "_orig"
    prune.l1_unstructured(layer, "weight", amount=0.25)
    with torch.no_grad():
        layer.weight_orig.add_(1.0)  # AdamW's p.data.addcdiv_
    trained = layer.weight_orig.detach().clone()
    state = layer.state_dict()
    state.update(orig)
    layer.load_state_dict(state)
    assert torch.equal(layer.weight_orig, trained)


def test_paper_params_never_rewind_tamt_s_imp_and_the_toy_does():
    paper, toy = (Recipes(params.load(f"params/{name}.yaml")) for name in ("paper", "toy"))
    assert not paper.p.tamt.imp_rewind and not paper.tamt_imp(1).imp_rewind
    assert not paper.tamt_imp(1, 300).imp_rewind
    assert toy.p.tamt.imp_rewind and toy.tamt_imp(1).imp_rewind and toy.tamt_imp(1, 4).imp_rewind


# --- Part I compares the evaluations at logging steps only ------------------------------------------

def test_part_one_selects_among_the_logging_steps_only_with_select_final_false():
    """trainer.py:568-605 and mask_trainer.py:636-705 evaluate and keep the best at
    global_step % logging_steps == 0; the weights after the last step are never compared. MNLI's
    std run: 36,816 steps, its last compared evaluation 36,000; mask training 61,360 and 61,000."""
    p = params.load("params/paper.yaml")
    std = p.run("nli", "finetune", "std")
    mask = p.run("nli", "mask", "poe", sparsity=0.7, init_from=std)
    for config, last, compared in ((std, 36_816, 36_000), (mask, 61_360, 61_000)):
        schedule = methods.planned_schedule(config)
        assert not config.select_final and schedule.steps == last and last in schedule.evaluations
        assert max(schedule.selectable) == compared and last not in schedule.selectable
        ours = methods.planned_schedule(config.model_copy(update={"select_final": True}))
        assert last in ours.selectable
    assert p.run("nli", "imp", "std", sparsity=0.9, init_from=std).select_final  # IMP selects nothing
    toy = params.load("params/toy.yaml")
    assert toy.run("nli", "finetune", "std").select_final and toy.run("nli", "mask", "std", sparsity=0.5).select_final
    with pytest.raises(ValueError, match="select_final=False is method"):
        RunConfig(task="nli", method="imp", sparsity=0.5, select_final=False)


# --- TAMT-KD's threshold resets; hard init's ties -----------------------------------------------------

def test_tamt_kd_resets_its_thresholds_at_train_kd_py_s_steps():
    """train_kd.py:1082, 1126: after update t when (t + 1) % eval_step == 0 or t == 1 (1, 99, 199, ...,
    16,999: 171 resets in 16,999 updates); ours every 100 updates and the last (170), none after update 1."""
    kd = dict(task="corpus", method="mask", loss="kd", sparsity=0.7, max_steps=16_999, epochs=2, batch_size=16,
              eval_interval=100, select="last", data=DataConfig(source="hub", train_size=200_000))
    theirs = methods.planned_schedule(RunConfig(**kd, threshold_reset_steps="train_kd"))
    ours = methods.planned_schedule(RunConfig(**kd))
    resets = sorted(s for s in theirs.sparsity_steps if s)
    assert resets[:4] == [1, 99, 199, 299] and resets[-2:] == [16_899, 16_999] and len(resets) == 171
    assert sorted(s for s in ours.sparsity_steps if s)[:2] == [100, 200] and len(ours.sparsity_steps) - 1 == 170
    assert theirs.evaluations == tuple(resets) and theirs.selectable == {16_999}
    paper = Recipes(params.load("params/paper.yaml"))
    assert paper.tamt("kd", 0.7, 1).threshold_reset_steps == "train_kd"
    assert paper.tamt("mlm", 0.7, 1).threshold_reset_steps == "interval"  # mask_trainer_mlm.py: every logging step
    assert Recipes(params.load("params/toy.yaml")).tamt("kd", 0.7, 1).threshold_reset_steps == "interval"


def test_hard_init_prunes_every_tie_at_the_kth_magnitude_only_with_hard_init_ties_authors():
    """masking/maskers.py:171-176: scores 2 phi where |W| > kthvalue(|W|, int(n s)), so every entry
    tied with the k-th smallest is pruned; ours prunes exactly k, ties broken by position."""
    weight = torch.tensor([[0.1, -0.2, 0.2, 0.2], [0.3, 0.2, -0.5, 0.6]])
    masks = {}
    for ties in ("exact", "authors"):
        layer = pruning.MaskedLinear(torch.nn.Linear(4, 2))
        layer.weight.data.copy_(weight)
        layer.start_mask_training("hard", 0.25, init_ties=ties)  # k = 2: the 2nd smallest |W| is 0.2, tied 4 times
        masks[ties] = layer.binary_mask()
    assert int((~masks["exact"]).sum()) == 2 and int((~masks["authors"]).sum()) == 5
    assert masks["authors"].tolist() == [[False, False, False, False], [True, False, True, True]]
    paper = Recipes(params.load("params/paper.yaml"))
    assert paper.tamt("mlm", 0.7, 1).hard_init_ties == "authors" == paper.prune_ft("nli", "mask", "poe", 0.5, 1).hard_init_ties
    with pytest.raises(ValueError, match="hard_init_ties=authors is method MaskTraining's"):
        RunConfig(task="nli", hard_init_ties="authors")


# --- how many entries a pruning removes ----------------------------------------------------------

def test_torch_rounding_counts_as_torch_prune_itself():
    """prune_rounding torch: the count torch.nn.utils.prune.l1_unstructured reaches, one-shot
    (oneshot.py:43) and iterated with amount 1 / (10 - j) (LT_pretrain.py:400, 521), on BERT-base's
    matrix sizes; ours floor(n s). They differ by -1 to +2 entries per matrix."""
    import torch.nn.utils.prune as prune

    from srnets_lib.model.pruning import magnitude

    differences = set()
    for shape in ((768, 768), (3072, 768)):
        n = shape[0] * shape[1]
        layer = torch.nn.Linear(shape[1], shape[0])
        for j in range(9):
            prune.l1_unstructured(layer, "weight", amount=1 / (10 - j))
            theirs = int((layer.weight_mask == 0).sum())
            assert magnitude.iterative_count(n, j + 1, 0.1, "torch") == theirs
            ours = magnitude.iterative_count(n, j + 1, 0.1, "floor")
            assert ours == pruning.pruned_count(n, (j + 1) / 10)
            differences.add(theirs - ours)
        assert magnitude.count(n, 0.7, "torch") == round(0.7 * n)
    assert differences == {-1, 0, 1, 2}


def test_imp_and_omp_prune_torch_s_count_only_with_prune_rounding_torch():
    counts = {}
    for rounding in ("floor", "torch"):
        config = RunConfig(method="imp-rw", loss="mlm", sparsity=0.3, epochs=6, prune_rounding=rounding, **CORPUS)
        method = methods.create(config, 24)
        model = backbones.load_pretraining_model("tiny")
        pruning.install(model, method.masked_layers())
        method.prepare(model)
        for step in sorted(method.schedule.sparsity_steps):
            method.before_step(model, step)
        counts[rounding] = {n: int((~m.mask).sum()) for n, m in pruning.masked_modules(model).items()}
        omp = RunConfig(method="omp", loss="mlm", sparsity=0.7, prune_rounding=rounding, **CORPUS)
        shot = methods.create(omp, 24)
        model = backbones.load_pretraining_model("tiny")
        pruning.install(model, shot.masked_layers())
        shot.prepare(model)
        counts["omp " + rounding] = {n: int((~m.mask).sum()) for n, m in pruning.masked_modules(model).items()}
    sizes = {n: m.weight.numel() for n, m in pruning.masked_modules(model).items()}
    assert counts["floor"] == {n: pruning.pruned_count(k, 0.3) for n, k in sizes.items()}
    assert counts["torch"] == {n: magnitude_count(k, 3) for n, k in sizes.items()} != counts["floor"]
    assert counts["omp torch"] == {n: round(0.7 * k) for n, k in sizes.items()} != counts["omp floor"]
    paper = Recipes(params.load("params/paper.yaml"))
    assert {paper.tamt_imp(1).prune_rounding, paper.oneshot("random", 0.7, 1).prune_rounding,
            paper.imp("nli", "std", 1).prune_rounding} == {"torch"}
    with pytest.raises(ValueError, match="prune_rounding=torch is method"):
        RunConfig(task="nli", method="mask", sparsity=0.5, prune_rounding="torch")


def magnitude_count(numel: int, prunings: int) -> int:
    pruned = 0
    for j in range(prunings):
        pruned += round(1 / (10 - j) * (numel - pruned))
    return pruned


# --- MRPC's reported score ------------------------------------------------------------------------

def test_mrpc_s_score_is_the_larger_of_accuracy_and_acc_and_f1_with_the_authors_dev_metric():
    """glue_trans.py:425: best_score runs over every key holding 'acc': MRPC's eval_acc and
    eval_acc_and_f1. A model predicting mostly class 0 has F1 below its accuracy: there they part."""
    from srnets_lib.metrics import acc_and_f1, accuracy, max_acc_acc_and_f1

    refs = [1, 1, 1, 0, 0, 0, 0, 0]
    for preds in ([1, 1, 1, 1, 0, 0, 0, 0], [0, 0, 1, 0, 0, 0, 0, 0]):
        assert max_acc_acc_and_f1(preds, refs) == max(accuracy(preds, refs), acc_and_f1(preds, refs))
    assert max_acc_acc_and_f1([0, 0, 1, 0, 0, 0, 0, 0], refs) == accuracy([0, 0, 1, 0, 0, 0, 0, 0], refs) == 0.75
    paper = Recipes(params.load("params/paper.yaml"))
    omp = paper.oneshot("omp", 0.7, 1)
    assert paper.transfer("mrpc", omp, 1).dev_metric == "max_acc_acc_and_f1"
    assert paper.transfer("cola", omp, 1).dev_metric is None
    with pytest.raises(ValueError, match="dev_metric='max_acc_acc_and_f1' is not recorded for task cola"):
        RunConfig(task="cola", data=DataConfig(source="hub"), dev_metric="max_acc_acc_and_f1")
    with pytest.raises(ValueError, match="dev_metric=squad_f1 is a setting of the classification kind"):
        RunConfig(task="squad", data=DataConfig(source="hub"), dev_metric="squad_f1")


def test_dev_metric_is_what_a_run_selects_on_and_reports(store):
    """The same tiny run scored on the synthetic paraphrase task's F1 (its metric) and on accuracy
    (dev_metric): the result names the metric, and its dev score is that metric's."""
    from srnets_lib.sweeps.executors import execute
    from srnets_lib.settings.request import Request

    base = dict(task="paraphrase", backbone="tiny", data=DataConfig(train_size=96, dev_size=48, ood_size=32, test_size=32),
                epochs=2, batch_size=32, eval_interval=2, max_length=48, lr=1e-3)
    ours, theirs = execute(RunConfig(**base), Request(ood_every=True)), execute(
        RunConfig(**base, dev_metric="accuracy"), Request(ood_every=True))
    assert (ours.metric, theirs.metric) == ("f1", "accuracy")
    rows = Run(RunConfig(**base, dev_metric="accuracy")).metrics()
    assert theirs.dev == max(r["dev"] for r in rows) and all("dev_f1" in r for r in rows)
    assert [r["dev"] for r in rows] == [r["dev_accuracy"] for r in Run(RunConfig(**base)).metrics()]


# --- TAMT-KD's partial batch; the held-out losses' averaging ------------------------------------------

def test_drop_last_skips_the_partial_batch_as_train_kd_py(store):
    """train_kd.py:951-952 skips a batch smaller than train_batch_size: floor(n / b) steps an epoch,
    the lr decaying over int(epochs n / b) (lines 828-829); ours keeps it: ceil(n / b)."""
    kd = dict(task="corpus", method="mask", loss="kd", sparsity=0.5, epochs=2, batch_size=16, select="last")
    theirs = methods.schedule(RunConfig(**kd, drop_last=True), 104)
    ours = methods.schedule(RunConfig(**kd), 104)
    assert (theirs.steps_per_epoch, theirs.t_max, theirs.steps) == (6, 13, 12)
    assert (ours.steps_per_epoch, ours.t_max, ours.steps) == (7, 14, 14)
    for drop in (True, False):
        config = RunConfig(method="mask", loss="mlm", sparsity=0.5, **{**CORPUS, "batch_size": 10}, drop_last=drop)
        run = build_run(config, Run(config), Request())
        sizes = [len(b["inputs"]["input_ids"]) for _, b in run.batches(0, run.schedule.steps, run.schedule.steps_per_epoch)]
        assert sizes == ([10, 10] * 3 if drop else [10, 10, 4] * 3)
    assert Recipes(params.load("params/paper.yaml")).tamt("kd", 0.7, 1).drop_last
    assert not Recipes(params.load("params/paper.yaml")).tamt("mlm", 0.7, 1).drop_last  # the HF Trainer keeps it


def test_held_out_losses_average_per_batch_means_with_eval_loss_batch(store):
    """eval_kd.py:312-314 and eval_mlm.py's Trainer (hg_transformers/trainer.py:779, 818): the mean
    of the per-batch mean losses; ours weights each batch by its examples. 5 blocks in batches of 2:
    the last batch of 1 counts as much as the others."""
    import numpy as np

    base = dict(CORPUS, data=DataConfig(train_size=24, dev_size=5, ood_size=4))
    for per_batch in (None, 2):
        config = RunConfig(method="omp", loss="mlm", sparsity=0.5, eval_loss_batch=per_batch, **base)
        run = build_run(config, Run(config), Request(eval_batch_size=2))
        run.model.eval()  # as scores() evaluates
        with torch.inference_mode():
            values = [float(run.evaluator.loss.losses(b, ("mlm",))["mlm"]) for b in run.evaluator.batches]
        sizes = [len(b["inputs"]["input_ids"]) for b in run.evaluator.batches]
        assert sizes == [2, 2, 1]
        expected = np.mean(values) if per_batch else np.average(values, weights=sizes)
        assert run.evaluator.scores(run.model)["mlm_loss"] == pytest.approx(expected, rel=1e-6)
        assert np.mean(values) != pytest.approx(np.average(values, weights=sizes), rel=1e-6)
    assert Recipes(params.load("params/paper.yaml")).probe(Recipes(params.load("params/paper.yaml")).oneshot(
        "omp", 0.7, 1)).eval_loss_batch == 16
    with pytest.raises(ValueError, match="eval_loss_batch=16 is a setting of the corpus kind"):
        RunConfig(task="nli", eval_loss_batch=16)


def test_paper_params_step_every_run_with_the_authors_adamw_but_tamt_kd_s():
    """Every AdamW of the authors' code is transformers 2.x/3.x's (trainer.py:322, mask_trainer.py:352,
    trainer_imp.py:323, glue_trans.py:295, squad_trans.py:303, LT_pretrain.py:349, 550, train_mlm.py:393);
    TAMT-KD steps with BertAdam (train_kd.py:901). The toy keeps torch's."""
    paper, toy = (Recipes(params.load(f"params/{name}.yaml")) for name in ("paper", "toy"))
    omp = paper.oneshot("omp", 0.7, 1)
    runs = [paper.full("nli", "std", 1), paper.prune_ft("nli", "mask", "poe", 0.7, 1), paper.imp("nli", "std", 1),
            paper.imp("nli", "std", 1, start="pt"), paper.tamt("mlm", 0.7, 1), paper.tamt("mlm+kd", 0.7, 1),
            paper.tamt_imp(1), paper.transfer("cola", omp, 1), paper.transfer("squad", omp, 1)]
    assert {r.optimizer for r in runs} == {"hf_adamw"} and paper.tamt("kd", 0.7, 1).optimizer == "bertadam"
    assert {toy.full("nli", "std", 1).optimizer, toy.tamt("mlm", 0.7, 1).optimizer} == {"adamw"}


def test_plan_names_each_run_s_optimiser_and_imp_s_rewinding():
    from srnets_lib.sweeps import plan

    paper, toy = (Recipes(params.load(f"params/{name}.yaml")) for name in ("paper", "toy"))
    runs = {"paper imp": paper.tamt_imp(1), "toy imp": toy.tamt_imp(1), "kd": paper.tamt("kd", 0.7, 1),
            "probe": paper.probe(paper.oneshot("omp", 0.7, 1))}
    planned = [plan.PlannedRun("s", c, Request(), methods.planned_schedule(c)) for c in runs.values()]
    text = plan.report(planned)
    header, *rows = [line.split() for line in text.splitlines()[1:6]]
    assert header[8:10] == ["optimizer", "imp"] and header[10] == "weights"
    assert [r[8:10] for r in rows[:3]] == [["hf_adamw", "kept"], ["adamw", "rewound"], ["bertadam", "-"]]
    assert rows[3][7:10] == ["0", "-", "-"]  # the probe takes no step: no optimiser


def test_figure_8_reads_imp_s_masks_at_every_interval_mask_dist_py_compares():
    """mask_training/mask_dist.py: IMP's masks of prun_step 200 300 500 900 1396 2792 against OMP;
    figure 6 fine-tunes all but 1396 (run_glue/imp_pretrain/bert/steps/write_bash.py). The 1396
    masks are probed on the corpus only (imp/bert/prun_step1396/: 1 epoch), at IMP's iterations."""
    from srnets_lib.book import sections
    from srnets_lib.book.sections.tamt import PROBE_TASK

    paper = params.load("params/paper.yaml")
    points = sections.points("tamt_iterations", paper, tasks=["cola"], seeds=[1])
    probes = [p for p in points if p.series == "IMP" and p.task == PROBE_TASK]
    assert sorted((p.group, p.x) for p in probes) == [("", 6 * 1396), ("60% sparsity", 5 * 1396),
                                                     ("80% sparsity", 7 * 1396)]
    assert {(p.config.mask_from.imp_interval, p.config.mask_from.epochs) for p in probes} == {(1396, 1)}
    fine_tuned = {p.config.mask_from.imp_interval or 2792 for p in points if p.series == "IMP" and p.task == "cola"}
    assert fine_tuned == {200, 300, 500, 900, 2792}
    toy = params.load("params/toy.yaml")
    assert not [p for p in sections.points("tamt_iterations", toy, tasks=["nli"], seeds=[1]) if p.task == PROBE_TASK]


def their_second_pruning(evaluated: bool):
    """Two prunings of a layer as torch's pruning and their trainers do them: an update in place
    between them, and (`evaluated`) an evaluation forward just before the second."""
    import torch.nn.utils.prune as prune

    torch.manual_seed(0)
    layer = torch.nn.Linear(8, 8)
    prune.l1_unstructured(layer, "weight", amount=0.1)  # 6 of 64
    first = layer.weight_mask.bool().clone()
    layer(torch.randn(2, 8))  # a training forward
    with torch.no_grad():
        layer.weight_orig.mul_(torch.rand(8, 8) * 2)  # the update, in place (AdamW's p.data.addcdiv_)
        if evaluated:
            layer(torch.randn(2, 8))  # the evaluation before the pruning
    prune.l1_unstructured(layer, "weight", amount=1 / 9)  # round(58 / 9) = 6 more
    return layer, first


def test_their_imp_ranks_the_current_weights_because_an_evaluation_precedes_each_pruning():
    """torch's pruning ranks `module.weight`, which its forward pre-hook sets at each forward pass:
    right after an update it still holds the weights of the last training forward. But every IMP
    script evaluates just before pruning (trainer_imp.py:727-732; LT_pretrain.py:473-482, 521, logging_steps
    = save_steps), so the ranked magnitudes are the current ones, as ours rank them (no switch)."""
    layer, first = their_second_pruning(evaluated=True)
    ours = pruning.MaskedLinear(torch.nn.Linear(8, 8))
    ours.weight.data.copy_(layer.weight_orig.detach())  # the current weights
    ours.set_mask(first)
    pruning.magnitude_prune(ours, 0.2, 12)
    assert int((layer.weight_mask == 0).sum()) == 12 and torch.equal(ours.mask, layer.weight_mask.bool())
    skipped, _ = their_second_pruning(evaluated=False)  # without the evaluation: the weights before the update
    assert not torch.equal(skipped.weight_mask, layer.weight_mask)
