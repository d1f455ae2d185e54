"""`python -m srnets_lib evaluate`: score finished runs on the OOD sets they lack, without training.

A run evaluated without one of its task's OOD sets (its file was missing and the sweep was told
to skip it: execution.skip_ood; PAWS-qqp, which users generate) records it in `ood_missing`.
Once the file exists, the model of the run's selected checkpoint is rebuilt from what the store
kept and scored on the new set; final.json gains the score and the set's fingerprint, and
predictions.npz each example's prediction on it:
- a run that kept its weights (the full models other runs start from): those weights, and its
  mask where it has one;
- a pruning run that trains no weight (mask training, OMP, random pruning): the weights it
  started from (its init run's, kept because it read them, or the pre-trained ones, with the
  classifier its seed initialised) and its saved mask.
Runs that train weights and did not keep them (IMP, fine-tuned subnetworks, full models no run
starts from) cannot be rebuilt: they are listed, with why.
"""

from __future__ import annotations

from pathlib import Path

from srnets_lib import paths
from srnets_lib.model import pruning
from srnets_lib.training.prepare import TrainingRun, build_run
from srnets_lib.settings.config import RunConfig
from srnets_lib.data.load import fingerprints
from srnets_lib.settings.request import Request
from srnets_lib.store.result import RunResult
from srnets_lib.store.runs import Run


def restore(run: TrainingRun, store: Run, result: RunResult) -> str | None:
    """Load the selected checkpoint's model (of the run whose result is `result`) into
    `run.model`; None, or why it cannot be rebuilt."""
    if result.levels:
        return "an IMP run: its levels' weights were not kept"
    untrained = all(name.endswith("mask_scores") for name in run.trainable)
    if not (result.weights or untrained):
        return "it trains weights and did not keep them"
    if result.weights:
        store.load_weights(run.model)
    masked = pruning.masked_modules(run.model)
    if masked and store.file(paths.MASK).is_file():
        pruning.apply_masks(masked, store.masks(), str(store.dir))
    return None


def rescore(config: RunConfig, root: Path | None = None) -> tuple[list[str], str | None]:
    """Score the finished run of `config` on the OOD sets its data has now and its result lacks:
    (the sets scored, None) or (the sets it lacks, why they could not be scored)."""
    store = Run(config, root)
    result = store.result()
    run = build_run(config, store, Request())
    new = [name for name in run.evaluator.ood if name not in result.ood]
    if not new:
        return [], None
    why = restore(run, store, result)
    if why is not None:
        return new, why
    scores = run.evaluator.scores(run.model, tuple(new))
    read = fingerprints(run.data)
    updated = result.model_copy(update={
        "ood": {**result.ood, **scores},
        "ood_missing": {k: v for k, v in result.ood_missing.items() if k not in scores},
        "data_fingerprint": {**result.data_fingerprint, **{k: read[k] for k in scores}}})
    predictions = {**(store.predictions() or {}),
                   **{k: v for k, v in run.evaluator.predictions.items() if k in scores}}
    with store.claim(wait=True):
        if predictions:  # before final.json: a run reads as finished only with both written
            store.save_predictions(predictions)
        store.finish(updated)
    return new, None


def score_all(configs: list[RunConfig]) -> int:
    """Every finished run of `configs` scored on the OOD sets it lacks where possible (`evaluate`);
    its exit status: 1 where a run cannot be without training."""
    done = [config for config in configs if Run(config).done]
    scored, impossible = 0, []
    for config in done:
        new, why = rescore(config)
        if new and why is None:
            scored += 1
            print(f"{config.key()}: scored on {', '.join(new)}")
        elif new:
            impossible.append(f"{config.key()} lacks {', '.join(new)}: {why}")
    print(f"evaluate: {scored} of {len(done)} finished runs scored on sets they lacked; "
          f"{len(impossible)} cannot be without training" + "".join(f"\n- {line}" for line in impossible))
    if impossible:
        print("(compute those again: remove their final.json and re-run the sweep)")
    return 1 if impossible else 0
