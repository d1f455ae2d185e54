"""Full fine-tuning (sections 4.2-4.5), or fine-tuning a fixed subnetwork in isolation
(section 4.3: A_L(f(m . theta_pt)), config.mask_from; the mask is installed by the run's set-up)."""

from __future__ import annotations

from srnets_lib.hparams import Group
from srnets_lib.model import backbones
from srnets_lib.methods import schedule
from srnets_lib.methods.base import Method


class FinalSelection(Group):
    """Whether the evaluation after the last step may be selected: fine-tuning's and mask training's (appendix B.3.3)."""

    # the evaluation after the last step may be selected (ours); false: only those every eval_interval steps,
    # the last where none is (fine-tuning and mask training): Part I's trainer.py and mask_trainer.py keep the
    # best at `global_step % logging_steps == 0` and run_glue.py / mask_run_glue.py reload it; TAMT's
    # glue_trans*.py / squad_trans*.py record the last, never compare it
    select_final: bool = True


class Finetune(Method):
    groups = (FinalSelection,)

    @classmethod
    def validate(cls, config) -> None:
        if config.sparsity:
            raise ValueError("method=finetune trains the dense model: sparsity must be 0 "
                             "(to fine-tune a subnetwork use mask_from)")

    @classmethod
    def schedule(cls, config, train_rows):
        per_epoch, t_max = schedule.epochs(config.epochs, train_rows, config.batch_size, config.drop_last)
        steps = schedule.capped(config, t_max, per_epoch)
        evaluations = schedule.every(config.eval_interval, steps)
        return schedule.Schedule(per_epoch, t_max, steps, evaluations, schedule.selectable(config, evaluations, t_max),
                                 restarts=(0,) if steps else ())

    def masked_layers(self):
        # the subnetwork's masks go on the encoder and pooler; the classifier stays dense
        # (the authors' retraining scripts); a task-agnostic mask covers the encoder only, never
        # a new head (RoBERTa's classifier.dense: glue_trans.py of llyx97/TAMT masks model.roberta)
        if self.config.mask_from is None:
            return None
        masked = backbones.is_encoder_prunable if self.config.task_agnostic_mask else backbones.is_isolation_masked
        return backbones.masked_layers(masked, self.config.mask_embeddings)

    def trainable(self, model):
        frozen = set() if self.config.train_embeddings else {id(p) for p in backbones.embeddings(model).parameters()}
        return [p for name, p in model.named_parameters()
                if id(p) not in frozen and not name.endswith("mask_scores")]
