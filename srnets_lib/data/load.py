"""A task's splits as its DataConfig describes them, from the loader of its family (data/tasks.py,
TaskSpec.family): the paper's three tasks (synthetic, the original files, or the hub for the splits
it has: synthetic.py, local.py, hub.py), TAMT's GLUE tasks (glue.py), SQuAD v1.1 (squad.py) and the
corpus (corpus.py); and the fingerprints of what a run read."""

from __future__ import annotations

import functools

import numpy as np
import torch

from srnets_lib.data import corpus, glue, hub, local, squad, synthetic
from srnets_lib.data.encode import split_fingerprint
from srnets_lib.data.splits import TaskData
from srnets_lib.data.squad import SquadData
from srnets_lib.data.tasks import spec


def _paper(task: str, data) -> TaskData:
    """The paper's tasks: synthetic (the embedded default), the original files, or the hub with the
    splits it lacks in the paper's form read from files (HANS, PAWS-qqp, FEVER)."""
    if data.source == "synthetic":
        return synthetic.make_task(task, data.train_size, data.dev_size, data.ood_size, data.bias_strength,
                                   data.data_seed, data.ood_train, data.ambiguity, data.member_skew, data.test_size)
    reader = local.load_local if data.source == "local" else hub.load_hub
    loaded = reader(task, data.path, data.ood_train, data.train_size, data.check_sizes)
    loaded.ood = {k: v.head(data.ood_size) for k, v in loaded.ood.items()}
    return loaded


def _glue(task: str, data) -> TaskData:
    return glue.load_glue(task, data.source, data.path, data.train_size, data.check_sizes, data.mnli_dev)


def _squad(task: str, data) -> SquadData:
    """Its first train_size questions (training keeps those whose answer is found) and dev questions."""
    return squad.load_squad(data.source, data.path, data.train_size, data.check_sizes)


def _corpus(task: str, data) -> TaskData:
    return corpus.load_corpus(data)


LOADERS = {"paper": _paper, "glue": _glue, "squad": _squad, "corpus": _corpus}
REAL_ONLY = ("glue", "squad")  # families without a synthetic version


def load_task(task: str, data) -> TaskData | SquadData:
    """The splits of `task` as `data` (a DataConfig) describes them, dev truncated to its size, the
    training split reduced to data.subset_size examples (SQuAD's are windows: engine/kinds/span.py
    draws them)."""
    family = spec(task).family
    if family in REAL_ONLY and data.source == "synthetic":
        raise ValueError(f"task {task} has no synthetic version: set data.source to hub or local")
    loaded = LOADERS[family](task, data)
    if family != "corpus":  # a corpus counts dev_size in blocks (corpus.blocks)
        loaded.dev = loaded.dev[:data.dev_size] if isinstance(loaded, SquadData) else loaded.dev.head(data.dev_size)
    if data.subset_size is not None and isinstance(loaded, TaskData):
        index = random_subset(len(loaded.train), data.subset_size, data.subset_seed, f"{task}'s training split")
        loaded.train = loaded.train.subset(index, f"a random subset of {data.subset_size} training examples "
                                                  f"(seed {data.subset_seed})")
        loaded.description += "; " + loaded.train.notes[-1]
    return loaded


def random_subset(rows: int, size: int, seed: int, what: str) -> np.ndarray:
    """The first `size` of a random permutation of `rows` drawn with `seed`: the indices torch's
    random_split(dataset, [size, rows - size], generator=torch.Generator().manual_seed(seed)) puts
    in its first part (imp_and_fine_tune/glue_trans_few.py:880 of llyx97/TAMT), in its order."""
    if size > rows:
        raise ValueError(f"data.subset_size={size}: {what} has only {rows} examples")
    return torch.randperm(rows, generator=torch.Generator().manual_seed(seed))[:size].numpy()


def fingerprints(data: TaskData | SquadData) -> dict[str, str]:
    """Split name -> fingerprint of its texts and labels: what a run read, recorded in its result."""
    if isinstance(data, SquadData):
        return data.fingerprints()
    return {name: split_fingerprint(split) for name, split in [("train", data.train), *data.eval_splits.items()]}


@functools.lru_cache(maxsize=32)
def _fingerprints_cached(task: str, data) -> tuple:
    return tuple(sorted(fingerprints(load_task(task, data)).items()))


def current_fingerprints(task: str, data) -> dict[str, str]:
    """The fingerprints of the data as it reads now (once per process and setting): a stored run
    whose data changed since is computed again."""
    return dict(_fingerprints_cached(task, data))
