"""The one training loop: full fine-tuning, mask training (algorithm 2) and IMP (algorithm 1).

The paradigms differ only in what trains and which loss is used:
  finetune   all weights (of the subnetwork, if mask_from is set)   sections 4.2-4.5
  mask       only the mask scores m_hat; every weight frozen         algorithm 2
  imp/imp-rw weights, with magnitude pruning every delta_t steps     algorithm 1
  omp/random no training: a one-shot mask, evaluated once
Evaluation every `eval_interval` steps on the ID dev set and every OOD set; the selected
checkpoint is the best on the ID metric (appendix B.3.3), after 0.7 t_max when
select=best_after_0.7, and only among checkpoints at the target sparsity.
"""

from __future__ import annotations

import functools
import math
import os
import time

import numpy as np
import torch
from tqdm.auto import tqdm

from . import bias as bias_lib
from . import dropout, losses, models, paths, pruning
from .config import RunConfig
from .data import TaskData, load_task
from .data.encode import collate, encode, eval_batches, train_batches
from .metrics import METRICS
from .runs import Run


def execute(config: RunConfig, root=None, progress: bool | None = None) -> dict:
    """Compute `config` (its dependencies first) unless the store has it; return final.json."""
    for dependency in config.dependencies():
        execute(dependency, root, progress)
    run = Run(config, root)
    if run.done:
        run.release_stale_lock()
        return run.final()
    with run.claim():
        if run.done:  # finished by another process while we waited
            return run.final()
        return Trainer(config, run, progress).fit()


def split_metric(data: TaskData, split, predictions: np.ndarray) -> float:
    if split.collapse is not None:
        predictions = np.asarray(split.collapse)[predictions]
    return METRICS[data.metric](predictions, split.labels)


@functools.cache
def device() -> torch.device:
    """Where runs train: the first CUDA device if there is one, else the CPU (decided once:
    it is asked for every batch)."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def autocast(precision: str):
    """bf16 autocast for forward passes (RunConfig.precision); fp32 is a no-op context."""
    return torch.autocast(device().type, dtype=torch.bfloat16, enabled=precision == "bf16")


def model_inputs(batch: dict) -> dict:
    """A collated batch on the training device, without its example index."""
    return {k: v.to(device(), non_blocking=True) for k, v in batch.items() if k != "index"}


@torch.inference_mode()
def predict(model, encoded, batch_size: int, pad_id: int, precision: str = "fp32") -> np.ndarray:
    """Class probabilities for every example of an encoded split, in the split's order."""
    model.eval()
    probs = np.zeros((len(encoded), model.config.num_labels), dtype=np.float32)
    for index in eval_batches(encoded, batch_size):
        with autocast(precision):
            logits = model(**model_inputs(collate(encoded, index, pad_id))).logits
        probs[index] = torch.softmax(logits.float(), dim=-1).cpu().numpy()
    return probs


def load_weights(model, run: Run, step: int | None = None) -> None:
    """Load a fine-tuning run's trained tensors; every saved name and shape must match."""
    from safetensors.torch import load_file

    name = paths.step_weights(step) if step is not None else paths.WEIGHTS
    path = run.file(name)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: run {run.key} kept no weights here"
                                + (f" (add {step} to its keep_steps)" if step is not None else ""))
    tensors = load_file(str(path))
    own = dict(model.named_parameters())
    for key, value in tensors.items():
        if key not in own:
            raise KeyError(f"{path}: tensor {key} does not exist in the model")
        if own[key].shape != value.shape:
            raise ValueError(f"{path}: {key} has shape {tuple(value.shape)}, model has {tuple(own[key].shape)}")
        with torch.no_grad():
            own[key].copy_(value)


def save_weights(tensors: dict[str, torch.Tensor], path) -> None:
    from safetensors.torch import save_file

    tmp = paths.temp_beside(path)
    save_file({k: v.detach().contiguous().cpu() for k, v in tensors.items()}, str(tmp))
    tmp.replace(path)


class Trainer:
    def __init__(self, config: RunConfig, run: Run, progress: bool | None = None):
        self.config, self.run = config, run
        self.progress = progress if progress is not None else os.environ.get("SRNETS_PROGRESS", "1") != "0"
        self._last_checkpoint = time.time()

    # --- set-up ---------------------------------------------------------------------------
    def _build(self):
        cfg = self.config
        self.data = load_task(cfg.task, cfg.data)
        self.tokenizer = models.load_tokenizer(cfg.backbone)
        self.pad_id = self.tokenizer.pad_token_id or 0
        self.model = models.load_model(cfg.backbone, len(self.data.label_names), cfg.num_layers,
                                       seed=cfg.seed).to(device())
        if cfg.dropout_rng == "fast":
            dropout.use_fast_dropout(self.model)
        if cfg.init_from is not None:
            load_weights(self.model, Run(cfg.init_from, self.run.dir.parent), cfg.init_step)
        self.masked = {}
        if cfg.is_pruning or cfg.mask_from is not None:
            self.masked = pruning.install(self.model, models.is_prunable)
        if cfg.mask_from is not None:  # section 4.3: the subnetwork with theta_pt, fine-tuned alone
            source = Run(cfg.mask_from, self.run.dir.parent).file(paths.MASK)
            pruning.apply_masks(self.masked, pruning.load_masks(source), str(source))
        tokenizer_id = models.backbone_id(cfg.backbone, None)
        self.encoded = {name: encode(split, self.tokenizer, cfg.max_length, tokenizer_id)
                        for name, split in [("train", self.data.train), *self.data.eval_splits.items()]}
        self.bias_probs = self.teacher_probs = None
        self.bias_source = None
        if cfg.loss in losses.NEEDS_BIAS:
            predictions = bias_lib.bias_predictions(cfg.task, self.data, self.tokenizer,
                                                    models.input_embeddings(self.model),
                                                    cfg.backbone, cfg.word_vectors)
            self.bias_probs = torch.from_numpy(predictions.probs["train"]).float().to(device())
            self.bias_source = predictions.vectors_source
        if cfg.loss == "confreg":
            self.teacher_probs = torch.from_numpy(self._teacher_predictions()).to(device())
        self.steps_per_epoch = math.ceil(len(self.data.train) / cfg.batch_size)
        self.t_max = max(1, round(cfg.epochs * self.steps_per_epoch))

    def _teacher_predictions(self) -> np.ndarray:
        teacher = models.load_model(self.config.backbone, len(self.data.label_names),
                                    self.config.num_layers).to(device())
        load_weights(teacher, Run(self.config.teacher, self.run.dir.parent))
        return predict(teacher, self.encoded["train"], self.config.eval_batch_size, self.pad_id,
                       self.config.precision)

    def _trainable(self) -> list[torch.nn.Parameter]:
        cfg = self.config
        if cfg.method == "mask":
            self.model.requires_grad_(False)  # weights and classifier frozen (authors' convention)
            schedule = pruning.SCHEDULES[cfg.schedule]
            start = schedule(0, self.t_max, cfg.sparsity, cfg.sparsity_init, cfg.ramp_end)
            for module in self.masked.values():
                module.start_mask_training(cfg.mask_init, start, cfg.phi, cfg.alpha)
            return [m.mask_scores for m in self.masked.values()]
        if not cfg.train_embeddings:
            models.freeze_embeddings(self.model)
        return [p for p in self.model.parameters() if p.requires_grad]

    # --- evaluation and selection -----------------------------------------------------------
    def evaluate(self) -> dict[str, float]:
        pruning.masks.invalidate_all(self.masked)
        scores = {}
        for name, split in self.data.eval_splits.items():
            probs = predict(self.model, self.encoded[name], self.config.eval_batch_size, self.pad_id,
                            self.config.precision)
            scores[name] = split_metric(self.data, split, probs.argmax(axis=1))
        self.model.train()
        return scores

    def current_sparsity(self) -> float:
        if not self.masked:
            return 0.0
        return pruning.sparsity_report(self.masked, models.is_transformer_matrix)["sparsity"]

    def _eligible(self, step: int, target_reached: bool) -> bool:
        if self.config.select == "best_after_0.7" and step < 0.7 * self.t_max:
            return False
        return target_reached or not self.config.is_pruning

    def _snapshot(self) -> dict:
        """What the selected checkpoint needs: masks (pruning) and trained tensors (fine-tuning)."""
        state = {}
        if self.masked:
            state["masks"] = {n: m.binary_mask().clone() for n, m in self.masked.items()}
        if self.config.method == "finetune":
            state["weights"] = {n: p.detach().clone() for n, p in self.model.named_parameters() if p.requires_grad}
        return state

    # --- the loop ---------------------------------------------------------------------------
    def fit(self) -> dict:
        cfg, started = self.config, time.time()
        self._build()
        params = self._trainable()
        optimizer = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay) if params else None
        warmup = round(cfg.warmup_ratio * self.t_max)
        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda t: min(
            (t + 1) / max(1, warmup), max(0.0, (self.t_max - t) / max(1, self.t_max - warmup)))) if optimizer else None
        loss_fn = losses.LOSSES[cfg.loss]
        imp = (pruning.IMPSchedule(cfg.sparsity, cfg.imp_delta_s, cfg.imp_delta_t, self.t_max, cfg.method)
               if cfg.method in ("imp", "imp-rw") else None)
        theta_0 = {n: p.detach().clone() for n, p in self.model.named_parameters()} if imp else None
        schedule = pruning.SCHEDULES[cfg.schedule]
        best, history, step, start_step = None, [], 0, 0
        resumed = self._resume(optimizer, scheduler, imp)
        if resumed:
            start_step, best, history = resumed["step"], resumed["best"], resumed["history"]
        self.run.begin(resume=bool(resumed))
        if resumed:
            self.run.truncate_metrics(start_step)

        if cfg.method in ("omp", "random"):  # one-shot masks, no training (TAMT paper; baseline)
            generator = torch.Generator().manual_seed(cfg.seed)
            for module in self.masked.values():
                if cfg.method == "omp":
                    pruning.magnitude_prune(module, cfg.sparsity)
                else:
                    pruning.random_prune(module, cfg.sparsity, generator)
            total = 0
        else:
            total = self.t_max
        if start_step == 0:
            self._keep_weights(0)

        def record(at_step: int, loss_value: float | None):
            nonlocal best
            scores = self.evaluate()
            sparsity = self.current_sparsity()
            reached = (imp.reached if imp else
                       abs(schedule(at_step, self.t_max, cfg.sparsity, cfg.sparsity_init, cfg.ramp_end)
                           - cfg.sparsity) < 1e-9)
            row = {"step": at_step, "epoch": at_step / self.steps_per_epoch, "sparsity": sparsity,
                   "loss": loss_value, **scores}
            self.run.log(row)
            history.append(row)
            if self._eligible(at_step, reached) and (best is None or scores["dev"] > best["row"]["dev"]):
                best = {"row": row, "state": self._snapshot()}
            return scores

        bar = tqdm(total=total, initial=start_step, desc=self.run.key, disable=not self.progress,
                   mininterval=2.0, leave=False)
        self.model.train()
        stopped_at = total
        running = []
        for epoch in range(start_step // self.steps_per_epoch if total else 0,
                           math.ceil(total / self.steps_per_epoch) if total else 0):
            rng = np.random.default_rng([cfg.seed, epoch])
            batches = train_batches(self.encoded["train"], cfg.batch_size, rng)
            for position, index in enumerate(batches):
                step = epoch * self.steps_per_epoch + position
                if step < start_step:
                    continue
                if step >= total:
                    break
                if imp is not None:
                    action = imp.action(step)
                    if action == "stop":
                        stopped_at = step
                        break
                    if action == "prune":
                        imp.n += 1
                        for module in self.masked.values():
                            pruning.magnitude_prune(module, imp.current_sparsity())
                        if imp.reached and cfg.method == "imp-rw":  # rewind to theta_0 and return
                            with torch.no_grad():
                                for n, p in self.model.named_parameters():
                                    p.copy_(theta_0[n])
                            stopped_at = step
                            break
                batch = model_inputs(collate(self.encoded["train"], index, self.pad_id))
                labels = torch.from_numpy(self.encoded["train"].labels[index]).to(device())
                with autocast(cfg.precision):
                    logits = self.model(**batch).logits
                loss = loss_fn(logits.float(), labels,
                               None if self.bias_probs is None else self.bias_probs[index],
                               None if self.teacher_probs is None else self.teacher_probs[index])
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                optimizer.step()
                scheduler.step()
                running.append(loss.item())
                done = step + 1
                bar.update(1)
                self._keep_weights(done)
                if cfg.method == "mask" and (done % cfg.eval_interval == 0 or done == total):
                    sparsity = schedule(done, self.t_max, cfg.sparsity, cfg.sparsity_init, cfg.ramp_end)
                    for module in self.masked.values():  # algorithm 2, line 15
                        module.reset_threshold(sparsity)
                if done % cfg.eval_interval == 0 or done == total:
                    scores = record(done, float(np.mean(running)))
                    running = []
                    bar.set_postfix(dev=f"{scores['dev']:.3f}")
                    self._checkpoint(done, optimizer, scheduler, imp, best, history)
            else:
                continue
            break
        bar.close()
        if total == 0 or stopped_at != total or not history or history[-1]["step"] != stopped_at:
            record(stopped_at, float(np.mean(running)) if running else None)
        return self._finish(best or {"row": history[-1], "state": self._snapshot()}, history, stopped_at,
                            time.time() - started)

    # --- persistence --------------------------------------------------------------------------
    def _keep_weights(self, step: int) -> None:
        if step in self.config.keep_steps:
            save_weights(dict(self.model.named_parameters()), self.run.file(paths.step_weights(step)))

    def _checkpoint(self, step, optimizer, scheduler, imp, best, history) -> None:
        """Resume point, written at most every $SRNETS_CHECKPOINT_SECONDS (default 60 s)."""
        every = float(os.environ.get("SRNETS_CHECKPOINT_SECONDS", "60"))
        if time.time() - self._last_checkpoint < every:
            return
        self._last_checkpoint = time.time()
        state = {"step": step, "key": self.run.key, "best": best, "history": history,
                 "model": {n: p.detach() for n, p in self.model.named_parameters()},
                 "masks": {n: (m.mask, m.mask_scores.detach() if m.mask_scores is not None else None, m.threshold)
                           for n, m in self.masked.items()},
                 "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(),
                 "imp_n": imp.n if imp else None, "torch_rng": torch.get_rng_state()}
        tmp = paths.temp_beside(self.run.file(paths.CHECKPOINT))
        torch.save(state, tmp)
        tmp.replace(self.run.file(paths.CHECKPOINT))

    def _resume(self, optimizer, scheduler, imp) -> dict | None:
        path = self.run.file(paths.CHECKPOINT)
        if not path.is_file() or optimizer is None:
            return None
        try:
            state = torch.load(path, weights_only=False, map_location=device())
        except Exception:  # a checkpoint cut short by a crash: start over
            return None
        if state.get("key") != self.run.key:
            return None
        own = dict(self.model.named_parameters())
        with torch.no_grad():
            for n, value in state["model"].items():
                own[n].copy_(value)
        for n, (mask, scores, threshold) in state["masks"].items():
            module = self.masked[n]
            module.mask = mask
            if scores is not None:
                module.mask_scores.data.copy_(scores)
            module.threshold = threshold
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        if imp is not None:
            imp.n = state["imp_n"]
        torch.set_rng_state(state["torch_rng"].cpu())
        return state

    def _finish(self, best: dict, history: list[dict], steps_run: int, seconds: float) -> dict:
        cfg = self.config
        state = best["state"]
        if "masks" in state:
            pruning.apply_masks(self.masked, state["masks"], "selected checkpoint")
            pruning.save_masks(self.masked, self.run.file(paths.MASK))
        if "weights" in state:
            save_weights(state["weights"], self.run.file(paths.WEIGHTS))
        report = (pruning.sparsity_report(self.masked, models.is_transformer_matrix) if self.masked
                  else {"sparsity": 0.0, "sparsity_min": 0.0, "sparsity_max": 0.0})
        row = best["row"]
        final = {
            "key": self.run.key, "task": cfg.task, "method": cfg.method, "loss": cfg.loss, "seed": cfg.seed,
            "backbone": cfg.backbone, "data": self.data.description, "metric": self.data.metric,
            "target_sparsity": cfg.sparsity, **report,
            "selected_step": row["step"], "t_max": self.t_max, "steps_run": steps_run,
            "id": row["dev"], "ood": {k: v for k, v in row.items() if k in self.data.ood},
            "bias_vectors": self.bias_source, "evaluations": len(history), "seconds": round(seconds, 2),
        }
        self.run.finish(final)
        return final
