"""The one training loop: full fine-tuning, mask training (algorithm 2) and IMP (algorithm 1).

The paradigms differ only in what trains and how it is pruned (methods/, one module per
method) and in the loss (losses.py); one optimisation step is step.py, the set-up prepare.py,
when things happen the run's Schedule. The loop: step; after the steps the schedule names,
evaluate on the ID dev set (and the ID test and OOD sets where a result reads them, or everywhere
for training curves), consider the checkpoint for selection (the best ID dev score, appendix B.3.3),
record IMP's levels; at the end restore the selected checkpoint, score it on the ID test and OOD
sets if it was not, and write the result.
"""

from __future__ import annotations

import os
import sys
import time

import torch
from tqdm.auto import tqdm

from srnets_lib.model import backbones, pruning
from srnets_lib.engine import runtime, step
from srnets_lib.training.prepare import TrainingRun, build_run
from srnets_lib.settings.config import RunConfig
from srnets_lib.engine.evaluation import Selection, selection_score
from srnets_lib.settings.request import Request
from srnets_lib.store.result import LevelResult, RunResult, level_key
from srnets_lib.store import recompute
from srnets_lib.store.runs import Run, record_failure


def execute(config: RunConfig, store: Run, request: Request, progress: bool = False) -> RunResult:
    """Compute one run whose dependencies are finished (executors.py orders them), unless the
    store holds a result that serves `request`. A finished run that does not serve it is computed
    again beside its stored result, with the thread count that result recorded, and moved in once
    finished, what changed said (store/runs.py)."""
    checkpoint_seconds()
    if store.serves(request):
        store.release_stale_lock()
        return store.result()
    with store.claim(wait=True):
        again = store.recomputation()
        if again.done:  # a recomputation whose move was interrupted: completed, not computed again
            moved_in(store, again, None)
        if store.serves(request):  # finished by another process while we waited
            return store.result()
        stored = readable(store) if store.done else None
        target = again if store.done else store
        wanted = request.merge(stored.covered()) if stored is not None else request
        try:
            with runtime.threads(recorded_threads(stored) if stored is not None else recompute.started_threads(target)):
                result = fit(build_run(config, target, wanted), wanted, progress)
        except Exception as err:  # kept for the pages (shown as failed) until a later attempt finishes
            record_failure(store, err)
            raise
        return result if target is store else moved_in(store, target, stored)


def readable(store: Run) -> RunResult | None:
    """A finished run's result as final.json records it (its files may since be damaged), if it reads."""
    try:
        return store.result()
    except (OSError, ValueError):
        return None


def recorded_threads(stored: RunResult) -> int | None:
    """The CPU thread count a stored result was computed with, where it is computed again on a CPU
    (None on a GPU, or where it did not record one)."""
    execution = stored.execution
    if execution.get("device") != "cpu" or runtime.device().type != "cpu":
        return None
    if execution.get("cpu_capability") not in (None, runtime.describe().get("cpu_capability")):
        print(f"run {stored.key}: computed again on another CPU code path ({runtime.describe()['cpu_capability']}, "
              f"stored {execution['cpu_capability']}): its float results may differ", file=sys.stderr)
    return execution.get("threads")


def moved_in(store: Run, again: Run, stored: RunResult | None) -> RunResult:
    """The finished recomputation `again` moved into `store` (recompute.move_in), and whether it
    reproduced the `stored` result said in one line (a changed result makes its dependents stale:
    they record what they read of it)."""
    result = recompute.move_in(store, again)
    if stored is not None:
        changed = stored.differences(result)
        print(f"run {store.key} computed again: " + (
            "it differs from the stored result (" + "; ".join(changed[:6]) + (" ..." if len(changed) > 6 else "")
            + "); the runs built on it are stale and computed again" if changed
            else "the same scores and files as the stored result"), file=sys.stderr)
    return result


def fit(run: TrainingRun, request: Request, progress: bool = False) -> RunResult:
    started, schedule, model = time.time(), run.schedule, run.model
    evaluated = set(schedule.evaluated(request.ood_every, request.levels))
    loop = Loop(run, request)
    start = loop.resume()
    losses = step.LossLog(run.store.key)
    bar = tqdm(total=schedule.steps, initial=start, desc=run.store.key, disable=not progress, mininterval=2.0,
               leave=False)
    model.train()
    for at, batch in run.batches(start, schedule.steps, schedule.steps_per_epoch):
        run.method.before_step(model, at)
        if at in schedule.restarts:
            loop.optimization = run.optimization(at)
        loss = train_step(run, loop.optimization, batch)
        losses.add(at, loss)
        done = at + 1
        bar.update(1)
        run.method.after_step(model, done)
        loop.keep(done)
        if done in schedule.levels:  # every level's subnetwork, scored or not
            run.store.save_masks(pruning.masked_modules(model), schedule.levels[done])
        if done in schedule.evaluations:
            if done in evaluated:
                loop.evaluate(done, losses.mean_and_reset())
                bar.set_postfix(dev=f"{loop.history[-1]['dev']:.3f}")
            else:
                losses.check()
            loop.checkpoint(done)
        elif done % 100 == 0:
            losses.check()
    bar.close()
    if schedule.steps == 0:  # nothing trains (one-shot masks): evaluated once
        loop.evaluate(0, None)
    return loop.finish(time.time() - started)


def train_step(run: TrainingRun, optimization: step.Optimization, batch: dict) -> torch.Tensor:
    """One optimisation step. A compiled step that fails (compiling, capturing a CUDA graph, or
    its backward) is redone eagerly and the run goes on eagerly (step.ForwardLoss.fall_back)."""
    try:
        loss = run.forward(batch)
        optimization.step(loss)
    except Exception as err:
        if not run.forward.fall_back(err, run.store.key):
            raise
        loss = run.forward(batch)
        optimization.step(loss)
    return loss


def execution(run: TrainingRun) -> dict:
    """What final.json records of how the run executed, with any compiled path given up."""
    fallbacks = {part: reason for part, reason in (("training", run.forward.fallback),
                                                   ("evaluation", run.evaluator.fallback)) if reason}
    return {**runtime.describe(), **({"compile_fallback": fallbacks} if fallbacks else {})}


class Loop:
    """What the training loop keeps besides the model: the optimiser, every evaluation, the
    selected checkpoint, IMP's levels; and how it keeps them (resume points, kept weights)."""

    def __init__(self, run: TrainingRun, request: Request):
        self.run, self.request, self.store = run, request, run.store
        self.optimization: step.Optimization | None = None
        self.history: list[dict] = []
        self.levels: dict[str, dict] = {}
        self.selection = Selection(list(run.trainable), run.schedule.selectable,
                                   selection_score(run.config, run.data))
        self.every = checkpoint_seconds()
        self._last_checkpoint, self._checkpoint_cost = time.time(), 0.0

    def evaluate(self, at: int, loss: float | None) -> None:
        run, schedule = self.run, self.run.schedule
        with_ood = schedule.ood_at(at, self.request.ood_every, self.request.levels)
        scores = run.evaluator.scores(run.model, None if with_ood else ("dev",))
        row = {"step": at, "epoch": at / schedule.steps_per_epoch, "sparsity": current_sparsity(run.model),
               "loss": loss, **scores}
        self.store.log(row)
        self.history.append(row)
        if at in schedule.levels and with_ood:
            level = schedule.levels[at]
            self.levels[level_key(level)] = {"step": at, "sparsity": row["sparsity"], "id": row[run.evaluator.id_split],
                                         "dev": row["dev"], "ood": {k: row[k] for k in run.evaluator.ood}}
            if run.evaluator.predictions:
                self.store.save_predictions(run.evaluator.predictions, level)
        if self.selection.consider(row, run.model, run.evaluator.predictions):
            run.method.on_selected(run.model)

    def keep(self, done: int) -> None:
        """The trained tensors after `done` steps, where asked (section 5.1 starts there)."""
        if done in self.request.keep_steps:
            self.store.save_weights(self.run.trainable, done)

    # --- resume points ------------------------------------------------------------------------
    def resume(self) -> int:
        """Load the run's resume point if it has one; return the step to start from."""
        state = self.store.checkpoint() if self.run.trainable else None
        if state is not None and state.get("reads", {}) != self.run.reads:  # a dependency computed again since
            state = None
        if state is None:
            self.store.begin(resume_at=None)
            self.keep(0)
            return 0
        at = state["step"]
        self.run.model.load_state_dict(state["model"])
        self.optimization = self.run.optimization(self.run.schedule.segment_start(at))
        self.optimization.load_state_dict(state["optimization"])
        self.history, self.levels = state["history"], state["levels"]
        self.selection.load_state(state["selection"])
        torch.set_rng_state(state["torch_rng"])
        if state.get("cuda_rng") is not None and runtime.device().type == "cuda":
            torch.cuda.set_rng_state_all(state["cuda_rng"])
        self.store.begin(resume_at=at)
        return at

    def checkpoint(self, at: int) -> None:
        """A resume point, written at most every $SRNETS_CHECKPOINT_SECONDS (default 60 s) and
        never more often than 50x its own cost (under 2% of the run's time)."""
        if time.time() - self._last_checkpoint < max(self.every, 50 * self._checkpoint_cost):
            return
        began = time.time()
        cuda = runtime.device().type == "cuda"
        self.store.save_checkpoint({
            "step": at, "model": self.run.model.state_dict(), "reads": self.run.reads,
            "optimization": self.optimization.state_dict(), "history": self.history, "levels": self.levels,
            "selection": self.selection.state(), "torch_rng": torch.get_rng_state(),
            "cuda_rng": torch.cuda.get_rng_state_all() if cuda else None})
        self._last_checkpoint = time.time()
        self._checkpoint_cost = self._last_checkpoint - began

    # --- the result ---------------------------------------------------------------------------
    def finish(self, seconds: float) -> RunResult:
        run, cfg, store = self.run, self.run.config, self.store
        row = self.selection.restore(run.model, self.history[-1])
        predictions = dict(self.selection.predictions if self.selection.row else run.evaluator.predictions)
        masked = pruning.masked_modules(run.model)
        if run.method.prunes:
            store.save_masks(masked)
        if self.request.weights:
            store.save_weights(run.trainable)
        if any(name not in row for name in run.evaluator.reported):  # scored only now, on the selected checkpoint
            row = {**row, **run.evaluator.scores(run.model, run.evaluator.reported)}
            predictions.update(run.evaluator.predictions)
        if predictions:  # none from a corpus run (losses) or SQuAD (spans)
            store.save_predictions(predictions)
        report = (pruning.sparsity_report(masked, backbones.is_transformer_matrix) if masked
                  else {"sparsity": 0.0, "sparsity_min": 0.0, "sparsity_max": 0.0})
        result = RunResult(
            key=store.key, task=cfg.task, method=cfg.method, loss=cfg.loss, seed=cfg.seed, backbone=cfg.backbone,
            data=run.data.description, data_fingerprint=run.fingerprint, metric=run.data.metric,
            ood_metric=run.data.metric_of("ood"), target_sparsity=cfg.sparsity, **report,
            selected_step=row["step"], t_max=run.schedule.t_max, steps_run=run.schedule.steps,
            id=row[run.evaluator.id_split], id_split=run.evaluator.id_split, dev=row["dev"],
            ood={k: row[k] for k in run.evaluator.ood}, ood_missing=run.data.ood_missing,
            levels={k: LevelResult(**v) for k, v in self.levels.items()},
            scores={k: v for k, v in row.items() if k not in ROW_FIELDS + ("dev", *run.evaluator.reported)},
            bias_model=run.bias_source, evaluations=len(self.history), seconds=round(seconds, 2),
            execution=execution(run), ood_every=self.request.ood_every,
            kept_steps=sorted(self.request.keep_steps), weights=self.request.weights,
            levels_read=None if self.request.levels is None or not run.schedule.levels
            else sorted(self.levels, key=float), reads=run.reads)
        return store.finish(result)


ROW_FIELDS = ("step", "epoch", "sparsity", "loss")  # an evaluation row's fields besides its scores


def current_sparsity(model) -> float:
    masked = pruning.masked_modules(model)
    return pruning.sparsity_report(masked, backbones.is_transformer_matrix)["sparsity"] if masked else 0.0


def checkpoint_seconds() -> float:
    """$SRNETS_CHECKPOINT_SECONDS (default 60): how often a run writes its resume point. Read
    before any work (execute, the sweep), so a bad value stops nothing half-way."""
    text = os.environ.get("SRNETS_CHECKPOINT_SECONDS", "60")
    try:
        seconds = float(text)
    except ValueError:
        seconds = -1.0
    if not seconds >= 0:
        raise ValueError(f"$SRNETS_CHECKPOINT_SECONDS={text!r}: expected a number of seconds >= 0") from None
    return seconds
