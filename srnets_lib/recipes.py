"""The paper's paradigms as runs, wired as the authors' scripts (github.com/llyx97/
sparse-and-robust-PLM, scripts/) ran them: the building blocks every section composes
(srnets_lib/sections/).

Notation (section 3.4): A_L(f(theta)) trains with loss L; P^p_L(f(theta)) prunes with method
p and loss L; M(.) takes the mask.
"""

from __future__ import annotations

from .config import RunConfig
from .params import Params


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

    @staticmethod
    def _ood(ood: bool) -> dict:
        return {"data": {"ood_train": True}} if ood else {}
