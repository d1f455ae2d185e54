"""Iterative magnitude pruning (section 3.2.1, algorithm 1) as the authors' IMP trainer runs it
(trainer_imp.py of llyx97/sparse-and-robust-PLM): the weights train; at step 0 and then every
S = int(imp_delta_t * t_max) steps each prunable matrix loses another imp_delta_s of its
original count by magnitude (local pruning; encoder matrices and pooler, not the classifier).
At every pruning the optimiser and its linear lr schedule over t_max restart (no warm-up), so
the lr saws between lr and 0.9 lr. One run yields every level: the model at the end of each
interval, evaluated there without checkpoint selection, is that level's subnetwork. Training
stops at the end of the last level's interval.

With `imp_rewind` (IMP on the MLM objective as TAMT section 4.1 describes it) the backbone, not the
heads, is rewound to its initial weights after every pruning, and the optimiser restarts. The
authors' LT_pretrain.py (llyx97/TAMT) never rewinds as run: `orig` (line 397) holds tensors sharing
storage with the live weights (torch's pruning re-registers the same Parameter as `weight_orig`,
which AdamW updates in place), so the "rewind" of lines 528-530 copies the current weights onto
themselves; its masks come from continued MLM training, the optimiser restarted at each pruning
(lines 541-553): imp_rewind false, tamt.imp_rewind in params/paper.yaml.

Which magnitudes are ranked: the weights after the last update. Torch's pruning ranks
`module.weight`, which its forward pre-hook refreshes at each forward pass; in every script the
evaluation right before the pruning (trainer_imp.py:727-732; LT_pretrain.py:473-482, 521 with
--logging_steps = --save_steps) is such a pass, so theirs ranks the current weights too.

Each level's mask is kept (mask_s<level>.npz). `imp-rw` (lottery tickets, section 4.3) is the same
run whose dependents pick one level's mask: section 4.3 fine-tunes m . theta_pt in isolation. (The
authors' rewinding during pruning aliases the live weights and has no effect; their retraining
reloads theta_pt, as `mask_from` does here.)

What the weight updates minimise is the switch `imp_objective`: `cross_entropy`, as the stored
trainer, which calls the model without the debiasing loss (so its "poe" IMP runs train with
cross-entropy; params/paper.yaml sets it), or `loss` (the default, a deviation from the authors
on the introduction's table), the run's loss, as the paper's section 4.2 describes and its
figures (imp std and imp poe differ) imply.
"""

from __future__ import annotations

from typing import Literal, Optional

from pydantic import Field

from srnets_lib.hparams import Group
from srnets_lib.model import backbones, pruning
from srnets_lib.model.pruning import magnitude
from srnets_lib.methods import schedule
from srnets_lib.methods.base import Method
from srnets_lib.methods.finetune import Finetune
from srnets_lib.methods.oneshot import RoundingSettings


def level(k: int, delta_s: float) -> float:
    """The k-th level's sparsity, k * delta_s."""
    return round(k * delta_s, 6)


class IMPSettings(Group):
    """What IMP prunes by, how often, and whether it rewinds (algorithm 1; TAMT section 4.1)."""

    # rewind the backbone (not the task or MLM head) to its initial weights after every pruning: IMP on
    # the MLM objective as TAMT section 4.1 describes it (imp_and_fine_tune/LT_pretrain.py of llyx97/TAMT
    # never rewinds as run: its rewind aliases the live weights, lines 397, 528-530)
    imp_rewind: bool = False
    imp_interval: Optional[int] = Field(None, gt=0)  # prune every this many steps instead (TAMT figure 6's prun_step)
    # what IMP's weight updates minimise: the run's `loss` (section 4.2: IMP with the PoE loss), or
    # cross-entropy whatever the loss (the authors' stored trainer_imp.py calls the model without its
    # loss function, lines 789-797; the run still reads the bias predictions' training rows)
    imp_objective: Literal["loss", "cross_entropy"] = "loss"


class IMP(Method):
    prunes = True
    levels = True  # every sparsity level of the run is kept (its mask and predictions)
    picks_level = False  # its dependents read one level's mask (imp-rw: section 4.3)
    groups = (IMPSettings, RoundingSettings)

    @classmethod
    def validate(cls, config) -> None:
        super().validate(config)
        if config.max_steps is not None:
            raise ValueError("IMP stops after its last level: max_steps does not apply")
        count = config.sparsity / config.imp_delta_s
        if abs(count - round(count)) > 1e-6:
            raise ValueError(f"IMP prunes in steps of imp_delta_s={config.imp_delta_s}: "
                             f"sparsity {config.sparsity} is not a multiple (algorithm 1)")

    @classmethod
    def schedule(cls, config, train_rows):
        """Prune to level k+1 at the start of step k S (k = 0..N-1); level k is the model after
        k S steps; N = target / delta_s levels; the run stops at N S."""
        per_epoch, t_max = schedule.epochs(config.epochs, train_rows, config.batch_size, config.drop_last)
        interval = config.imp_interval or max(1, int(config.imp_delta_t * t_max + 1e-9))
        count = round(config.sparsity / config.imp_delta_s)
        steps = count * interval
        levels = {k * interval: level(k, config.imp_delta_s) for k in range(1, count + 1)}
        evaluations = schedule.every(config.eval_interval, steps, levels)
        return schedule.Schedule(
            per_epoch, t_max, steps, evaluations, frozenset({steps}),  # no selection: the last level
            restarts=tuple(k * interval for k in range(count)),
            sparsity_steps={k * interval: level(k + 1, config.imp_delta_s) for k in range(count)},
            levels=levels, pick_level=cls.picks_level)

    def masked_layers(self):
        return backbones.masked_layers(backbones.is_imp_prunable, self.config.mask_embeddings)

    def trainable(self, model):
        return Finetune.trainable(self, model)

    def prepare(self, model):
        """With imp_rewind, remember the backbone's initial weights theta_0 (not its heads)."""
        self.initial = ({n: p.detach().clone() for n, p in backbones.backbone_parameters(model).items()}
                        if self.config.imp_rewind else {})

    def before_step(self, model, step):
        sparsity = self.schedule.sparsity_steps.get(step)
        if sparsity is None:
            return
        prunings = sorted(self.schedule.sparsity_steps).index(step) + 1
        for module in pruning.masked_modules(model).values():  # by the trained weights' magnitudes
            pruned = magnitude.iterative_count(module.weight.numel(), prunings, self.config.imp_delta_s,
                                               self.config.prune_rounding)
            pruning.magnitude_prune(module, sparsity, pruned)
        if self.initial:  # ... then the backbone back to theta_0 (LT_pretrain.py of llyx97/TAMT)
            backbones.copy_into(model, self.initial)


class IMPRewound(IMP):
    """imp-rw: the same run; its dependents pick one level's mask and fine-tune m . theta_pt."""
    picks_level = True
