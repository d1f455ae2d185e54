"""The model of a finished run, rebuilt from the run store: its architecture, its weights and the
mask in force, as its selected checkpoint (or one IMP level) computed its stored predictions.

Where the weights come from depends on what the run trains:
- mask training (section 3.2.2, algorithm 2), OMP and random pruning train no weight: the weights
  they started from (their `init_from` run's kept weights, or the pre-trained backbone with the head
  their seed initialised: TaskKind.load_model) times their bit-packed mask (runs/<key>/mask.npz);
- a run that kept its selected weights (the full models other runs start from, graph.needs): those;
- IMP (algorithm 1), fine-tuned subnetworks (section 4.3) and TAMT's corpus masks, whose MLM head
  trains beside the scores, train weights the store keeps only where a run asks for them. Such a
  run is computed again in this process, in a scratch folder (never the store: reading the store
  never writes it), with a request that keeps them (request.Request.weights; an IMP level below the
  target: its weights after that level's last step, `keep_steps`) merged with what the stored run
  covered, and with the thread count the stored run recorded: on the same CPU code path that
  reproduces it bit for bit (docs/MEASUREMENTS.md). The recomputation is compared with the stored
  run (its scores and the checksums of its masks and predictions); where they differ (another CPU,
  another thread count) nothing is exported unless asked (`accept_recomputed`: the recomputed run
  is exported, masks and predictions included, and its card says so).

Every file read from the store is checked first as the store's one rule checks it (Run.serves: the
sizes and CRC-32s final.json recorded, the dependencies as the run read them), and the mask in force
must have the sparsity the run recorded; otherwise export refuses, naming the file.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import torch

from srnets_lib import methods, paths
from srnets_lib.data.load import load_task
from srnets_lib.engine import kinds, runtime
from srnets_lib.model import backbones, pruning
from srnets_lib.settings.config import RunConfig
from srnets_lib.settings.request import Request
from srnets_lib.store.result import RunResult
from srnets_lib.store import files
from srnets_lib.store.runs import Run
from srnets_lib.sweeps.graph import needs
from srnets_lib.training.fit import fit, recorded_threads
from srnets_lib.training.prepare import build_run, install_masks


class ExportRefused(ValueError):
    """What the store holds cannot be exported as it is (damaged, or not reproduced here)."""


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
            request: Request | None = None, say=print, accept_recomputed: bool = False,
            scratch: Path | None = None, levels: tuple[float, ...] = ()) -> Rebuilt:
    """The model of `config`'s finished run (or of its IMP `level`), computing the run again in a
    scratch folder where its weights were not kept (module docstring); `say` reports that, in one
    line. `scratch`: a folder kept for several exports (a temporary one otherwise), where one
    recomputation keeps the weights of every IMP level in `levels` for the exports that follow."""
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
    again = bool(trained) and not _kept(result, step)
    intact(store, result, step, reads_weights=bool(trained) and not again)
    weights, recomputed = "the weights it started from and its mask (it trains no weight)", None
    with tempfile.TemporaryDirectory(prefix="srnets-export-") as temporary:
        weights_from = files_from = store
        if again:
            exported = tuple(x for x in (*levels, level) if x is not None and abs(x - config.sparsity) > 1e-9)
            wanted = kept_too(request or Request(), result, exported, tuple(level_step(config, result, x)
                                                                            for x in exported))
            weights_from, result, recomputed = recompute(config, store, result, wanted, Path(scratch or temporary),
                                                         accept_recomputed, say)
            files_from = weights_from if recomputed else store
        if trained:
            load_kept(model, weights_from, step)
            weights = (f"its weights after step {step} (the end of level {level:g})" if step is not None
                       else "its selected weights") + (
                ", computed again here (the store had not kept them) with the thread count the stored run recorded: "
                "the recomputation reproduced its scores and files bit for bit" if again and not recomputed
                else ", computed again here (the store had not kept them)" if again else ", kept by the store")
        masked = pruning.masked_modules(model)
        if method.prunes:
            pruning.apply_masks(masked, files_from.masks(level), str(files_from.dir))
            check_sparsity(masked, result if level is None else result.level(level), files_from, level)
        predictions = files_from.predictions(level)
    model.eval()
    return Rebuilt(config, level, model, {n: m.binary_mask().cpu() for n, m in masked.items()}, result,
                   predictions, labels, kind, weights, recomputed, store.dir)


def intact(store: Run, result: RunResult, step: int | None, reads_weights: bool) -> None:
    """Refuse a run whose files export reads are not as final.json recorded them (Run.serves: its
    masks and predictions, the dependencies as it read them; its kept weights where they are read)."""
    kept = Request(weights=step is None, keep_steps=() if step is None else (step,))
    why = store.why_not() or (files.damage(store.dir, result, kept) if reads_weights else None)
    if why:
        raise ExportRefused(f"run {store.key} cannot be exported as the store holds it: {why}; nothing was "
                            "exported (the next sweep computes the run again)")


def check_sparsity(masked: dict, scores, source: Run, level: float | None) -> None:
    """The mask in force has the sparsity the run recorded (over the Transformer matrices), else
    the mask file is another run's (a copy from the wrong folder) and export refuses naming it."""
    found = pruning.sparsity_report(masked, backbones.is_transformer_matrix)["sparsity"]
    if scores is not None and abs(found - scores.sparsity) > 1e-6:
        name = paths.level_mask(level) if level is not None else paths.MASK
        raise ExportRefused(f"{source.file(name)}: its mask is {100 * found:.2f}% sparse, but run {source.key} "
                            f"recorded {100 * scores.sparsity:.2f}%; nothing was exported")


def level_step(config: RunConfig, result: RunResult, level: float) -> int:
    """The step an IMP level ends at (methods/imp.py: level k is the model after k S steps, the
    run stops at N S); a level the run does not yield is refused, naming those it does."""
    if not result.levels and not methods.get(config.method).levels:
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
    model = kind.load_model(kind.settings(config), data)
    if config.init_from is not None:
        store.of(config.init_from).load_weights(model, config.init_step)
    cls = methods.get(config.method)
    method = cls(cls.settings(config), None)  # declarations only: no schedule is read
    install_masks(model, method, store)
    return model, method


def _kept(result: RunResult, step: int | None) -> bool:
    return step in result.kept_steps if step is not None else result.weights


def kept_too(request: Request, stored: RunResult, levels: tuple[float, ...], steps: tuple[int, ...]) -> Request:
    """What a recomputation for export asks: `request`, what the stored run covered, its selected
    weights, the IMP `levels` exported scored and their weights (after `steps`) kept."""
    covered = stored.covered()
    scored = None if covered.levels is None else tuple(sorted({*covered.levels, *levels}))
    return replace(request.merge(covered), weights=True, levels=scored,
                   keep_steps=tuple(sorted({*stored.kept_steps, *steps})))


def recompute(config: RunConfig, store: Run, stored: RunResult, wanted: Request, scratch: Path, accept: bool,
              say) -> tuple[Run, RunResult, str | None]:
    """The run computed again in `scratch` for `wanted` (kept_too), its dependencies read from the
    store (a finished recomputation there that covers it is reused); (where it is, its result, how
    it differs from the stored result: None where it reproduced it). A difference is refused unless
    `accept`."""
    for dependency, read in needs(config, Request()):
        why = store.of(dependency).why_not(read)
        if why is not None:
            raise ExportRefused(f"run {store.key} trains weights the store did not keep, so export computes it "
                                f"again, but its dependency {dependency.key()} cannot serve it ({why}); compute "
                                "it first with `python -m srnets_lib sweep`")
    again = Run(config, store.root, scratch / config.key())
    if again.serves(wanted):
        result = again.result()
    else:
        threads = recorded_threads(stored)
        say(f"run {config.key()} ({config.method}) trains weights the store did not keep: computing it again here, "
            f"in a scratch folder ({stored.steps_run} steps, {threads or 'this process'} thread(s) as the stored run "
            "recorded), then comparing it with the stored run")
        with runtime.threads(threads):
            result = fit(build_run(config, again, wanted), wanted)
    changed = stored.differences(result)
    if not changed:
        return again, result, None
    said = "; ".join(changed[:6]) + (" ..." if len(changed) > 6 else "")
    if not accept:
        raise ExportRefused(f"run {config.key()} computed again here differs from the stored run ({said}; stored "
                            f"on {stored.execution}); nothing was exported: `--accept-recomputed` exports the "
                            "recomputed run (its card says so)")
    return again, result, (f"the run was computed again here and differs from the stored one ({said}); this folder "
                           "is the recomputed run (--accept-recomputed), its masks and scores included")


def load_kept(model: torch.nn.Module, store: Run, step: int | None) -> None:
    """Load the run's kept tensors (those after `step` steps, or the selected ones) into `model`;
    mask scores kept beside them are left out: the mask file holds the mask they define."""
    path = store.file(paths.step_weights(step) if step is not None else paths.WEIGHTS)
    backbones.copy_into(model, files.read_weights(path, dict(model.named_parameters()), store.key, ("mask_scores",)))
    for module in pruning.masked_modules(model).values():
        module.invalidate()
