"""A rebuilt run as a standard Hugging Face model folder that transformers loads without srnets:
model.safetensors holding W * m for every masked layer (the paper's subnetwork f(m . theta),
section 3.1), config.json, the tokenizer, and beside them the bit-packed mask (mask.npz, the run
store's format: pruning.save_masks) and the run's config.yaml.

Which transformers class loads it (`auto_class`):
- a labelled task: AutoModelForSequenceClassification. A run with `pooling: cls` (BERT's, the
  paper's) is a plain BertForSequenceClassification / RobertaForSequenceClassification. A run with
  `pooling: mean` (the toy: backbones.mean_pooled_class) is no transformers architecture: the folder
  carries modeling_mean_pooled.py (torch and transformers only), registered in config.json's
  `auto_map` under its own model_type, so it loads with `trust_remote_code=True` and refuses to
  load without it rather than silently pooling the [CLS] state;
- SQuAD (TAMT section 4.1): AutoModelForQuestionAnswering (BertForQuestionAnswering);
- a corpus run of Part II (TAMT section 3.4): AutoModelForMaskedLM, the pre-training model's
  encoder and MLM head (BertForPreTraining's next-sentence head and pooler, which the MLM logits do
  not read, are left out). Where the word embeddings are masked (RunConfig.mask_embeddings, TAMT's
  weight_types "E"), the MLM decoder reads the unmasked table, as in train_mlm.py of llyx97/TAMT:
  the folder unties them (tie_word_embeddings false) and stores both.
"""

from __future__ import annotations

import copy
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from srnets_lib import paths
from srnets_lib.export.modeling_mean_pooled import BertMeanPooledForSequenceClassification, MeanPooledBertConfig
from srnets_lib.export.rebuild import Rebuilt
from srnets_lib.model import backbones, pruning
from srnets_lib.store.runs import Run


@dataclass
class Folder:
    path: Path
    auto_class: str  # the transformers Auto class that loads it
    remote_code: bool  # loads with trust_remote_code=True (the mean-pooled classifier)
    files: list[str]


def plain(model: nn.Module, masked: bool = True) -> nn.Module:
    """A copy of `model` whose masked layers are plain nn.Linear / nn.Embedding holding W * m
    (`masked`), or W as it is (the dense model with its mask removed, for measurements)."""
    model = copy.deepcopy(model)
    layers = pruning.masked_modules(model)
    if any(isinstance(m, pruning.MaskedEmbedding) for m in layers.values()):
        untie_decoder(model)
    with torch.no_grad():
        for name, module in layers.items():
            weight = torch.where(module.binary_mask(), module.weight, 0.0) if masked else module.weight
            if isinstance(module, pruning.MaskedEmbedding):
                layer = nn.Embedding(module.num_embeddings, module.embedding_dim, module.padding_idx)
            else:
                layer = nn.Linear(module.in_features, module.out_features, bias=module.bias is not None)
                if module.bias is not None:
                    layer.bias.copy_(module.bias)
            layer.weight.copy_(weight)
            parent, _, child = name.rpartition(".")
            setattr(model.get_submodule(parent) if parent else model, child, layer)
    return model


def untie_decoder(model: nn.Module) -> None:
    """The MLM decoder gets its own copy of the (unmasked) word embeddings and output bias."""
    head = backbones.mlm_head(model)
    if head is None:
        return
    decoder = head.decoder
    decoder.weight = nn.Parameter(decoder.weight.detach().clone())
    if decoder.bias is not None:
        decoder.bias = nn.Parameter(decoder.bias.detach().clone())
    model.config.tie_word_embeddings = False


def as_transformers(model: nn.Module, rebuilt: Rebuilt) -> tuple[nn.Module, bool]:
    """The model as the transformers class its folder names, and whether it needs remote code."""
    if rebuilt.kind.task_agnostic and type(model).__name__.endswith("ForPreTraining"):
        from transformers import AutoModelForMaskedLM

        return _moved(model, AutoModelForMaskedLM.from_config(model.config), ("pooler.", "seq_relationship.")), False
    if rebuilt.kind.auto_class == "AutoModelForSequenceClassification" and rebuilt.config.pooling == "mean":
        MeanPooledBertConfig.register_for_auto_class()
        BertMeanPooledForSequenceClassification.register_for_auto_class("AutoModelForSequenceClassification")
        values = {k: v for k, v in model.config.to_dict().items()
                  if k not in ("model_type", "architectures", "transformers_version", "auto_map")}
        return _moved(model, BertMeanPooledForSequenceClassification(MeanPooledBertConfig(**values)), ()), True
    return model, False


def _moved(source: nn.Module, target: nn.Module, dropped: tuple[str, ...]) -> nn.Module:
    """`target` with `source`'s tensors; only tensors named with `dropped` may be left behind."""
    state = source.state_dict()
    if not target.config.tie_word_embeddings:
        untie_decoder(target)
    outcome = target.load_state_dict(state, strict=False)
    left = [k for k in outcome.unexpected_keys if not any(d in k for d in dropped)]
    if outcome.missing_keys or left:
        raise ValueError(f"cannot move {type(source).__name__} into {type(target).__name__}: missing "
                         f"{outcome.missing_keys[:3]}, unexpected {left[:3]}")
    return target.eval()


def write(rebuilt: Rebuilt, out: Path, masked: bool = True, beside: bool = True) -> Folder:
    """Write the folder (module docstring); `masked` False writes the dense model with the mask
    removed, `beside` False leaves out mask.npz and config.yaml (a measurement's reference)."""
    from transformers.utils import logging

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    model, remote = as_transformers(plain(rebuilt.model, masked), rebuilt)
    describe_config(model.config, rebuilt)
    logging.disable_progress_bar()
    try:
        model.save_pretrained(out, safe_serialization=True)
    finally:
        logging.enable_progress_bar()
    tokenizer = backbones.load_tokenizer(rebuilt.config.backbone)
    tokenizer.model_max_length = rebuilt.config.max_length  # the run truncated its pairs there (data/encode.py)
    tokenizer.save_pretrained(out)
    tidy_tokenizer_config(out / "tokenizer_config.json")
    if beside:
        save_mask(rebuilt.masks, out / "mask.npz")
        shutil.copyfile((rebuilt.store or Run(rebuilt.config).dir) / paths.CONFIG, out / "config.yaml")
    return Folder(out, rebuilt.kind.auto_class, remote, sorted(p.name for p in out.iterdir()))


def tidy_tokenizer_config(path: Path) -> None:
    """Leave out what loading the backbone offline wrote into the tokenizer's settings (where the
    files came from), which says nothing about tokenising; `max_length` there (the sentence
    embedder's 128) is left out too: `model_max_length` is the length the run truncated to."""
    if not path.is_file():
        return
    values = json.loads(path.read_text())
    for key in ("is_local", "local_files_only", "max_length"):
        values.pop(key, None)
    path.write_text(json.dumps(values, indent=2, sort_keys=True) + "\n")


def describe_config(config, rebuilt: Rebuilt) -> None:
    """Labels, and what the folder is (run, backbone, layers kept, pooling, max length) in config.json."""
    if len(rebuilt.label_names) > 1:  # classes (a regression's one "score" names no class)
        config.id2label = dict(enumerate(rebuilt.label_names))
        config.label2id = {name: i for i, name in enumerate(rebuilt.label_names)}
    run = rebuilt.config
    config.srnets = {"run": run.key(), "level": rebuilt.level, "backbone": run.backbone,
                     "backbone_layers": backbone_layers(run.backbone), "layers_kept": config.num_hidden_layers,
                     "pooling": run.pooling, "max_length": run.max_length,
                     "sparsity": rebuilt.scores.sparsity, "mask": "mask.npz (bit-packed, runs/<key>/mask.npz format)"}


def backbone_layers(backbone: str) -> int | None:
    """How many Transformer layers the backbone has before `num_layers` keeps the first ones."""
    from transformers import AutoConfig

    if backbone == "tiny":
        return backbones.tiny_config(2, 2).num_hidden_layers
    try:
        return AutoConfig.from_pretrained(backbones.resolve(backbone)).num_hidden_layers
    except OSError:
        return None


def save_mask(masks: dict[str, torch.Tensor], path: Path) -> None:
    """Bit-packed masks in the run store's format (pruning.save_masks): per layer `name|bits`
    (np.packbits of the flattened mask, row-major) and `name|shape`."""
    arrays = {}
    for name, kept in masks.items():
        bits = kept.numpy()
        arrays[f"{name}|bits"] = np.packbits(bits.reshape(-1))
        arrays[f"{name}|shape"] = np.asarray(bits.shape)
    with paths.replacing(path) as tmp:
        np.savez_compressed(tmp, **arrays)
