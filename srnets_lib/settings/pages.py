"""The book pages' settings in a params file (its `sections` and `tamt` blocks): what a page
shows beyond its runs' hyper-parameters (its tasks, seeds and sparsities where not the preset's,
section 5.1's steps, Part II's objectives, masks and transfer tasks). Defaults: the authors'."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Optional, Union

from pydantic import Field, field_validator

from srnets_lib.settings.config import PRETRAINING_LOSSES, Task, TransferTask
from srnets_lib.settings.reading import Block

# the book's section notebooks (book/<name>.ipynb), in the papers' order: Part I (SRNets), Part II (TAMT)
SECTIONS = ("sec4_2", "sec4_3", "sec4_4", "sec4_5", "sec5_1", "sec5_2", "appc1", "appc5",
            "tamt_transfer", "tamt_pretraining", "tamt_iterations", "tamt_data")
Section = Literal[SECTIONS]
# book notebooks that show no runs of their own (they read the other pages' results): a sweep skips them
RUNLESS_PAGES = ("scorecard",)


class Sections(Block):
    """Settings a single notebook needs beyond the run hyper-parameters (defaults: the authors')."""

    sec4_2_tasks: Optional[list[Task]] = None  # default: preset.tasks
    other_tasks: Optional[list[Task]] = None  # tasks of the other sections; default preset.tasks
    seeds: dict[Section, Optional[list[int]]] = {}  # a section's seeds where not the preset's (None: the preset's)
    # a section's sparsities in the default build where fewer than the preset's (the CPU budget): those
    # its claims judge. The preset's others are opt-in: `make book-full` computes them, and the page
    # draws them once they are in the store
    sparsities: dict[Section, list[float]] = {}
    imp_target: float = Field(0.9, gt=0, lt=1)  # one IMP run per setting prunes to it, yielding every level
    # 5.1: mask training from the 4.2 std fine-tuning run's weights after these absolute steps
    # (the authors' mask_on_checkpoints scripts), at this sparsity: one for every task, or per task
    # (figure 7 and appendix figure 3: 70%, 90% for FEVER; the scripts use 0.7 for every task)
    sec5_1_steps: list[int] = [5000, 10000, 15000, 20000]
    sec5_1_sparsity: Union[Annotated[float, Field(gt=0, lt=1)], dict[Task, Annotated[float, Field(gt=0, lt=1)]]] = 0.7

    def sec5_1_sparsity_of(self, task: str) -> float:
        s = self.sec5_1_sparsity
        if not isinstance(s, dict):
            return s
        if task not in s:
            raise ValueError(f"sections.sec5_1_sparsity gives no sparsity for task {task}: add it, or give one number")
        return s[task]
    # 5.2: figure 8 compares fixed and gradual 0.7 -> 0.9 at these mask-training epochs per task (table 5's
    # caption, then the gradual scripts'); table 5 compares init and schedule variants at its caption's
    sec5_2_epochs: dict[Task, list[float]] = {"nli": [3, 5], "paraphrase": [5, 7], "factcheck": [5, 7]}
    table5_epochs: dict[Task, float] = {"nli": 3, "paraphrase": 5, "factcheck": 5}
    table5_inits: list[float] = [0.2, 0.5, 0.7]  # gradual s_init -> 0.9
    # table 6: each entry names a backbone and the run fields that select it
    appc5_backbones: list[dict[str, Any]] = [{"name": "RoBERTa-base", "backbone": "roberta-base"},
                                             {"name": "BERT-large", "backbone": "bert-large-uncased"}]
    appc5_tasks: list[Task] = ["nli"]  # table 6 is NLI only

    @field_validator("sec5_1_steps")
    @classmethod
    def _positive(cls, steps):
        if any(s <= 0 for s in steps) or steps != sorted(set(steps)):
            raise ValueError(f"sec5_1_steps must be increasing positive step counts, got {steps}")
        return steps


class OtherBackbone(Block):
    """A backbone whose task-agnostic subnetworks are searched and transferred beside the params'
    own (TAMT figure 4: RoBERTa-base), on the same settings."""

    name: str  # the page's label: "RoBERTa-base"
    backbone: str  # a hub name or a local path (models.resolve)
    sparsities: Optional[list[float]] = None  # TAMT's and IMP's; None: tamt.sparsities
    set: dict[str, Any] = {}  # other run settings it needs (e.g. pooling: cls where the defaults pool BERT's way)


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
    head: bool = False  # train an MLM head first (a backbone without one: the packaged MiniLM)
    # TAMT's iterations per sparsity (run_glue/train_mlm/main_result/*: table 2); none given: the
    # iterations IMP takes to reach that sparsity, (s / delta_s - 1) S
    steps: dict[float, int] = {}
    other_backbones: list[OtherBackbone] = []  # figure 4 (paper scale only: the toy packages one backbone)
    # the opt-in pages (make book-full). Figures 6 and 7 at iteration_sparsity: TAMT's masks after these
    # steps (run_glue/train_mlm/steps/*), IMP pruning every imp_intervals steps (imp/bert/prun_step*/),
    # TAMT from a random mask (shell_scripts/train_mlm/bert/rand_init_mask/0.7.sh); figure 9: each task
    # fine-tuned on the first data_sizes examples of its training set (run_glue/few_shot/*)
    iteration_sparsity: float = Field(0.7, gt=0, lt=1)
    iteration_steps: list[int] = [1000, 2000, 3000, 5000, 10000, 20000, 25000]
    imp_intervals: list[int] = [200, 300, 500, 900, 2792]
    figure_tasks: Optional[list[TransferTask]] = ["cola", "sst2", "mnli", "stsb", "squad"]  # None: tasks
    data_sizes: dict[TransferTask, list[int]] = {"cola": [1000, 2000, 5000], "sst2": [1000, 5000, 10000, 30000],
                                                 "mnli": [1000, 5000, 10000, 50000, 100000],
                                                 "squad": [1000, 5000, 10000, 20000, 40000]}


