"""A finished run computed again (asked for more than it kept, a damaged file, a dependency changed)
never loses its stored result on the way: the recomputation goes beside it (runs/_recompute/<key>/)
and is moved in once finished, so an interruption, as Ctrl-C in Jupyter, leaves every finished run
finished. It computes with the thread count the stored run recorded, which on one CPU reproduces its
bits; a dependency whose files did change makes the runs built on it stale (they record the CRC-32
of what they read), shown so on the pages and computed again by the next sweep."""

import json

import pytest
import torch

from srnets_lib import paths
from srnets_lib.book.sections import Point, gather
from srnets_lib.settings.config import DataConfig, RunConfig
from srnets_lib.settings.request import Request
from srnets_lib.store.runs import Run
from srnets_lib.sweeps.executors import LocalExecutor, execute
from srnets_lib.sweeps.graph import RunGraph
from srnets_lib.training import fit


def tiny(**fields) -> RunConfig:
    settings = dict(task="nli", backbone="tiny", epochs=2, max_length=32, batch_size=8, eval_interval=4,
                    data=DataConfig(train_size=48, dev_size=16, ood_size=16))
    return RunConfig(**{**settings, **fields})


def files_of(run: Run) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(run.dir.iterdir()) if p.is_file()}


@pytest.fixture
def threads():
    """The process's thread count, restored after the test."""
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def test_an_interrupted_recomputation_leaves_the_finished_run_finished_then_resumes(store, monkeypatch, capsys):
    full = tiny()
    mask = tiny(method="mask", sparsity=0.5, init_from=full)
    execute(mask)  # the full model keeps its weights for the mask run
    before, mask_before = files_of(Run(full)), files_of(Run(mask))
    more = Request(keep_steps=(4,), weights=True)  # a page asks the full model for more than it kept

    real = fit.Loop.checkpoint

    def interrupted(loop, at):  # Ctrl-C in Jupyter, once the recomputation has a resume point
        real(loop, at)
        if loop.store.file(paths.CHECKPOINT).is_file():
            raise KeyboardInterrupt

    monkeypatch.setenv("SRNETS_CHECKPOINT_SECONDS", "0")
    monkeypatch.setattr(fit.Loop, "checkpoint", interrupted)
    with pytest.raises(KeyboardInterrupt):
        execute(full, more)
    again = Run(full).recomputation()
    assert again.file(paths.CHECKPOINT).is_file() and not again.done
    assert files_of(Run(full)) == before and Run(full).serves()  # the stored run, as it was
    assert Run(mask).serves() and files_of(Run(mask)) == mask_before
    assert not gather.missing([Point("mask", "nli", 1, 0.5, mask)])

    monkeypatch.setattr(fit.Loop, "checkpoint", real)
    capsys.readouterr()
    execute(full, more)  # resumes the recomputation from its checkpoint, then moves it in
    assert "the same scores and files as the stored result" in capsys.readouterr().err
    assert Run(full).serves(more) and not again.dir.exists()
    assert {k: v for k, v in files_of(Run(full)).items() if k in before and k.endswith((".npz", ".safetensors"))} == \
        {k: v for k, v in before.items() if k.endswith((".npz", ".safetensors"))}
    assert Run(mask).serves()


def test_a_recomputation_uses_the_thread_count_the_run_recorded_and_reproduces_its_bits(store, threads, capsys):
    """Matrix products split their sums by thread: the same run on 1 and on 2 threads differs in its
    last bits. The stored run computed on 1 thread, asked for more in a process of 2, is computed
    again on 1 and reproduces its weights, so the mask trained from them stays valid."""
    full = tiny()
    mask = tiny(method="mask", sparsity=0.5, init_from=full)
    torch.set_num_threads(1)
    execute(mask)
    stored = Run(full).result()
    assert stored.execution["threads"] == 1
    torch.set_num_threads(2)
    execute(full, Request(keep_steps=(4,), weights=True))
    assert "the same scores and files as the stored result" in capsys.readouterr().err
    again = Run(full).result()
    assert again.files[paths.WEIGHTS] == stored.files[paths.WEIGHTS] and again.execution["threads"] == 1
    assert Run(mask).serves(Request())
    assert torch.get_num_threads() == 2  # the process's own count, back


def test_a_dependency_computed_again_differently_makes_the_runs_built_on_it_stale(store, threads, capsys):
    """The full model's record is made to say it computed on 2 threads while it computed on 1, as a
    store computed elsewhere would: computed again for a longer request it then differs, which is
    said, and the mask run trained from its old weights is stale until the next sweep computes it."""
    full = tiny()
    mask = tiny(method="mask", sparsity=0.5, init_from=full)
    torch.set_num_threads(1)
    execute(mask)
    read = Run(mask).result().reads
    assert read == {full.key(): {paths.WEIGHTS: Run(full).result().files[paths.WEIGHTS].crc32}}
    final = Run(full).file(paths.FINAL)
    record = json.loads(final.read_text())
    record["execution"]["threads"] = 2
    final.write_text(json.dumps(record))

    graph = RunGraph()
    graph.add(mask)
    graph.add(full, Request(keep_steps=(4,), weights=True))
    outcomes = LocalExecutor(progress=False).run(graph, store)
    said = capsys.readouterr().err
    assert f"run {full.key()} computed again: it differs from the stored result" in said
    assert "the runs built on it are stale" in said
    assert all(o.ok for o in outcomes) and {o.job for o in outcomes} == {full.key(), mask.key()}
    assert Run(mask).serves()  # the sweep computed it again from the new weights
    assert Run(mask).result().reads[full.key()][paths.WEIGHTS] == Run(full).result().files[paths.WEIGHTS].crc32


def test_a_stale_run_is_shown_as_stale_on_the_pages(store, threads):
    full = tiny()
    mask = tiny(method="mask", sparsity=0.5, init_from=full)
    execute(mask)
    final = Run(mask).file(paths.FINAL)
    record = json.loads(final.read_text())
    record["reads"][full.key()][paths.WEIGHTS] = "00000000"  # it read other weights than the stored ones
    final.write_text(json.dumps(record))
    point = Point("mask", "nli", 1, 0.5, mask)
    assert gather.missing([point]) == [point]
    why = gather.why_missing(mask)
    assert why.startswith(f"stale: its dependency {full.key()} was computed again since it read its "
                          f"{paths.WEIGHTS}") and why.endswith("the next sweep computes it again")
