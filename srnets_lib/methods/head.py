"""Training only a model's head on its frozen backbone: the toy's MLM head (the packaged MiniLM, a
sentence embedder, ships none; TAMT's MLM objective and its pre-training loss read one). Paper
scale needs none: BERT's pre-trained MLM head is part of its checkpoint."""

from __future__ import annotations

from srnets_lib.model import backbones
from srnets_lib.methods.finetune import Finetune


class Head(Finetune):
    @classmethod
    def validate(cls, config) -> None:
        super().validate(config)
        if config.mask_from is not None:
            raise ValueError("method=head trains a head on the dense backbone: mask_from does not apply")

    def masked_layers(self):
        return None

    def trainable(self, model):
        head = backbones.trainable_head(model)
        if not head:
            raise ValueError("method=head: this model has no head that trains alone (a pre-training model's MLM head)")
        return head

