"""The one training loop: full fine-tuning, mask training (algorithm 2) and IMP (algorithm 1).

The paradigms differ only in what trains, how it is pruned (srnets_lib/methods/, one module
per method) and which loss is used (losses.py); one optimisation step is step.py. The loop:
every `eval_interval` steps (and at the end) evaluate on the ID dev set and every OOD set (with
eval_ood=selected, only what a result reads: ID where a checkpoint may be selected, OOD at the
selected checkpoint and IMP's levels);
the selected checkpoint is the best on the ID metric (appendix B.3.3), after 0.7 t_max when
select=best_after_0.7, and only among checkpoints the method marks as at its target sparsity.
"""

from __future__ import annotations

import itertools
import math
import os
import time

import numpy as np
import torch
from tqdm.auto import tqdm

from . import bias as bias_lib
from . import dropout, losses, methods, models, paths, pruning, runtime, step
from .config import RunConfig
from .data import load_task
from .data.encode import collate, encode, eval_batches, train_batches
from .metrics import split_metric
from .methods import StepAction
from .runs import Run

# what bench.py and older callers import from here
device, autocast, model_inputs = runtime.device, runtime.autocast, runtime.model_inputs


def execute(config: RunConfig, root=None, progress: bool | None = None, keep_weights: bool = True) -> dict:
    """Compute `config` (its dependencies first) unless the store has it; return final.json.

    A fine-tuning run writes its trained weights only with `keep_weights` (a later run reads
    them: sweeps pass plan.weights_needed); a finished run whose weights are needed now but
    were not kept is computed again."""
    for dependency in config.dependencies():
        execute(dependency, root, progress, keep_weights=dependency is not config.mask_from)
    run = Run(config, root)

    def finished() -> bool:
        return run.done and not (keep_weights and run.lacks_weights())

    if finished():
        run.release_stale_lock()
        return run.final()
    with run.claim():
        if finished():  # finished by another process while we waited
            return run.final()
        return Trainer(config, run, progress, keep_weights).fit()


@torch.inference_mode()
def predict(model, encoded, batch_size: int, pad_id: int, precision: str = "fp32",
            forward=None, max_length: int | None = None, pad_to: int | None = None) -> np.ndarray:
    """Class probabilities for every example of an encoded split, in the split's order.
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
        probs[index] = torch.softmax(logits.float(), dim=-1).cpu().numpy()
    return probs


def load_weights(model, run: Run, step_count: int | None = None) -> None:
    """Load a fine-tuning run's trained tensors; every saved name and shape must match."""
    from safetensors.torch import load_file

    name = paths.step_weights(step_count) if step_count is not None else paths.WEIGHTS
    path = run.file(name)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: run {run.key} kept no weights here"
                                + (f" (add {step_count} to its keep_steps)" if step_count is not None else ""))
    tensors = load_file(str(path))
    own = dict(model.named_parameters())
    for key, value in tensors.items():
        if key not in own:
            raise KeyError(f"{path}: tensor {key} does not exist in the model")
        if own[key].shape != value.shape:
            raise ValueError(f"{path}: {key} has shape {tuple(value.shape)}, model has {tuple(own[key].shape)}")
        with torch.no_grad():
            own[key].copy_(value)


def copy_parameters(model, tensors: dict[str, torch.Tensor]) -> None:
    """Copy tensors this process saved (a snapshot or checkpoint) into the model's parameters."""
    own = dict(model.named_parameters())
    with torch.no_grad():
        for name, value in tensors.items():
            own[name].copy_(value)


def save_weights(tensors: dict[str, torch.Tensor], path) -> None:
    from safetensors.torch import save_file

    tmp = paths.temp_beside(path)
    save_file({k: v.detach().contiguous().cpu() for k, v in tensors.items()}, str(tmp))
    tmp.replace(path)


class Trainer:
    def __init__(self, config: RunConfig, run: Run, progress: bool | None = None, keep_weights: bool = True):
        self.config, self.run, self.keep_weights = config, run, keep_weights
        self.progress = progress if progress is not None else os.environ.get("SRNETS_PROGRESS", "1") != "0"
        self.compiled = runtime.compiled()
        self._last_checkpoint, self._checkpoint_cost = time.time(), 0.0

    # --- set-up ---------------------------------------------------------------------------
    def _build(self):
        cfg = self.config
        self.data = load_task(cfg.task, cfg.data)
        self.bias_probs = self.teacher_probs = None
        self.bias_source = None
        if cfg.loss in losses.NEEDS_BIAS and cfg.bias_model == "authors":
            probs, kept = bias_lib.authors_predictions(cfg.task, self.data.train, cfg.bias_path)
            if len(kept) < len(self.data.train):  # QQP rows without a prediction: dropped, as theirs
                dropped = len(self.data.train) - len(kept)
                self.data.train = self.data.train.subset(kept, "training rows without an authors' bias "
                                                               f"prediction dropped: {dropped}")
                self.data.description += "; " + self.data.train.notes[-1]
            self.bias_probs = torch.from_numpy(probs).float().to(runtime.device())
            self.bias_source = f"authors' predictions ({bias_lib.AUTHORS_FILES[cfg.task][0]})"
        self.steps_per_epoch = math.ceil(len(self.data.train) / cfg.batch_size)
        self.t_max = max(1, round(cfg.epochs * self.steps_per_epoch))
        self.tokenizer = models.load_tokenizer(cfg.backbone)
        self.pad_id = self.tokenizer.pad_token_id or 0
        self.model = models.load_model(cfg.backbone, len(self.data.label_names), cfg.num_layers,
                                       seed=cfg.seed, pooling=cfg.pooling).to(runtime.device())
        models.check_max_length(self.model.config, cfg.max_length, cfg.backbone)
        if cfg.dropout_rng == "fast":
            dropout.use_fast_dropout(self.model)
        if cfg.init_from is not None:
            load_weights(self.model, Run(cfg.init_from, self.run.dir.parent), cfg.init_step)
        self.method = methods.create(self)
        layers = self.method.masked_layers()
        self.masked = pruning.install(self.model, layers) if layers else {}
        for module in self.masked.values():
            module.cache_eval_weight = not self.compiled
        if cfg.mask_from is not None:  # section 4.3: the subnetwork with theta_pt, fine-tuned alone
            source = Run(cfg.mask_from, self.run.dir.parent).file(
                paths.level_mask(cfg.mask_level) if cfg.mask_level is not None else paths.MASK)
            masks = pruning.load_masks(source)
            pruning.apply_masks(self.masked, {n: m for n, m in masks.items() if n in self.masked}, str(source))
        tokenizer_id = models.backbone_id(cfg.backbone, None)
        self.encoded = {name: encode(split, self.tokenizer, cfg.max_length, tokenizer_id)
                        for name, split in [("train", self.data.train), *self.data.eval_splits.items()]}
        if cfg.loss in losses.NEEDS_BIAS and cfg.bias_model == "ours":
            predictions = bias_lib.bias_predictions(cfg.task, self.data, self.tokenizer,
                                                    models.input_embeddings(self.model),
                                                    cfg.backbone, cfg.word_vectors)
            self.bias_probs = torch.from_numpy(predictions.probs["train"]).float().to(runtime.device())
            self.bias_source = f"ours (out-of-fold logistic regression; word vectors: {predictions.vectors_source})"
        if cfg.loss == "confreg":
            self.teacher_probs = torch.from_numpy(self._teacher_predictions()).to(runtime.device())
        self.eval_forward = runtime.compile(self.model) if self.compiled else None

    def _teacher_predictions(self) -> np.ndarray:
        teacher = models.load_model(self.config.teacher.backbone, len(self.data.label_names),
                                    self.config.teacher.num_layers,
                                    pooling=self.config.teacher.pooling).to(runtime.device())
        load_weights(teacher, Run(self.config.teacher, self.run.dir.parent))
        return predict(teacher, self.encoded["train"], self.config.eval_batch_size, self.pad_id,
                       self.config.precision)

    def _optimization(self, params, at_step: int) -> step.Optimization:
        """The optimiser and lr schedule of the segment that starts at or contains `at_step`."""
        cfg = self.config
        first, length = self.method.segment(at_step)
        return step.Optimization(params, cfg.lr, cfg.weight_decay, length,
                                 step.warmup_steps(cfg.warmup_steps, cfg.warmup_ratio, length),
                                 cfg.max_grad_norm, cfg.grad_clip)

    def _train_batch(self, index: np.ndarray):
        """(inputs, labels, bias probs, teacher probs, full_batch) of one training batch."""
        cfg = self.config
        encoded = self.encoded["train"]
        if cfg.padding == "max_length":  # the authors': every pair padded to max_length
            width = cfg.max_length
        else:
            width = step.bucket(int(encoded.lengths[index].max()), cfg.max_length) if self.compiled else None
        inputs = runtime.model_inputs(collate(encoded, index, self.pad_id, pad_to=width))
        labels = torch.from_numpy(encoded.labels[index]).to(runtime.device())
        where = torch.from_numpy(index).to(runtime.device())
        bias = None if self.bias_probs is None else self.bias_probs[where]
        teacher = None if self.teacher_probs is None else self.teacher_probs[where]
        return inputs, labels, bias, teacher, len(index) == cfg.batch_size

    def _batches(self, start: int, total: int):
        """(step, example indices) for steps start..total-1: epoch e shuffles with seed
        (seed, e), so a resumed run sees the same batches. Length-grouped batches with dynamic
        padding; random batches with padding=max_length (the authors')."""
        if total <= 0:
            return
        grouped = self.config.padding == "dynamic"
        for epoch in itertools.count(start // self.steps_per_epoch):
            rng = np.random.default_rng([self.config.seed, epoch])
            batches = train_batches(self.encoded["train"], self.config.batch_size, rng, group_by_length=grouped)
            for position, index in enumerate(batches):
                at = epoch * self.steps_per_epoch + position
                if at >= total:
                    return
                if at >= start:
                    yield at, index

    # --- evaluation and selection -----------------------------------------------------------
    def evaluate(self, splits=None) -> dict[str, float]:
        """Scores on the named evaluation splits (default: the ID dev set and every OOD set)."""
        pruning.masks.invalidate_all(self.masked)
        scores = {}
        for name, split in self.data.eval_splits.items():
            if splits is not None and name not in splits:
                continue
            probs = predict(self.model, self.encoded[name], self.config.eval_batch_size, self.pad_id,
                            self.config.precision, self.eval_forward, self.config.max_length)
            scores[name] = split_metric(self.data.metric_of(name), split, probs.argmax(axis=1))
        self.model.train()
        return scores

    def current_sparsity(self) -> float:
        if not self.masked:
            return 0.0
        return pruning.sparsity_report(self.masked, models.is_transformer_matrix)["sparsity"]

    def _eligible(self, at_step: int) -> bool:
        """Whether the checkpoint after `at_step` steps may be selected: after 0.7 t_max with
        select=best_after_0.7 (appendix B.3.3), only among those the method allows (IMP: its
        last level) and, with select_at_target, only at the target sparsity."""
        cfg = self.config
        if cfg.select == "best_after_0.7" and at_step < 0.7 * self.t_max:
            return False
        if cfg.select_at_target and not self.method.at_target(at_step):
            return False
        return self.method.selectable(at_step)

    def _read(self, at_step: int) -> bool:
        """Whether anything reads an evaluation after `at_step` steps: every one with
        eval_ood=every (training curves); with `selected`, only a checkpoint that may be
        selected, a result of its own (IMP's levels) and the last one. The others would only
        be logged: skipping them changes no result (tested) and saved a third of the toy's
        evaluations (1366 -> 930 in a two-seed build)."""
        return (self.config.eval_ood == "every" or self._eligible(at_step) or self.method.reads_ood(at_step)
                or at_step == self.method.steps())

    def _snapshot(self) -> dict:
        """What the selected checkpoint needs: masks (pruning) and trained tensors (fine-tuning)."""
        state = {}
        if self.config.is_pruning:  # a retrain's mask is its input's: not saved again
            state["masks"] = {n: m.binary_mask().clone() for n, m in self.masked.items()}
        if self.config.method == "finetune":
            state["weights"] = {n: p.detach().clone() for n, p in self.model.named_parameters() if p.requires_grad}
        return state

    def _record(self, at_step: int, loss: float | None, best: dict | None, history: list) -> dict | None:
        """Evaluate, log, and return the best checkpoint so far."""
        with_ood = self.config.eval_ood == "every" or self.method.reads_ood(at_step)
        scores = self.evaluate(None if with_ood else ("dev",))
        row = {"step": at_step, "epoch": at_step / self.steps_per_epoch, "sparsity": self.current_sparsity(),
               "loss": loss, **scores}
        self.run.log(row)
        history.append(row)
        self.method.on_evaluation(row)
        if self._eligible(at_step) and (best is None or scores["dev"] > best["row"]["dev"]):
            best = {"row": row, "state": self._snapshot()}
        return best

    # --- the loop ---------------------------------------------------------------------------
    def fit(self) -> dict:
        started = time.time()
        self._build()
        params = self.method.trainable()
        total = self.method.steps()
        forward = step.ForwardLoss(self.model, self.config.loss, self.config.precision, self.compiled)
        optimization = self._optimization(params, 0) if params else None
        best, history, start = None, [], 0
        resumed = self._resume(params)
        if resumed:
            start, best, history, optimization = resumed
        self.run.begin(resume=bool(resumed))
        if resumed:
            self.run.truncate_metrics(start)
        else:
            self._keep_weights(0)
        log = step.LossLog(self.run.key)
        bar = tqdm(total=total, initial=start, desc=self.run.key, disable=not self.progress,
                   mininterval=2.0, leave=False)
        self.model.train()
        stopped_at = total
        for at, index in self._batches(start, total):
            action = self.method.before_step(at)
            if action is StepAction.STOP:
                stopped_at = at
                break
            if action is StepAction.RESTART:
                optimization = self._optimization(params, at)
            inputs, labels, bias, teacher, full = self._train_batch(index)
            loss = forward(inputs, labels, bias, teacher, full_batch=full)
            optimization.step(loss)
            log.add(at, loss)
            done = at + 1
            bar.update(1)
            self._keep_weights(done)
            self.method.after_step(done)
            if self.method.evaluate_now(done):
                if self._read(done):
                    best = self._record(done, log.mean_and_reset(), best, history)
                    bar.set_postfix(dev=f"{history[-1]['dev']:.3f}")
                else:
                    log.check()
                self._checkpoint(done, optimization, best, history)
            elif done % 100 == 0:
                log.check()
        bar.close()
        if not history or history[-1]["step"] != stopped_at:
            best = self._record(stopped_at, log.mean_and_reset(), best, history)
        return self._finish(best or {"row": history[-1], "state": self._snapshot()}, history, stopped_at,
                            time.time() - started)

    # --- persistence --------------------------------------------------------------------------
    def _keep_weights(self, at_step: int) -> None:
        """The trained tensors after `at_step` steps (section 5.1 starts mask training there)."""
        if at_step in self.config.keep_steps:
            save_weights({n: p for n, p in self.model.named_parameters() if p.requires_grad},
                         self.run.file(paths.step_weights(at_step)))

    def _checkpoint(self, at_step, optimization, best, history) -> None:
        """Resume point, written at most every $SRNETS_CHECKPOINT_SECONDS (default 60 s) and
        never more often than 50x its own cost (under 2% of the run's time)."""
        every = max(float(os.environ.get("SRNETS_CHECKPOINT_SECONDS", "60")), 50 * self._checkpoint_cost)
        if time.time() - self._last_checkpoint < every:
            return
        began = time.time()
        state = {"step": at_step, "key": self.run.key, "best": best, "history": history,
                 "model": {n: p.detach() for n, p in self.model.named_parameters()},
                 "masks": {n: (m.mask, m.mask_scores.detach() if m.mask_scores is not None else None,
                               m.threshold.detach()) for n, m in self.masked.items()},
                 "optimization": optimization.state_dict(), "method": self.method.state(),
                 "torch_rng": torch.get_rng_state(),
                 "cuda_rng": torch.cuda.get_rng_state_all() if runtime.device().type == "cuda" else None}
        path = self.run.file(paths.CHECKPOINT)
        tmp = paths.temp_beside(path)
        torch.save(state, tmp)
        tmp.replace(path)
        self._last_checkpoint = time.time()
        self._checkpoint_cost = self._last_checkpoint - began

    def _resume(self, params):
        """(step, best, history, optimization) from this run's checkpoint, or None."""
        path = self.run.file(paths.CHECKPOINT)
        if not path.is_file() or not params:
            return None
        try:
            state = torch.load(path, weights_only=False, map_location=runtime.device())
        except Exception:  # a checkpoint cut short by a crash: start over
            return None
        if state.get("key") != self.run.key or "optimization" not in state:
            return None
        copy_parameters(self.model, state["model"])
        for n, (mask, scores, threshold) in state["masks"].items():
            module = self.masked[n]
            module.set_mask(mask)
            if scores is not None:
                module.mask_scores.data.copy_(scores)
            module.threshold.copy_(threshold)
        self.method.load_state(state["method"])
        optimization = self._optimization(params, state["step"])
        optimization.load_state_dict(state["optimization"])
        torch.set_rng_state(state["torch_rng"].cpu())
        if state.get("cuda_rng") is not None and runtime.device().type == "cuda":
            torch.cuda.set_rng_state_all([s.cpu() for s in state["cuda_rng"]])
        return state["step"], state["best"], state["history"], optimization

    def _finish(self, best: dict, history: list[dict], steps_run: int, seconds: float) -> dict:
        cfg = self.config
        state = best["state"]
        if "masks" in state:
            pruning.apply_masks(self.masked, state["masks"], "selected checkpoint")
            pruning.save_masks(self.masked, self.run.file(paths.MASK))
        if "weights" in state and self.keep_weights:
            save_weights(state["weights"], self.run.file(paths.WEIGHTS))
        report = (pruning.sparsity_report(self.masked, models.is_transformer_matrix) if self.masked
                  else {"sparsity": 0.0, "sparsity_min": 0.0, "sparsity_max": 0.0})
        row = best["row"]
        if any(name not in row for name in self.data.ood):  # eval_ood=selected: evaluate it now
            if "weights" in state:
                copy_parameters(self.model, state["weights"])
            row = {**row, **self.evaluate(tuple(self.data.ood))}
        final = {
            "key": self.run.key, "task": cfg.task, "method": cfg.method, "loss": cfg.loss, "seed": cfg.seed,
            "backbone": cfg.backbone, "data": self.data.description, "metric": self.data.metric,
            "ood_metric": self.data.metric_of("ood"),
            "target_sparsity": cfg.sparsity, **report,
            "selected_step": row["step"], "t_max": self.t_max, "steps_run": steps_run,
            "id": row["dev"], "ood": {k: v for k, v in row.items() if k in self.data.ood},
            "bias_model": self.bias_source, "evaluations": len(history), "seconds": round(seconds, 2),
            "execution": runtime.describe(),
        }
        levels = self.method.levels()
        if levels:
            final["levels"] = levels
        self.run.finish(final)
        return final
