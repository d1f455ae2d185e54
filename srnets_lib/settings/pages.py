"""The book pages' settings in a params file (its `sections` and `tamt` blocks): what a page
shows beyond its runs' hyper-parameters: its tasks and seeds where not the preset's, the settings
of a page that has its own (section 5.1's steps, 5.2's epochs, C.5's backbones), Part II's
objectives, masks and transfer tasks. Defaults: the authors'. Each page reads them itself
(book/sections/: Section.tasks, seeds, sparsities)."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Optional, Union

from pydantic import Field, create_model, field_validator

from srnets_lib.settings.config import PRETRAINING_LOSSES, Task, TransferTask
from srnets_lib.settings.reading import Block

# the book's section notebooks (book/<name>.ipynb), in the papers' order: Part I (SRNets), Part II (TAMT)
SECTIONS = ("sec4_2", "sec4_3", "sec4_4", "sec4_5", "sec5_1", "sec5_2", "appc1", "appc5",
            "tamt_transfer", "tamt_pretraining", "tamt_iterations", "tamt_data")
# book notebooks that show no runs of their own (they read the other pages' results): a sweep skips them
RUNLESS_PAGES = ("scorecard",)


class PageSettings(Block):
    """What any page may choose for itself: its tasks and seeds where not its part's (None)."""

    tasks: Optional[list[Task]] = None
    seeds: Optional[list[Annotated[int, Field(ge=0)]]] = None


class WhenToStartSettings(PageSettings):
    """Section 5.1: mask training from the 4.2 std fine-tuning run's weights after these absolute
    steps (the authors' mask_on_checkpoints scripts), at this sparsity: one for every task, or per
    task (figure 7 and appendix figure 3: 70%, 90% for FEVER; the scripts use 0.7 for every task)."""

    steps: list[int] = [5000, 10000, 15000, 20000]
    sparsity: Union[Annotated[float, Field(gt=0, lt=1)], dict[Task, Annotated[float, Field(gt=0, lt=1)]]] = 0.7

    @field_validator("steps")
    @classmethod
    def _positive(cls, steps):
        if any(s <= 0 for s in steps) or steps != sorted(set(steps)):
            raise ValueError(f"steps must be increasing positive step counts, got {steps}")
        return steps

    def sparsity_of(self, task: str) -> float:
        if not isinstance(self.sparsity, dict):
            return self.sparsity
        if task not in self.sparsity:
            raise ValueError(f"sections.sec5_1.sparsity gives no sparsity for task {task}: add it, or give one number")
        return self.sparsity[task]


class GradualSparsitySettings(PageSettings):
    """Section 5.2: figure 8 compares fixed and gradual 0.7 -> 0.9 at these mask-training epochs per
    task (table 5's caption, then the gradual scripts'); table 5 compares init and schedule variants
    at its caption's epochs, from these initial sparsities (gradual s_init -> 0.9)."""

    epochs: dict[Task, list[float]] = {"nli": [3, 5], "paraphrase": [5, 7], "factcheck": [5, 7]}
    table5_epochs: dict[Task, float] = {"nli": 3, "paraphrase": 5, "factcheck": 5}
    table5_inits: list[float] = [0.2, 0.5, 0.7]


class OtherBackbonesSettings(PageSettings):
    """Appendix C.5 (table 6, NLI only): each entry names a backbone and the run fields that select it."""

    tasks: Optional[list[Task]] = ["nli"]
    backbones: list[dict[str, Any]] = [{"name": "RoBERTa-base", "backbone": "roberta-base"},
                                       {"name": "BERT-large", "backbone": "bert-large-uncased"}]


# the pages with settings of their own; every other page takes PageSettings
PAGE_SETTINGS: dict[str, type[PageSettings]] = {"sec5_1": WhenToStartSettings, "sec5_2": GradualSparsitySettings,
                                                 "appc5": OtherBackbonesSettings}


class Pages(Block):
    """What Part I's pages share (the params file's `sections` block) and, under each page's name,
    its own settings (PAGE_SETTINGS)."""

    tasks: Optional[list[Task]] = None  # Part I's pages' tasks (4.2 and C.5 choose their own); None: the preset's
    # compute each Part I page at the sparsities its claims judge (the CPU budget); the preset's others
    # are opt-in: `make book-full` computes them, and the pages draw them once they are in the store
    judged_only: bool = False
    imp_target: float = Field(0.9, gt=0, lt=1)  # one IMP run per setting prunes to it, yielding every level

    def page(self, name: str) -> PageSettings:
        return getattr(self, name)


Sections = create_model("Sections", __base__=Pages, __doc__=Pages.__doc__,
                        **{name: (PAGE_SETTINGS.get(name, PageSettings), PAGE_SETTINGS.get(name, PageSettings)())
                           for name in SECTIONS})


class OtherBackbone(Block):
    """A backbone whose task-agnostic subnetworks are searched and transferred beside the params'
    own (TAMT figure 4: RoBERTa-base), on the same settings."""

    name: str  # the page's label: "RoBERTa-base"
    backbone: str  # a hub name or a local path (models.resolve)
    sparsities: Optional[list[float]] = None  # TAMT's and IMP's; None: tamt.sparsities
    set: dict[str, Any] = {}  # other run settings it needs (e.g. pooling: cls where the defaults pool BERT's way)
    series: Optional[list[str]] = None  # the subnetworks searched (figure 3's legend names); None: all
    opt_in: bool = False  # computed by make book-full only (the toy's stand-in for figure 11's second backbone)



SHOWN_IN_FIGURE_9 = Literal["TAMT-MLM", "TAMT-KD", "IMP", "OMP", "full model"]  # its legend


class ReducedCell(Block):
    """Figure 9's settings where a few-shot script departs from the block's: for these tasks, sizes
    and series (None: every one), the epochs and the fine-tuning seeds ([]: no script, no run)."""

    tasks: list[TransferTask]
    sizes: list[int]
    series: Optional[list[SHOWN_IN_FIGURE_9]] = None
    epochs: Optional[float] = Field(None, gt=0)
    finetune_seeds: Optional[list[int]] = None


class ReducedDataSettings(Block):
    """TAMT figure 9 (section 4.2.6): the 70% subnetworks and the full model fine-tuned on `sizes`
    training examples of each task (SQuAD: windows), as imp_and_fine_tune/shell_scripts/run_glue/few_shot/
    of llyx97/TAMT run them: a random subset per fine-tuning seed (glue_trans_few.py:880,
    squad_trans_few.py:1005; `first`: the first examples of the file), 8 epochs at 1k (`epochs`, by size;
    else the task's own), each mask with 5 fine-tuning seeds, SQuAD evaluated every 500 steps but at
    least once an epoch (squad_trans_few.py:1007-1008: `eval_every_epoch`); `cells`: the scripts' exceptions."""

    sizes: dict[TransferTask, list[int]] = {"cola": [1000, 2000, 4000, 5000], "sst2": [1000, 5000, 10000, 30000],
                                            "mnli": [1000, 5000, 10000, 50000, 100000],
                                            "squad": [1000, 5000, 10000, 20000, 40000]}
    finetune_seeds: list[int] = [1, 2, 3, 4, 5]
    subsets: Literal["random", "first"] = "random"
    epochs: dict[int, float] = {1000: 8}
    eval_interval: dict[TransferTask, int] = {"squad": 500}  # few_shot/*/squad/*.sh: --logging_steps 500
    eval_every_epoch: list[TransferTask] = ["squad"]
    cells: list[ReducedCell] = [  # few_shot/{imp_pretrain,train_kd,train_mlm,oneshot,full_bert}/cola/{2k,4k}
        ReducedCell(tasks=["cola"], sizes=[2000], series=["IMP", "TAMT-KD"], epochs=5, finetune_seeds=[1, 2, 3]),
        ReducedCell(tasks=["cola"], sizes=[2000], series=["TAMT-MLM"], epochs=6, finetune_seeds=[1, 2, 3]),
        ReducedCell(tasks=["cola"], sizes=[2000], series=["OMP", "full model"], epochs=8),
        ReducedCell(tasks=["cola"], sizes=[4000], series=["TAMT-MLM", "TAMT-KD"], finetune_seeds=[1, 2, 3]),
        ReducedCell(tasks=["cola"], sizes=[4000], series=["IMP", "OMP", "full model"], finetune_seeds=[])]

    def cell(self, task: str, size: int, series: str) -> tuple[float | None, list[int]]:
        """(epochs, None: the task's own; fine-tuning seeds) of one series at one size of a task."""
        epochs, seeds = self.epochs.get(size), list(self.finetune_seeds)
        for cell in self.cells:
            if task in cell.tasks and size in cell.sizes and (cell.series is None or series in cell.series):
                epochs = cell.epochs if cell.epochs is not None else epochs
                seeds = list(cell.finetune_seeds) if cell.finetune_seeds is not None else seeds
        return epochs, seeds

class Tamt(Block):
    """Part II, task-agnostic mask training (TAMT, Liu et al. NAACL 2022): which masks are
    searched on the corpus and which tasks they transfer to (defaults: the authors' BERT runs)."""

    tasks: list[TransferTask] = ["cola", "sst2", "rte", "mrpc", "stsb", "mnli", "squad"]
    objectives: list[Literal[PRETRAINING_LOSSES]] = list(PRETRAINING_LOSSES)
    sparsities: list[float] = [0.5, 0.6, 0.7, 0.8, 0.9]  # TAMT and IMP (figure 3)
    oneshot_sparsities: list[float] = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]  # OMP and random
    mask_seeds: list[int] = [1, 2, 3]  # TAMT, IMP, random: 3 masks; OMP: one (the first seed)
    finetune_seeds: list[int] = [1, 2, 3]  # each mask fine-tuned 3 times (section 4.1)
    imp_target: float = Field(0.9, gt=0, lt=1)  # one IMP run yields every level up to it
    # IMP on MLM rewinds the backbone to theta_pt after every pruning (the paper's section 4.1), or does
    # not: imp_and_fine_tune/LT_pretrain.py:397 keeps `orig` as tensors sharing storage with the live
    # weights, so its "rewind" (lines 528-530) copies them onto themselves (false: the authors' as run)
    imp_rewind: bool = False
    head: bool = False  # train an MLM head first (a backbone without one: the packaged MiniLM)
    # TAMT's iterations per sparsity (run_glue/train_mlm/main_result/*: table 2); none given: the
    # iterations IMP takes to reach that sparsity, (s / delta_s - 1) S
    steps: dict[float, int] = {}
    # train_kd.py saves its mask as step_<N-1> after N-1 updates ((global_step + 1) % save_step == 0) and
    # the fine-tuning scripts read step_<N-1> (run_glue/train_kd/*): a TAMT-KD mask taken at N iterations
    # has N - 1 updates (false: N, as TAMT-MLM's checkpoint-<N>)
    kd_one_update_fewer: bool = True
    other_backbones: list[OtherBackbone] = []  # figure 4 (paper scale only: the toy packages one backbone)
    # the opt-in pages (make book-full). Figures 6 and 7 at iteration_sparsity: TAMT's masks after these
    # steps (run_glue/train_mlm/steps/*), IMP pruning every imp_intervals steps (imp/bert/prun_step*/),
    # TAMT from a random mask (shell_scripts/train_mlm/bert/rand_init_mask/0.7.sh); figure 9: reduced_data
    iteration_sparsity: float = Field(0.7, gt=0, lt=1)
    # figures 14-16 (appendix A.3): the same at these sparsities too (iteration_sparsity's points are figures 6, 7)
    iteration_sparsities: list[float] = [0.6, 0.7, 0.8]
    iteration_steps: list[int] = [1000, 2000, 3000, 5000, 10000, 20000, 25000]
    imp_intervals: list[int] = [200, 300, 500, 900, 2792]
    # figure 8's IMP masks (the distance to OMP, mask_training/mask_dist.py: prun_steps 200 300 500 900 1396
    # 2792): those of imp_intervals and of these intervals too, whose masks are probed, not fine-tuned
    distance_imp_intervals: list[int] = []
    # IMP's epochs at an interval (else the run's): imp/bert/prun_step{300,500,900,1396}/ train 1 epoch
    imp_interval_epochs: dict[int, float] = {300: 1, 500: 1, 900: 1, 1396: 1}
    # figure 5 (section 4.2.2, make book-full): TAMT's masks after each of iteration_steps at these sparsities,
    # probed and fine-tuned on figure_tasks (shell_scripts/eval_{mlm,kd}/tamt_*.sh)
    trajectory_sparsities: list[float] = [0.5, 0.6, 0.7, 0.8]
    figure_tasks: Optional[list[TransferTask]] = ["cola", "sst2", "mnli", "stsb", "squad"]  # None: tasks
    reduced_data: ReducedDataSettings = ReducedDataSettings()  # figure 9


