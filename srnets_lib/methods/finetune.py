"""Full fine-tuning (sections 4.2-4.5), or fine-tuning a fixed subnetwork in isolation
(section 4.3: A_L(f(m . theta_pt)), `mask_from`)."""

from __future__ import annotations

from .. import models
from .base import Method


class Finetune(Method):
    def masked_layers(self):
        # the subnetwork's masks go on the encoder and pooler; the classifier stays dense
        # (the authors' retraining scripts)
        return models.is_isolation_masked if self.config.mask_from is not None else None

    def trainable(self):
        if not self.config.train_embeddings:
            models.freeze_embeddings(self.trainer.model)
        return [p for p in self.trainer.model.parameters() if p.requires_grad]
