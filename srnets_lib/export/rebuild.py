"""The model of a finished run, rebuilt from the run store: its architecture, its weights and the
mask in force, as its selected checkpoint (or one IMP level) computed its stored predictions.

Where the weights come from depends on what the run trains:
- mask training (section 3.2.2, algorithm 2), OMP and random pruning train no weight: the weights
  they started from (their `init_from` run's kept weights, or the pre-trained backbone with the head
  their seed initialised: TaskKind.load_model) times their bit-packed mask (runs/<key>/mask.npz);
- a run that kept its selected weights (the full models other runs start from, graph.needs): those;
- IMP (algorithm 1), fine-tuned subnetworks (section 4.3) and TAMT's corpus masks, whose MLM head
  trains beside the scores, train weights the store keeps only where a run asks for them. Such a
  run is computed again in this process with a request that keeps them (request.Request.weights;
  an IMP level below the target: its weights after that level's last step, `keep_steps`), merged
  with what the stored run already covered. A run is deterministic on one machine (the same CPU
  code path and thread count), so it recomputes its stored result; where it does not (a store
  computed elsewhere) `Rebuilt.recomputed` says what changed, and the recomputed run, now in the
  store, is the one exported.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import torch

from srnets_lib import methods, paths
from srnets_lib.data.load import load_task
from srnets_lib.engine import kinds
from srnets_lib.model import backbones as models, pruning
from srnets_lib.settings.config import RunConfig
from srnets_lib.settings.request import Request
from srnets_lib.store.result import RunResult
from srnets_lib.store.runs import Run
from srnets_lib.sweeps.executors import execute
from srnets_lib.training.prepare import install_masks


@dataclass
class Rebuilt:
    config: RunConfig
    level: float | None  # the IMP level exported; None: the run's selected checkpoint
    model: torch.nn.Module  # the srnets model, its masked layers installed and in force
    masks: dict[str, torch.Tensor]  # the mask in force per masked layer (none for a dense model)
    result: RunResult  # the run's result (the recomputed one where its weights were recomputed)
    predictions: dict[str, np.ndarray] | None  # what it stored for that checkpoint (level)
    label_names: tuple[str, ...]
    kind: type[kinds.TaskKind]  # its task's kind (engine/kinds): what it loads as, what it stored
    weights: str  # where the weights came from, in words (the model card says it)
    recomputed: str | None = None  # how the recomputed result differs from the stored one
    store: Path | None = None  # the run's directory in the store

    @property
    def scores(self):
        """The scores of what is exported: the run's, or its level's (result.LevelResult)."""
        return self.result if self.level is None else self.result.level(self.level)


def rebuild(config: RunConfig, level: float | None = None, root: Path | None = None,
            request: Request | None = None, say=print) -> Rebuilt:
    """The model of `config`'s finished run (or of its IMP `level`), computing the run again where
    its weights were not kept (module docstring); `say` reports that, in one line."""
    store = Run(config, root)
    result = store.result()
    if level is not None and abs(level - config.sparsity) < 1e-9:
        level = None  # the last level is the run's own result
    step = level_step(config, result, level) if level is not None else None
    kind = kinds.of(config.task)
    data = load_task(config.task, config.data)
    labels = tuple(getattr(data, "label_names", ()) or ())
    model, method = skeleton(config, store, data, kind)
    trained = [p for p in method.trainable(model) if p is not None]
    weights, recomputed, again = "the weights it started from and its mask (it trains no weight)", None, False
    if trained and not _kept(result, step):
        before, again = result, True
        result = recompute(config, result, step, level, root, request or Request(), say)
        recomputed = difference(before, result, level)
    if trained:
        load_kept(model, store, step)
        weights = (f"its weights after step {step} (the end of level {level:g})" if step is not None
                   else "its selected weights") + (", computed again here (the store had not kept them)" if again
                                                    else ", kept by the store")
    masked = pruning.masked_modules(model)
    if method.prunes:
        pruning.apply_masks(masked, store.masks(level), str(store.dir))
    model.eval()
    return Rebuilt(config, level, model, {n: m.binary_mask().cpu() for n, m in masked.items()}, result,
                   store.predictions(level), labels, kind, weights, recomputed, store.dir)


def level_step(config: RunConfig, result: RunResult, level: float) -> int:
    """The step an IMP level ends at (methods/imp.py: level k is the model after k S steps, the
    run stops at N S); a level the run does not yield is refused, naming those it does."""
    if not result.levels and config.method not in ("imp", "imp-rw"):
        raise ValueError(f"run {config.key()} ({config.method}) has no levels: export it without a level")
    count = round(config.sparsity / config.imp_delta_s)
    k = round(level / config.imp_delta_s)
    if abs(level / config.imp_delta_s - k) > 1e-6 or not 1 <= k <= count:
        yielded = ", ".join(f"{i * config.imp_delta_s:g}" for i in range(1, count + 1))
        raise ValueError(f"run {config.key()} yields IMP levels {yielded}, not {level:g}")
    return k * result.steps_run // count


def skeleton(config: RunConfig, store: Run, data, kind: type[kinds.TaskKind]):
    """The run's model as training.prepare.build_run makes it (backbone, head from its seed, the weights of
    its init_from run, masked layers and a mask_from run's mask) and its method; no training state."""
    model = kind.load_model(config, data)
    if config.init_from is not None:
        store.of(config.init_from).load_weights(model, config.init_step)
    method = methods.get(config.method)(config, None)  # declarations only: no schedule is read
    install_masks(model, method, store)
    return model, method


def _kept(result: RunResult, step: int | None) -> bool:
    return step in result.kept_steps if step is not None else result.weights


def recompute(config: RunConfig, stored: RunResult, step: int | None, level: float | None, root,
              request: Request, say) -> RunResult:
    """Compute the run again with its weights kept, keeping at least what the stored run covered."""
    levels = None if stored.levels_read is None else tuple(sorted({*map(float, stored.levels_read),
                                                                  *([level] if level is not None else [])}))
    wanted = replace(request, ood_every=stored.ood_every, levels=levels,
                     keep_steps=tuple(sorted({*stored.kept_steps, *([step] if step is not None else [])})),
                     weights=True)  # the selected weights too: the run's own point needs no second recompute
    say(f"run {config.key()} ({config.method}) trains weights the store did not keep: computing it again "
        f"here with them kept ({stored.steps_run} steps; deterministic on one machine, so the stored result "
        "is reproduced)")
    return execute(config, wanted, root)


def difference(before: RunResult, after: RunResult, level: float | None) -> str | None:
    """None if the recomputed run scores what the stored one did, else what changed, in words."""
    def scores(result):
        scored = result if level is None else result.level(level)
        return None if scored is None else {"ID": scored.id, **scored.ood}

    old, new = scores(before), scores(after)
    if old is None or old == new:
        return None if old is not None else "the stored run had not scored this level"
    changed = [f"{k} {old[k]:.4f} -> {new.get(k, float('nan')):.4f}" for k in old if old[k] != new.get(k)]
    return ("the recomputed run differs from the stored one (computed on another CPU code path or thread "
            f"count: {before.execution}): " + ", ".join(changed))


def load_kept(model: torch.nn.Module, store: Run, step: int | None) -> None:
    """Load the run's kept tensors (those after `step` steps, or the selected ones) into `model`;
    mask scores kept beside them are left out: the mask file holds the mask they define."""
    from safetensors.torch import load_file

    path = store.file(paths.step_weights(step) if step is not None else paths.WEIGHTS)
    tensors = {k: v for k, v in load_file(str(path)).items() if not k.endswith("mask_scores")}
    own = dict(model.named_parameters())
    for name, value in tensors.items():
        if name not in own or own[name].shape != value.shape:
            raise ValueError(f"{path}: tensor {name} {tuple(value.shape)} does not match the rebuilt model")
    models.copy_into(model, tensors)
    for module in pruning.masked_modules(model).values():
        module.invalidate()
