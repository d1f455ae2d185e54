"""What the benchmark steps: its workloads and variants (VARIANTS: each adds one change to the
one before it), the benchmarked models, generated example lengths, and one training step of each
variant: the naive reference's or the training loop's own (engine/step.py)."""

from __future__ import annotations

import numpy as np
import torch

from srnets_lib import methods
from srnets_lib.data.encode import Encoded, collate, encode
from srnets_lib.data.load import load_task
from srnets_lib.model import backbones, dropout, pruning
from srnets_lib.settings.config import DataConfig, RunConfig
from srnets_lib.engine import runtime, step
from srnets_lib.engine.kinds import corpus as corpus_kind
from srnets_lib.training.prepare import set_trainable

PRETRAINING = ("mlm", "kd", "mlm+kd")  # TAMT's objectives (corpus_kind.OBJECTIVES)
WORKLOADS = ("finetune", "mask", "imp", "eval") + PRETRAINING
# variant: (precision, padding, dropout_rng, compiled); padding "max" pads every batch to --max-length.
# Each row records its precision, padding and path, which `plan` reads its rates by (cost.py).
VARIANTS = {"naive": ("fp32", "max", "torch", False), "fp32 pad": ("fp32", "max", "torch", False),
            "tf32 pad": ("tf32", "max", "torch", False),
            "bf16 pad": ("bf16", "max", "torch", False), "ours pad": ("bf16", "max", "fast", False),
            "ours": ("bf16", "dynamic", "fast", False),
            "compiled fp32 pad": ("fp32", "max", "fast", True), "compiled tf32 pad": ("tf32", "max", "fast", True),
            "compiled fp32": ("fp32", "dynamic", "fast", True), "compiled tf32": ("tf32", "dynamic", "fast", True),
            "compiled pad": ("bf16", "max", "fast", True), "compiled": ("bf16", "dynamic", "fast", True)}
CPU_VARIANTS = ("naive", "fp32 pad", "bf16 pad", "ours pad", "ours")
OURS = ("ours pad", "ours")  # the training loop's own path: at the precision the params file chooses (ours_at)
# params/paper.yaml's own setting first (fp32, padded, compiled), then each faster switch
GPU_VARIANTS = ("naive", "fp32 pad", "compiled fp32 pad", "compiled tf32 pad", "compiled fp32", "compiled pad",
                "ours", "compiled")



def ours_at(precision: str) -> None:
    """'ours pad' and 'ours' at `precision`: the one the params file that this machine runs
    chooses (bench --params), so that "ours" measures the path its runs take (bf16 autocast is
    emulated, several times slower, on CPUs without native bf16, where params/toy.yaml runs fp32)."""
    for name in OURS:
        _, padding, dropout_rng, compiled = VARIANTS[name]
        VARIANTS[name] = (precision, padding, dropout_rng, compiled)


def setting(variant: str) -> dict:
    """What a row measured, as `plan` reads it (cost.row_setting): precision, padding (max_length,
    or dynamic: each batch to its longest, or its bucket when compiled) and the variant's intent to
    compile (`path` says whether it did)."""
    precision, padding, _, compiled = VARIANTS[variant]
    return {"precision": precision, "padding": "max_length" if padding == "max" else "dynamic", "compiled": compiled}


def build_model(name: str, num_labels: int, naive: bool, dropout_rng: str = "torch", pretraining_heads=False):
    """The benchmarked model: 'tiny', 'packaged' (all 6 layers), 'packaged-2' (the toy's 2 layers)
    or 'bert-base' (BERT-base shape, random weights: speed does not depend on the values); a
    classifier, or with `pretraining_heads` the pre-training model (backbones.load_pretraining_model)."""
    from transformers import BertConfig, BertForPreTraining, BertForSequenceClassification

    attention = "eager" if naive else "sdpa"
    torch.manual_seed(0)
    layers = int(name.split("-")[1]) if name.startswith("packaged-") else None
    backbone = "packaged" if name.startswith("packaged") else name
    if name == "bert-base":
        config = BertConfig(num_labels=num_labels, attn_implementation=attention)
        model = BertForPreTraining(config) if pretraining_heads else BertForSequenceClassification(config)
    elif pretraining_heads:
        model = backbones.load_pretraining_model(backbone, layers)
    else:
        model = backbones.load_model(backbone, num_labels, layers)
    model.set_attn_implementation(attention)
    if dropout_rng == "fast":
        dropout.use_fast_dropout(model)
    return model


def mnli_like(n: int, max_length: int, seed: int = 0) -> Encoded:
    """`n` generated pairs whose lengths follow MNLI's under BERT's tokenizer (log-normal, mean
    ~40 word pieces, clipped to [8, max_length]); random token ids: speed ignores the values."""
    rng = np.random.default_rng(seed)
    lengths = np.clip(np.round(rng.lognormal(np.log(36.0), 0.45, size=n)), 8, max_length).astype(np.int64)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    ids = rng.integers(1000, 30000, size=int(offsets[-1])).astype(np.int32)
    types = np.concatenate([(np.arange(k) >= k // 2).astype(np.int8) for k in lengths])
    return Encoded(ids, types, offsets, rng.integers(3, size=n))


def full_length(n: int, max_length: int, seed: int = 0) -> Encoded:
    """`n` examples of exactly `max_length` random token ids (corpus blocks, full QA windows)."""
    rng = np.random.default_rng(seed)
    offsets = np.arange(n + 1, dtype=np.int64) * max_length
    ids = rng.integers(1000, 30000, size=n * max_length).astype(np.int32)
    return Encoded(ids, np.zeros(n * max_length, dtype=np.int8), offsets, rng.integers(3, size=n))



def encoded_lengths(kind: str, max_length: int) -> Encoded:
    if kind == "mnli-like":
        return mnli_like(4096, max_length)
    if kind == "full":
        return full_length(1024, max_length)
    data = load_task("nli", DataConfig(train_size=2000, dev_size=50, ood_size=50))
    return encode(data.train, backbones.load_tokenizer("packaged"), max_length, "packaged", cache=False)


def prepare(model_name: str, workload: str, variant: str):
    """(model, trainable parameters, teacher) of one workload and variant, set up by the method
    itself (methods/): masks where it masks, at 50% sparsity (IMP: its first pruning, to 50%), and
    what it trains (embeddings frozen, as in params/toy.yaml); the teacher (TAMT's KD: the dense
    model, frozen) is None elsewhere."""
    naive = variant == "naive"
    _, _, dropout_rng, compiled = VARIANTS[variant]
    corpus = workload in PRETRAINING
    model = build_model(model_name, 3, naive, dropout_rng, pretraining_heads=corpus).to(runtime.device())
    teacher = corpus_kind.teacher_of(model) if corpus and "kd" in corpus_kind.OBJECTIVES[workload] else None
    method_name = "mask" if corpus else workload
    sparsity = 0.5 if methods.get(method_name).prunes else 0.0
    method = methods.create(RunConfig(task="corpus" if corpus else "nli", method=method_name,
                                      loss=workload if corpus else "std", sparsity=sparsity, imp_delta_s=0.5,
                                      train_embeddings=False), 1000)
    layers = method.masked_layers()
    for module in (pruning.install(model, layers) if layers else {}).values():
        module.cache_eval_weight = not compiled
    method.prepare(model)
    method.before_step(model, 0)
    trainable = list(set_trainable(model, method.trainable(model)).values())
    if naive:  # autograd through every frozen weight; only `trainable` is stepped
        model.requires_grad_(True)
    return model, trainable, teacher


def training_step(model, trainable, variant: str, workload: str = "finetune", teacher=None):
    """(forward, update) of one training step: the naive reference's, or the training loop's own
    step unit (step.py; corpus_kind.CorpusLoss for TAMT's objectives) for every other variant."""
    precision, _, _, compiled = VARIANTS[variant]
    corpus = workload in PRETRAINING
    if variant != "naive":
        forward = (corpus_kind.CorpusLoss(model, teacher, workload, precision) if corpus
                   else step.ForwardLoss(model, "std", precision, compiled))
        return forward, step.Optimization(trainable, 1e-4, 0.0, 10 ** 6, 0, 1.0).step
    optimizer = torch.optim.AdamW(trainable, lr=1e-4)

    def forward(batch):
        if corpus:
            return naive_pretraining_loss(model, teacher, workload, batch)
        with runtime.autocast(precision):
            logits = model(**batch["inputs"]).logits
        return torch.nn.functional.cross_entropy(logits.float(), batch["labels"])

    def update(loss):
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()

    return forward, update


def naive_pretraining_loss(model, teacher, objective: str, batch: dict) -> torch.Tensor:
    """The objective in fp32 with the MLM logits at every position (as BertForMaskedLM computes
    them, then ignores all but the predicted ones)."""
    terms, loss = corpus_kind.OBJECTIVES[objective], 0.0
    out = getattr(model, model.base_model_prefix)(**batch["inputs"], output_hidden_states="kd" in terms)
    if "mlm" in terms:
        logits = backbones.mlm_head(model)(out.last_hidden_state)
        loss = loss + torch.nn.functional.cross_entropy(logits.flatten(0, 1), batch["labels"].flatten(),
                                                        ignore_index=corpus_kind.IGNORE)
    if "kd" in terms:
        with torch.no_grad():
            taught = getattr(teacher, teacher.base_model_prefix)(**batch["inputs"], output_hidden_states=True)
        loss = loss + corpus_kind.kd_loss(out.hidden_states, taught.hidden_states)
    return loss


def training_batch(encoded: Encoded, index: np.ndarray, width: int | None, workload: str, vocab_size: int,
                   rng: np.random.Generator) -> dict:
    """A batch as the training loop builds it: collated to `width` (None: its longest example) with
    its labels; for TAMT's objectives the MLM corruption (corpus_kind.corrupt) where it predicts
    tokens, labels None where it does not."""
    collated = collate(encoded, index, 0, width)
    labels = torch.from_numpy(encoded.labels[index])
    if workload in PRETRAINING:
        labels = None
        if "mlm" in corpus_kind.OBJECTIVES[workload]:
            ids = collated["input_ids"].numpy()
            mask_id = min(103, vocab_size - 1)  # BERT's uncased [MASK]; speed does not depend on it
            ids, labels = corpus_kind.corrupt(ids, collated["attention_mask"].numpy() == 0, vocab_size, mask_id, rng)
            collated["input_ids"], labels = torch.from_numpy(ids), torch.from_numpy(labels)
    return {"inputs": runtime.model_inputs(collated),
            "labels": None if labels is None else labels.to(runtime.device())}
