"""Iterative magnitude pruning (section 3.2.1, algorithm 1) as the authors' IMP trainer runs it
(trainer_imp.py of llyx97/sparse-and-robust-PLM): the weights train; at step 0 and then every
S = int(imp_delta_t * t_max) steps each prunable matrix loses another imp_delta_s of its
original count by magnitude (local pruning; encoder matrices and pooler, not the classifier).
At every pruning the optimiser and its linear lr schedule over t_max restart (no warm-up), so
the lr saws between lr and 0.9 lr. One run yields every level: the model at the end of each
interval, evaluated there without checkpoint selection, is that level's subnetwork. Training
stops at the end of the last level's interval.

`imp-rw` (lottery tickets, section 4.3) is the same run, keeping each level's mask: section 4.3
fine-tunes m . theta_pt in isolation. (The authors' rewinding during pruning aliases the live
weights and has no effect; their retraining reloads theta_pt, as `mask_from` does here.)

Deviation from the stored trainer, which calls the model without the debiasing loss (so its
"poe" IMP runs train with cross-entropy): the loss here is the run's loss, as the paper's
section 4.2 describes and its figures (imp std and imp poe differ) imply.
"""

from __future__ import annotations

from .. import models, paths, pruning
from .base import Method, StepAction
from .finetune import Finetune


class IMP(Method):
    def __init__(self, trainer):
        super().__init__(trainer)
        cfg = self.config
        self.schedule = pruning.IMPSchedule(cfg.sparsity, cfg.imp_delta_s, cfg.imp_delta_t, trainer.t_max)
        self.results: dict[str, dict] = {}

    def masked_layers(self):
        return models.is_imp_prunable

    def trainable(self):
        return Finetune.trainable(self)

    def steps(self) -> int:
        return self.schedule.total_steps

    def segment(self, step: int) -> tuple[int, int]:
        first = step - step % self.schedule.interval
        return first, self.trainer.t_max  # restarted at each pruning, still scheduled over t_max

    def before_step(self, step: int) -> StepAction:
        sparsity = self.schedule.prunes_at(step)
        if sparsity is None:
            return StepAction.TRAIN
        for module in self.trainer.masked.values():
            pruning.magnitude_prune(module, sparsity)
        return StepAction.RESTART

    def evaluate_now(self, done: int) -> bool:
        return super().evaluate_now(done) or self.schedule.level_ending_at(done) is not None

    def on_evaluation(self, row: dict) -> None:
        level = self.schedule.level_ending_at(row["step"])
        if level is None:
            return
        self.results[f"{level:g}"] = {"step": row["step"], "sparsity": row["sparsity"],
                                      "id": row["dev"], "ood": {k: row[k] for k in self.trainer.data.ood}}
        if self.config.method == "imp-rw":
            pruning.save_masks(self.trainer.masked, self.trainer.run.file(paths.level_mask(level)))

    def reads_ood(self, step: int) -> bool:
        return self.schedule.level_ending_at(step) is not None

    def selectable(self, step: int) -> bool:
        return step == self.steps()  # no selection: the run's own result is its last level

    def levels(self) -> dict:
        return dict(self.results)

    def state(self) -> dict:
        return {"levels": self.results}

    def load_state(self, state: dict) -> None:
        self.results = dict(state["levels"])
