"""A finished run computed again beside its stored result (runs/_recompute/<key>/, Run.recomputation),
then moved in: final.json is removed first and moved last, so a reader sees the stored result, then
none, then the new one, and a move that was interrupted is completed by the next claim of the run
(training/fit.py holds its lock). A resumed computation keeps the thread count it began with."""

from __future__ import annotations

import os

from srnets_lib import paths
from srnets_lib.store import files
from srnets_lib.store.result import RunResult


def move_in(run, again) -> RunResult:
    """The finished recomputation `again` (a Run) moved into `run`'s folder, its attempts after
    the stored run's; the new result."""
    run.file(paths.FINAL).unlink(missing_ok=True)
    for path in files.artifacts_of(run.dir):
        path.unlink()
    attempts = [r.file(paths.ATTEMPTS) for r in (run, again)]
    files.atomic_write(again.file(paths.ATTEMPTS), "".join(p.read_text() for p in attempts if p.is_file()))
    for path in sorted(again.dir.iterdir()):
        if path.name not in (paths.FINAL, paths.LOCK):
            os.replace(path, run.file(path.name))
    run.file(paths.CHECKPOINT).unlink(missing_ok=True)
    os.replace(again.file(paths.FINAL), run.file(paths.FINAL))
    again.dir.rmdir()
    return run.result()


def started_threads(run) -> int | None:
    """The CPU thread count `run`'s computation began with, where a resume point continues it (its
    attempts.jsonl); None: nothing to continue."""
    if not run.file(paths.CHECKPOINT).is_file():
        return None
    begun = [row for row in files.read_rows(run.file(paths.ATTEMPTS)) if row.get("resumed_at") is None]
    return begun[-1].get("threads") if begun else None
