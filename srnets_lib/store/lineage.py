"""What a run read of the runs it depends on, as it read it: the CRC-32 of each file (the weights it
starts from, a fixed subnetwork's mask, the confreg teacher's weights), recorded in its final.json
(`reads`). A dependency computed again since, whose files differ, makes the run stale: the pages
show it so, and the next sweep computes it again (store/runs.py, Run.serves)."""

from __future__ import annotations

from pathlib import Path

from srnets_lib import paths
from srnets_lib.settings.config import RunConfig
from srnets_lib.store import files


def dependency_reads(config: RunConfig) -> list[tuple[RunConfig, str]]:
    """The files a run reads of its dependencies: the weights it starts from (after init_step steps,
    section 5.1), the mask of a subnetwork fine-tuned in isolation (one IMP level's), the confreg
    teacher's weights (appendix eq. 4)."""
    reads = []
    if config.init_from is not None:
        reads.append((config.init_from, paths.step_weights(config.init_step) if config.init_step is not None
                      else paths.WEIGHTS))
    if config.mask_from is not None:
        reads.append((config.mask_from, paths.level_mask(config.mask_level) if config.mask_level is not None
                      else paths.MASK))
    if config.teacher is not None:
        reads.append((config.teacher, paths.WEIGHTS))
    return reads


def record_reads(config: RunConfig, root: Path) -> dict[str, dict[str, str]]:
    """What run `config` reads of its dependencies in the store `root`, as it reads it (for final.json
    `reads`): each file's CRC-32 as its run's final.json recorded it, else (a store written before)
    computed."""
    recorded: dict[str, dict[str, str]] = {}
    for dependency, name in dependency_reads(config):
        folder = paths.run_dir(dependency.key(), root)
        crc = (files.recorded_checksums(folder / paths.FINAL) or {}).get(name) or files.crc32(folder / name)
        recorded.setdefault(dependency.key(), {})[name] = crc
    return recorded


def changed_dependency(root: Path, reads: dict[str, dict[str, str]]) -> str | None:
    """None if every dependency file a result read (final.json `reads`) is as it read it, by its
    dependency's final.json, else which changed (the dependency computed again since)."""
    for key, names in reads.items():
        recorded = files.recorded_checksums(paths.run_dir(key, root) / paths.FINAL)
        for name, crc in names.items():
            if recorded is None:
                return f"stale: its dependency {key} has no finished result now (it read its {name})"
            if recorded and name not in recorded:
                return f"stale: its dependency {key} no longer keeps the {name} it read"
            if recorded.get(name, crc) != crc:
                return (f"stale: its dependency {key} was computed again since it read its {name} (CRC-32 "
                        f"{crc}, now {recorded[name]})")
    return None
