"""Evaluation and checkpoint selection: class probabilities over a split, a task's scores on its
ID dev set and OOD sets, and the best checkpoint on the ID dev metric (appendix B.3.3)."""

from __future__ import annotations

import numpy as np
import torch

from srnets_lib.model import pruning
from srnets_lib.engine import runtime, step
from srnets_lib.data.encode import Encoded, collate, eval_batches
from srnets_lib.data.tasks import spec
from srnets_lib.metrics import split_metric


@torch.inference_mode()
def predict(model, encoded: Encoded, batch_size: int, pad_id: int, precision: str = "fp32",
            forward=None, max_length: int | None = None, pad_to: int | None = None) -> np.ndarray:
    """Class probabilities for every example of an encoded split, in the split's order (a model
    with one output, a regression head, gives its raw score).
    `forward` (a compiled model) gets static shapes: lengths padded to a bucket (or `pad_to`)
    and every batch padded to `batch_size` rows (the padding rows' outputs are dropped)."""
    model.eval()
    probs = np.zeros((len(encoded), model.config.num_labels), dtype=np.float32)
    for index in eval_batches(encoded, batch_size):
        if forward is None:
            inputs = runtime.model_inputs(collate(encoded, index, pad_id, pad_to))
            call = model
        else:
            width = pad_to or step.bucket(int(encoded.lengths[index].max()), max_length)
            rows = np.concatenate([index, np.full(batch_size - len(index), index[0])])
            inputs = runtime.model_inputs(collate(encoded, rows, pad_id, pad_to=width))
            call = forward
            if runtime.device().type == "cuda":
                torch.compiler.cudagraph_mark_step_begin()
        with runtime.autocast(precision):
            logits = call(**inputs).logits[: len(index)]
        probs[index] = (logits.float() if logits.shape[-1] == 1 else torch.softmax(logits.float(), dim=-1)).cpu().numpy()
    return probs


class TaskEvaluator:
    """A task's scores: `dev` (ID, the selection metric) and each OOD set, by its metric."""

    def __init__(self, data, encoded: dict[str, Encoded], batch_size: int, pad_id: int, precision: str,
                 max_length: int, forward=None):
        self.data, self.encoded, self.batch_size, self.pad_id = data, encoded, batch_size, pad_id
        self.precision, self.max_length, self.forward = precision, max_length, forward
        self.fallback: str | None = None  # why the compiled forward was given up, if it was
        self.also = [m for m in spec(data.task).metrics if m != data.metric]
        self.predictions: dict[str, np.ndarray] = {}  # the last `scores` call's, per split

    @property
    def ood(self) -> tuple[str, ...]:
        return tuple(self.data.ood)

    @property
    def id_split(self) -> str:
        """The split the reported ID score is read from: the ID test split where the data have
        one (synthetic), so that it is not the score checkpoints were selected on; else dev."""
        return self.data.id_split

    @property
    def reported(self) -> tuple[str, ...]:
        """The splits scored only where a result reads them (a level, the selected checkpoint):
        every evaluation split but dev (the ID test split, if any, and the OOD sets). Selection
        never reads them."""
        return tuple(name for name in self.data.eval_splits if name != "dev")

    def scores(self, model, splits=None) -> dict[str, float]:
        """Scores on the named splits (default: dev and every OOD set); leaves the model training."""
        pruning.masks.invalidate_all(pruning.masked_modules(model))
        scores, self.predictions = {}, {}
        for name, split in self.data.eval_splits.items():
            if splits is not None and name not in splits:
                continue
            probs = self._predict(model, name)
            predictions = probs[:, 0] if probs.shape[1] == 1 else probs.argmax(axis=1)  # a score, or a class
            self.predictions[name] = predictions
            scores[name] = split_metric(self.data.metric_of(name), split, predictions)
            if name == "dev":  # the task's other recorded metrics (MRPC: accuracy and F1; STS-B: Spearman)
                scores.update({f"dev_{m}": split_metric(m, split, predictions) for m in self.also})
        model.train()
        return scores


    def _predict(self, model, name: str) -> np.ndarray:
        """predict() on one split; compiled, unless compiling failed (then eagerly, with a warning)."""
        try:
            return predict(model, self.encoded[name], self.batch_size, self.pad_id, self.precision,
                           self.forward, self.max_length)
        except Exception as err:
            if self.forward is None:
                raise
            self.forward = None
            self.fallback = runtime.fallback_warning(err, "the compiled evaluation", stacklevel=3)
            return predict(model, self.encoded[name], self.batch_size, self.pad_id, self.precision,
                           None, self.max_length)


def selection_score(config, data) -> str:
    """The evaluation row's field checkpoints are selected on: `dev` (the task's metric), or the
    dev score of `config.select_metric` (another metric the task records: RunConfig checks)."""
    chosen = config.select_metric
    return "dev" if chosen is None or chosen == data.metric else f"dev_{chosen}"


class Selection:
    """The best checkpoint so far on the ID dev score (`score`: the task's metric unless the run
    selects on another) among the selectable ones (the first of equals), kept as a copy of what
    differs between checkpoints: the trained tensors and the masks in force (mask buffers and
    thresholds), and its per-example predictions on the splits it was scored on."""

    def __init__(self, trainable: list[str], selectable: frozenset[int], score: str = "dev"):
        self.trainable, self.selectable, self.score = trainable, selectable, score
        self.row: dict | None = None
        self.snapshot: dict[str, torch.Tensor] | None = None
        self.predictions: dict[str, np.ndarray] = {}

    def consider(self, row: dict, model, predictions: dict[str, np.ndarray] | None = None) -> bool:
        """Select this checkpoint if it is selectable and the best so far; whether it was."""
        if row["step"] in self.selectable and (self.row is None or row[self.score] > self.row[self.score]):
            self.row, self.snapshot, self.predictions = row, self._snapshot(model), dict(predictions or {})
            return True
        return False

    def _snapshot(self, model) -> dict[str, torch.Tensor]:
        names = set(self.trainable)
        for name in pruning.masked_modules(model):
            names |= {f"{name}.mask", f"{name}.threshold"}
        return {k: v.detach().clone() for k, v in model.state_dict().items() if k in names}

    def restore(self, model, fallback: dict) -> dict:
        """Load the selected checkpoint into `model` (the last one, `fallback`, if none was
        selectable); return its evaluation row."""
        if self.row is None:
            return fallback
        model.load_state_dict(self.snapshot, strict=False)
        return self.row

    def state(self) -> dict:
        """As tensors: a resume point is loaded with torch.load(weights_only=True)."""
        return {"row": self.row, "snapshot": self.snapshot,
                "predictions": {k: torch.from_numpy(v) for k, v in self.predictions.items()}}

    def load_state(self, state: dict) -> None:
        self.row, self.snapshot = state["row"], state["snapshot"]
        self.predictions = {k: v.numpy() for k, v in state.get("predictions", {}).items()}
