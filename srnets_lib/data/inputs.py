"""Every input a run reads, named before any is read: the files under the data folder (each loader
declares its own: local.py, glue.py, squad.py, corpus.py), the hub datasets, and the authors' bias
predictions (bias.py). The pre-start check of everything that starts runs (a sweep, `run`,
`evaluate`, a notebook that computes: sweeps/executors.check_inputs): before the first step of any
run, every missing input is named with the paths looked at and where to get it, and every file
that is not the published one (its labelled rows counted as its loader counts them, unless
data.check_sizes: false) with its rows and the published count, all in one refusal; a hint never
offers a setting that would break another of the run's (the hub's QQP lacks the pair ids the
authors' predictions are keyed by).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from srnets_lib.data import bias, corpus, glue, hub, local, squad
from srnets_lib.data.local import DataFileError
from srnets_lib.data.tasks import spec


@dataclass(frozen=True)
class Published:
    """A file's published labelled rows (appendix table 1; data/tasks.py for Part II) and how its
    loader counts them (`count`: its reader, one pass over the file)."""

    rows: tuple[int, ...]
    count: Callable[[Path], int]

    def problem(self, path: Path) -> str | None:
        """Why the file at `path` is not the published one (its rows, or its reader's refusal), or None."""
        try:
            local.check_rows(self.count(path), self.rows, path)
        except DataFileError as err:
            return str(err)
        return None


@dataclass(frozen=True)
class FileNeed:
    """A file a run reads: found at the first of `candidates` that exists (its aliases); where
    `published` is set (data.check_sizes), its rows are counted before the first step."""

    dataset: str
    candidates: tuple[Path, ...]
    source: str  # where to get it
    ood: str | None = None  # the OOD set it is (an optional one may be skipped: execution.skip_ood)
    published: Published | None = None

    def found(self) -> Path | None:
        return next((p for p in self.candidates if p.is_file()), None)

    def missing(self) -> bool:
        return self.found() is None

    def line(self) -> str:
        also = f" (nor {', '.join(map(str, self.candidates[1:]))})" if self.candidates[1:] else ""
        return f"{self.dataset}: {self.candidates[0]} not found{also}; get it from {self.source}"


@dataclass(frozen=True)
class HubNeed:
    """A dataset a run reads from the Hugging Face hub (or $SRNETS_HUB_MIRROR's copy of it)."""

    hub_id: str
    config: str
    splits: tuple[str, ...]  # the splits read

    def problem(self, reach: bool) -> str | None:
        """Why it cannot be read, or None. The mirror's files are always checked; the hub itself only
        with `reach` (a sweep about to start: it fetches the dataset's metadata)."""
        try:
            mirrored = hub.mirror_files(self.hub_id, self.config)
            if mirrored is not None:
                lacking = [s for s in self.splits if s not in mirrored]
                if lacking:
                    folder = Path(next(iter(mirrored.values()))[0]).parent
                    return (f"{self.hub_id} ({self.config}): no {', '.join(lacking)} split in {folder} (${hub.MIRROR}); "
                            f"its files are {', '.join(f'{s}-*.parquet' for s in self.splits)}")
            elif reach:
                from datasets import load_dataset_builder

                load_dataset_builder(self.hub_id, self.config)
        except DataFileError as err:
            return str(err)
        except Exception as err:  # offline, no such dataset: one line
            first = (str(err).strip().splitlines() or [type(err).__name__])[0]
            return (f"{self.hub_id} ({self.config}): not reachable on the hub ({type(err).__name__}: {first}); "
                    f"offline, copy it and set ${hub.MIRROR} (README), or read local files (data.source: local)")
        return None


def _paper(config) -> list[FileNeed | HubNeed]:
    """The paper's tasks: their files (local.py; with data.source hub, the splits the hub lacks),
    the hub datasets, and the authors' bias predictions where the loss reads them."""
    data, task = config.data, config.task
    # the hub would serve the run only where it does not read the authors' predictions of QQP
    hub_ok = not (task == "paraphrase" and config.bias_model == "authors")
    folder = local.data_folder(data.path)
    found: list[FileNeed | HubNeed] = [FileNeed(dataset, tuple(local.candidates(folder / name)),
                                                local.hint(dataset, hub_ok), ood, _paper_rows(name, data.check_sizes))
                                       for dataset, name, ood in local.expected_files(task, data.source, data.ood_train)]
    found += [HubNeed(*d) for d in hub.task_datasets(task, data.ood_train)] * (data.source == "hub")
    return found + _bias_predictions(config)


def _paper_rows(name: str, check: bool) -> Published | None:
    """The published rows of the paper's file `name` (under the data folder), counted by its reader."""
    if not check or name not in local.PUBLISHED_ROWS:
        return None
    return Published(local.PUBLISHED_ROWS[name], lambda path: len(local.READERS[name](path, "count")))


def _glue_rows(task: str, path: Path) -> Published:
    return Published(glue.published_rows(task, path.name), lambda found: len(glue.read_file(task, found)))


def _squad_rows(task: str, path: Path) -> Published:
    split = next(name for name, file in squad.SQUAD_FILES.items() if file == path.name)
    return Published((squad.SQUAD_ROWS[split],), lambda found: len(squad.read_squad_json(found)))


def _transfer(files, datasets, source: str, rows=None):
    """A Part II family's inputs: its hub datasets (data.source hub) or its files, from `files(task,
    data.path)` and `datasets(task)`, named with where to get them (`source`); `rows(task, path)`: a
    file's Published rows, where its loader checks them."""
    def needs(config) -> list[FileNeed | HubNeed]:
        if config.data.source == "hub":
            return [HubNeed(*d) for d in datasets(config.task)]
        return [FileNeed(dataset, (path,), source, None,
                         rows(config.task, path) if rows and config.data.check_sizes else None)
                for dataset, path in files(config.task, config.data.path)]
    return needs


FAMILIES = {  # TaskSpec.family -> what its runs read
    "paper": _paper,
    "glue": _transfer(glue.expected_files, glue.hub_datasets, "GLUE (gluebenchmark.com/tasks), or use data.source=hub",
                      _glue_rows),
    "squad": _transfer(squad.expected_files, squad.hub_datasets,
                       "rajpurkar.github.io/SQuAD-explorer (train-v1.1.json, dev-v1.1.json), or use data.source=hub",
                       _squad_rows),
    "corpus": _transfer(corpus.expected_files, corpus.hub_datasets, local.hint("WikiText-103")),
}


def needs(config) -> list[FileNeed | HubNeed]:
    """What one run (not its dependencies) reads from outside the run store: its family's inputs."""
    if config.data.source == "synthetic":
        return []
    return FAMILIES[spec(config.task).family](config)


def _bias_predictions(config) -> list[FileNeed]:
    """The authors' bias predictions, where the run's loss reads bias probabilities from them."""
    if config.loss not in bias.NEEDS_BIAS or config.bias_model != "authors":
        return []
    looked = bias.authors_files(config.task, config.bias_path, config.data.path)
    return [FileNeed("the authors' bias predictions", tuple(looked),
                     f"{bias.AUTHORS_SOURCE} (next to data/, as in their repository), or set bias_model: ours")]


def _walk(configs) -> list:
    """`configs` and every run they depend on, each once."""
    seen: dict[str, object] = {}

    def visit(config):
        for dependency in config.dependencies():
            visit(dependency)
        seen.setdefault(config.key(), config)

    for config in configs:
        visit(config)
    return list(seen.values())


def missing(configs, skip_ood=(), reach: bool = False) -> list[str]:
    """One line per input the runs of `configs` (and their dependencies) lack or that is not the
    published file, each once: a file that exists is counted (one pass over it, once however many
    runs read it; data.check_sizes: false skips it) and named with its rows and the published
    count, or its reader's refusal. A missing optional OOD set (local.OPTIONAL_OOD) is allowed where
    `skip_ood` names it: its runs record it as missing and `python -m srnets_lib evaluate` scores
    them on it once it exists. The hub is asked only with `reach`."""
    lines: list[str] = []
    counted: dict[Path, str | None] = {}
    for config in _walk(configs):
        for need in needs(config):
            line = _problem(need, skip_ood, reach, counted)
            if line and line not in lines:
                lines.append(line)
    return lines


def _problem(need: FileNeed | HubNeed, skip_ood, reach: bool, counted: dict[Path, str | None]) -> str | None:
    """Why `need` cannot be read as published, or None; `counted`: the files already counted."""
    if isinstance(need, HubNeed):
        return need.problem(reach)
    path = need.found()
    if path is not None:
        if need.published is not None and path not in counted:
            counted[path] = need.published.problem(path)
        return counted.get(path) if need.published is not None else None
    if need.ood in local.OPTIONAL_OOD and need.ood in skip_ood:
        return None
    return need.line() + (f"; or start without it: --set skip_ood=[{need.ood}] (python -m srnets_lib "
                          "evaluate adds it to the finished runs later)" if need.ood in local.OPTIONAL_OOD else "")


def hub_datasets(configs) -> list[str]:
    """The hub datasets the runs of `configs` read, as `plan` lists them."""
    found = {(need.hub_id, need.config) for config in _walk(configs) for need in needs(config)
             if isinstance(need, HubNeed)}
    return sorted(f"{hub_id} ({config})" for hub_id, config in found)


__all__ = ["FileNeed", "HubNeed", "Published", "hub_datasets", "missing", "needs"]
