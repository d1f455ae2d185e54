"""The paper's paradigms as runs, wired as the authors' scripts (github.com/llyx97/
sparse-and-robust-PLM, scripts/) ran them: the building blocks every section composes
(srnets_lib/book/sections/).

Notation (section 3.4): A_L(f(theta)) trains with loss L; P^p_L(f(theta)) prunes with method
p and loss L; M(.) takes the mask.
"""

from __future__ import annotations

import math

from srnets_lib.settings.config import RunConfig
from srnets_lib.settings.params import Params
from srnets_lib import methods


class Recipes:
    """Run configs of the paper's paradigms under one params file (`p`)."""

    def __init__(self, params: Params):
        self.p = params

    # --- building blocks -------------------------------------------------------------------
    def full(self, task, loss, seed) -> RunConfig:
        """A_L(f(theta_pt)): full fine-tuning on the ID data."""
        teacher = self.full(task, "std", seed) if loss == "confreg" else None
        return self.p.run(task, "finetune", loss, seed=seed, teacher=teacher)

    def prune_ft(self, task, method, loss, sparsity, seed, full_loss="std", ood=False, **fields) -> RunConfig:
        """P^p_L(f(theta_ft)): prune a fine-tuned model; mask training selects after 0.7 t_max.
        The fine-tuned model is the ID-only one also with OOD data (section 4.5: the authors'
        ood mask scripts load the ordinary std model)."""
        base = self.full(task, full_loss, seed)
        teacher = self.full(task, "std", seed) if loss == "confreg" else None
        return self.p.run(task, method, loss, seed=seed, sparsity=sparsity, init_from=base,
                          teacher=teacher, **self._ood(ood), **fields)

    def prune_pt(self, task, method, loss, sparsity, seed, ood=False, **fields) -> RunConfig:
        """P^p_L(f(theta_pt)): prune the pre-trained model (selection over the whole run)."""
        return self.p.run(task, method, loss, seed=seed, sparsity=sparsity, **self._ood(ood), **fields)

    def imp(self, task, loss, seed, start="std") -> RunConfig:
        """One IMP run to sections.imp_target, yielding every level: from the `start` ("std" or
        "poe") fine-tuned model, or from theta_pt (start="pt": imp-rw, the lottery tickets of 4.3)."""
        target = self.p.sections.imp_target
        if start == "pt":
            return self.prune_pt(task, "imp-rw", loss, target, seed)
        return self.prune_ft(task, "imp", loss, target, seed, full_loss=start)

    def isolate(self, task, subnetwork: RunConfig, loss, seed, level=None) -> RunConfig:
        """A_L(f(m . theta_pt)): fine-tune a subnetwork in isolation on the ID data (4.3, 4.5)."""
        return self.p.run(task, "finetune", loss, seed=seed, mask_from=subnetwork, mask_level=level)

    def gradual(self, task, start, final, seed, epochs=None) -> RunConfig:
        """Mask training with the poe loss, soft init, cubic sparsity start -> final (5.2, C.5)."""
        extra = {"epochs": epochs} if epochs is not None else {}
        return self.prune_ft(task, "mask", "poe", final, seed, sparsity_init=start, schedule="cubic",
                             mask_init="soft", **extra)

    # --- task-agnostic mask training (TAMT, Liu et al. NAACL 2022) ---------------------------
    def head(self) -> RunConfig | None:
        """The MLM head trained on the frozen backbone first, when the backbone has none
        (params tamt.head: the packaged MiniLM); None: the checkpoint's own (BERT's)."""
        return self.p.run("corpus", "head", "mlm") if self.p.tamt.head else None

    def corpus(self, method, loss, sparsity, seed, **fields) -> RunConfig:
        """A task-agnostic run on the unlabelled corpus, from theta_pt (and the MLM head)."""
        return self.p.run("corpus", method, loss, seed=seed, sparsity=sparsity, init_from=self.head(), **fields)

    def tamt_imp(self, seed, interval=None) -> RunConfig:
        """IMP on the MLM objective, its optimiser restarted at every pruning and the backbone
        rewound to theta_pt after it where tamt.imp_rewind (the paper's text; the authors'
        LT_pretrain.py never rewinds as run), keeping every level's mask (one run yields
        tamt.imp_target's levels; TAMT section 4.1); with `interval`,
        pruning every that many steps instead, for tamt.imp_interval_epochs' epochs at that interval,
        else the run's (figures 6, 14-16: imp/bert/prun_step*/ run LT_pretrain.py, which keeps pruning
        whatever sparsity a figure reads)."""
        tamt = self.p.tamt
        rewind = {"imp_rewind": True} if tamt.imp_rewind else {}
        default = self.corpus("imp-rw", "mlm", tamt.imp_target, seed, **rewind)
        epochs = {"epochs": tamt.imp_interval_epochs[interval]} if interval in tamt.imp_interval_epochs else {}
        if interval is None or (interval == methods.planned_schedule(default).restarts[1] and not epochs):
            return default  # the same run
        return self.corpus("imp-rw", "mlm", tamt.imp_target, seed, imp_interval=interval, **rewind, **epochs)

    def tamt(self, objective, sparsity, seed, init="hard", steps=None) -> RunConfig:
        """TAMT: mask training with a pre-training objective from the OMP mask (init=random: figure
        7), taken after `steps` iterations, by default as many as IMP needs to reach `sparsity`
        (TAMT table 2); a TAMT-KD mask after one update fewer (tamt.kd_one_update_fewer: train_kd.py
        saves step_<N-1> after N - 1 updates, the mask its fine-tuning scripts read)."""
        steps = self.tamt_steps(sparsity, seed) if steps is None else steps
        fewer = int(objective == "kd" and self.p.tamt.kd_one_update_fewer and steps > 1)
        return self.corpus("mask", objective, sparsity, seed, max_steps=steps - fewer, mask_init=init)

    def tamt_steps(self, sparsity, seed) -> int:
        """params tamt.steps[sparsity], else the step at which IMP prunes to `sparsity`."""
        if sparsity in self.p.tamt.steps:
            return self.p.tamt.steps[sparsity]
        prunings = methods.planned_schedule(self.tamt_imp(seed)).sparsity_steps
        return next(step for step, level in prunings.items() if abs(level - sparsity) < 1e-9)

    def oneshot(self, method, sparsity, seed) -> RunConfig:
        """OMP or random pruning of theta_pt (evaluated on the corpus: its pre-training losses)."""
        return self.corpus(method, "mlm", sparsity, seed)

    def transfer(self, task, subnetwork: RunConfig | None, seed, level=None, **fields) -> RunConfig:
        """A task-agnostic subnetwork fine-tuned on a downstream task (a new head, the mask fixed);
        None: the full model; `fields`: other settings of the run (figure 9's data and epochs)."""
        return self.p.run(task, "finetune", "std", seed=seed, mask_from=subnetwork, mask_level=level, **fields)

    def reduced(self, task, subnetwork: RunConfig | None, seed, level, size: int, epochs=None) -> RunConfig:
        """Figure 9: `transfer` on `size` training examples (tamt.reduced_data: a random subset drawn
        with the fine-tuning seed, or the first ones), for `epochs` (None: the task's), SQuAD
        evaluated as its few-shot scripts do (every eval_interval steps, at least once an epoch)."""
        chosen = self.p.tamt.reduced_data
        data = {"subset_size": size, "subset_seed": seed} if chosen.subsets == "random" else {"train_size": size}
        fields = {"data": data, **({"epochs": epochs} if epochs is not None else {})}
        base = self.transfer(task, subnetwork, seed, level, **fields)
        interval = chosen.eval_interval.get(task, base.eval_interval)
        if task in chosen.eval_every_epoch:
            interval = min(interval, math.ceil(size / base.batch_size))
        return base if interval == base.eval_interval else self.transfer(task, subnetwork, seed, level,
                                                                         eval_interval=interval, **fields)

    def probe(self, subnetwork: RunConfig, level=None) -> RunConfig:
        """A subnetwork's held-out MLM and KD losses as it is, with the pre-trained MLM head (the
        authors' eval_mlm.py / eval_kd.py: figures 1 and 5)."""
        return self.p.run("corpus", "finetune", "mlm", mask_from=subnetwork, mask_level=level,
                          init_from=self.head(), max_steps=0)

    @staticmethod
    def _ood(ood: bool) -> dict:
        return {"data": {"ood_train": True}} if ood else {}
