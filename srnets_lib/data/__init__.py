"""Task data: synthetic (the embedded default), the hub, or the original local files.

With `data.source: hub` the splits the hub lacks in the paper's form still come from files
(hub.py); relative `data.path` values resolve against the project root (local.data_folder).
"""

from __future__ import annotations

import functools

from srnets_lib.settings.config import DataConfig
from srnets_lib.data.encode import split_fingerprint
from srnets_lib.data.splits import Split, TaskData
from srnets_lib.data.squad import SquadData
from srnets_lib.data.tasks import TASKS, spec

GLUE_TASKS = ("cola", "sst2", "rte", "mrpc", "stsb", "mnli")  # TAMT's GLUE tasks (data/glue.py)


def load_task(task: str, data: DataConfig) -> TaskData | SquadData:
    """The splits of `task` as `data` describes them, truncated to the configured sizes (SQuAD:
    its first train_size and dev_size questions)."""
    if task == "corpus":
        from srnets_lib.data.corpus import load_corpus

        return load_corpus(data)
    if task in GLUE_TASKS + ("squad",) and data.source == "synthetic":
        raise ValueError(f"task {task} has no synthetic version: set data.source to hub or local")
    if task == "squad":
        from srnets_lib.data.squad import load_squad

        questions = load_squad(data.source, data.path, data.train_size, data.check_sizes)
        questions.dev = questions.dev[:data.dev_size]
        return questions
    if task in GLUE_TASKS:
        from srnets_lib.data.glue import load_glue

        loaded = load_glue(task, data.source, data.path, data.train_size, data.check_sizes)
        loaded.dev = loaded.dev.head(data.dev_size)
        return loaded
    if data.source == "synthetic":
        from srnets_lib.data.synthetic import make_task

        return make_task(task, data.train_size, data.dev_size, data.ood_size,
                         data.bias_strength, data.data_seed, data.ood_train,
                         data.ambiguity, data.member_skew, data.test_size)
    if data.source == "local":
        from srnets_lib.data.local import load_local

        loaded = load_local(task, data.path, data.ood_train, data.train_size, data.check_sizes)
    else:
        from srnets_lib.data.hub import load_hub

        # HANS, PAWS-qqp, FEVER: files under data.path
        loaded = load_hub(task, data.path, data.ood_train, data.train_size, data.check_sizes)
    loaded.dev = loaded.dev.head(data.dev_size)
    loaded.ood = {k: v.head(data.ood_size) for k, v in loaded.ood.items()}
    return loaded


def fingerprints(data: TaskData | SquadData) -> dict[str, str]:
    """Split name -> fingerprint of its texts and labels: what a run read, recorded in its result."""
    if isinstance(data, SquadData):
        return data.fingerprints()
    return {name: split_fingerprint(split) for name, split in [("train", data.train), *data.eval_splits.items()]}


@functools.lru_cache(maxsize=32)
def _fingerprints_cached(task: str, data_json: str) -> tuple:
    return tuple(sorted(fingerprints(load_task(task, DataConfig.model_validate_json(data_json))).items()))


def current_fingerprints(task: str, data: DataConfig) -> dict[str, str]:
    """The fingerprints of the data as it reads now (once per process and setting): a stored run
    whose data changed since is computed again."""
    return dict(_fingerprints_cached(task, data.model_dump_json()))


__all__ = ["Split", "SquadData", "TaskData", "TASKS", "current_fingerprints", "fingerprints", "load_task", "spec"]
