"""Sweeps (issue: Ray, faults): the Ray and in-process executors give the same run store, a
failing point does not stop independent ones, and a sweep killed mid-way finishes on re-run
without recomputing what was done. All on the tiny model, in real subprocesses."""

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from srnets_lib.settings import params
from srnets_lib import paths
from srnets_lib.sweeps import sweep
from srnets_lib.model.pruning import load_masks
from srnets_lib.store import locks
from srnets_lib.book import runs as book_runs, sections

NOTEBOOK = "book/sec4_4.ipynb"  # full std/poe, mask std/poe on theta_pt, mask poe on theta_ft


def run_sweep(store, params, *extra, executor="local"):
    env = {**os.environ, "SRNETS_RUNS": str(store), "OMP_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "srnets_lib", "sweep", NOTEBOOK, "--params", str(params),
                           "--executor", executor, *extra], capture_output=True, text=True, env=env, timeout=600)


def finished(store) -> dict[str, dict]:
    """Each finished run's result, without what differs between two computations of it: its time,
    which process computed it, and its files' checksums (a zip file records when it was written)."""
    out = {}
    for path in store.glob("*/final.json"):
        final = json.loads(path.read_text())
        final.pop("seconds"), final.pop("files")
        final["execution"] = {k: v for k, v in final["execution"].items() if k not in ("host", "pid", "node")}
        out[path.parent.name] = final
    return out


def runs(tiny_params):
    graph, _ = book_runs.of_notebooks([NOTEBOOK], params.load(tiny_params))
    return list(graph)


def test_the_graph_lists_each_run_once_after_its_dependencies_with_what_they_read(tiny_params):
    nodes = runs(tiny_params)
    keys = [n.key for n in nodes]
    assert len(keys) == len(set(keys))
    for position, node in enumerate(nodes):
        for dependency in node.config.dependencies():
            assert keys.index(dependency.key()) < position
    # the fine-tuned models that masks start from, on this page or any other, keep their weights;
    # nothing else does (a run shared by two pages is asked for what both ask of it)
    book = book_runs.book_graph(params.load(tiny_params))
    readers = {n.config.init_from.key() for n in book if n.config.init_from is not None}
    assert {n.key for n in nodes if n.request.weights} == readers & set(keys)
    assert {n.config.init_from.key() for n in nodes if n.config.init_from is not None} < readers & set(keys)


def test_ray_and_local_executors_give_identical_stores(tmp_path, tiny_params):
    pytest.importorskip("ray")
    local, ray = tmp_path / "local", tmp_path / "ray"
    assert run_sweep(local, tiny_params).returncode == 0
    out = run_sweep(ray, tiny_params, executor="ray")
    assert out.returncode == 0, out.stderr[-2000:]
    a, b = finished(local), finished(ray)
    assert a and a == b
    for key in a:
        if (local / key / paths.MASK).exists():
            masks_a, masks_b = load_masks(local / key / paths.MASK), load_masks(ray / key / paths.MASK)
            assert all(np.array_equal(masks_a[n].numpy(), masks_b[n].numpy()) for n in masks_a)


def test_a_failing_point_is_reported_and_independent_runs_finish(store, tiny_params):
    # a bias-model word-vector file that does not exist (yet): every poe run fails at run time
    vectors = store.parent / "vectors.vec"
    out = run_sweep(store, tiny_params, "--set", f"word_vectors={vectors}")
    assert out.returncode == 1
    assert "FAILED" in out.stderr + out.stdout and str(vectors) in out.stderr + out.stdout
    done = finished(store)
    assert {f["loss"] for f in done.values()} == {"std"} and len(done) == 2  # full std, mask std on theta_pt
    assert not any(store.glob("*/.lock"))
    # each failure is kept beside its run, and a page that only gathers shows it as failed
    records = [json.loads(p.read_text()) for p in store.glob("*/failed.json")]
    assert len(records) == 3 and all(str(vectors) in r["error"] for r in records)
    resolved = params.write_resolved(params.load(tiny_params, [f"word_vectors={vectors}"]), store.parent / "resolved.yaml")
    from srnets_lib.book import page as book_page

    page = book_page.load("sec4_4", params_file=str(resolved), seeds="[1]", sparsity="0.5", compute=False)
    note = page.missing_note()
    assert note.count(" failed (") == 3 and str(vectors) in note
    # once the file exists, the next sweep computes them and their records go
    vectors.write_text("2 3\nthe 0.1 0.2 0.3\ndoctor 0.3 0.1 0.0\n")
    again = run_sweep(store, tiny_params, "--set", f"word_vectors={vectors}")
    assert again.returncode == 0, again.stderr[-2000:]
    assert "3 computed, 0 failed" in again.stdout and not list(store.glob("*/failed.json"))


def test_a_ray_worker_that_dies_is_retried_and_its_run_resumes(store, tiny_params):
    """A killed worker (out of memory, a lost node) is transient: Ray runs the task again and the
    run takes over its dead lock; the sweep ends with nothing failed."""
    pytest.importorskip("ray")
    env = {**os.environ, "SRNETS_RUNS": str(store), "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "srnets_lib", "sweep", NOTEBOOK, "--params", str(tiny_params),
                             "--executor", "ray"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)
    killed, deadline = None, time.time() + 300
    while killed is None and proc.poll() is None and time.time() < deadline:
        for lock in store.glob("*/.lock"):
            try:
                holder = locks.Holder.parse(lock.read_text())  # host:pid ray-node=... ray-task=...
            except FileNotFoundError:  # just finished
                continue
            if holder is not None:
                os.kill(holder.pid, signal.SIGKILL)  # the Ray worker computing it
                killed = lock.parent.name
                break
        time.sleep(0.01)
    out, _ = proc.communicate(timeout=600)
    assert killed, "no run was caught in progress: the sweep ended first"
    assert proc.returncode == 0, out[-2000:]
    assert "0 failed" in out and (store / killed / "final.json").exists()


def test_killed_sweep_finishes_on_rerun_without_recomputing(store, tiny_params):
    env = {**os.environ, "SRNETS_RUNS": str(store), "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "srnets_lib", "sweep", NOTEBOOK, "--params", str(tiny_params),
                             "--executor", "local"], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + 300
    while time.time() < deadline and len(list(store.glob("*/final.json"))) < 2:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)  # the whole command, mid-way
    proc.wait()
    before = {p: p.stat().st_mtime_ns for p in store.glob("*/final.json")}
    total = len(runs(tiny_params))
    assert 2 <= len(before) < total, "the sweep finished before it could be killed"

    out = run_sweep(store, tiny_params)
    assert out.returncode == 0, out.stderr[-2000:]
    assert f"{total - len(before)} computed, 0 failed" in out.stdout
    assert all(p.stat().st_mtime_ns == mtime for p, mtime in before.items())  # nothing recomputed
    assert len(finished(store)) == total
    assert not list(store.glob("*/.lock")) and not list(store.glob("*/*.tmp*"))
    for path in store.glob("*/metrics.jsonl"):
        steps = [json.loads(line)["step"] for line in path.read_text().splitlines()]
        assert steps == sorted(set(steps))


def test_notebook_jobs_read_the_command_line_overrides(tmp_path, monkeypatch):
    """sweep --by notebooks --set ...: each papermill job gets a params file holding the overrides."""
    from srnets_lib.__main__ import main

    seen = []
    monkeypatch.setattr(sweep, "execute_jobs", lambda planned, out, executor, address: seen.extend(planned) or [])
    assert main(["sweep", "book/sec4_3.ipynb", "--by", "notebooks", "--out", str(tmp_path),
                 "--set", "tasks=[paraphrase]", "seeds=[2]", "sparsities=[0.5]", "lr=0.003"]) == 0
    assert [(job.seed, job.sparsity) for job in seen] == [(2, 0.5)]
    resolved = params.load(seen[0].params_file)
    assert resolved.preset.tasks == ["paraphrase"] and resolved.run("paraphrase").lr == 0.003
    assert {p.task for p in sections.points("sec4_3", resolved) if not p.reference} == {"paraphrase"}


@pytest.mark.parametrize("executor", ["local", "ray"])
def test_sigterm_stops_a_sweep_with_one_line_and_a_resumable_store(store, tiny_params, executor):
    env = {**os.environ, "SRNETS_RUNS": str(store), "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "srnets_lib", "sweep", NOTEBOOK, "--params", str(tiny_params),
                             "--executor", executor], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    deadline = time.time() + 300
    while time.time() < deadline and not list(store.glob("*/final.json")):
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)  # the sweep's own process, as a scheduler would
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, err[-3000:]
    assert "sweep: stopped by SIGTERM; finished runs are kept" in err
    assert "core dumped" not in err and "*** " not in err  # no C++ stack dump
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # anything left behind (Ray's processes)
    except ProcessLookupError:
        pass
    out = run_sweep(store, tiny_params)
    assert out.returncode == 0 and len(finished(store)) == len(runs(tiny_params))


@pytest.mark.parametrize("value", ["abc", "-5"])
def test_a_bad_checkpoint_interval_stops_the_sweep_before_any_run(store, tiny_params, monkeypatch, capsys, value):
    from srnets_lib.__main__ import main

    monkeypatch.setenv("SRNETS_CHECKPOINT_SECONDS", value)
    assert main(["sweep", NOTEBOOK, "--params", str(tiny_params), "--executor", "local"]) == 2
    assert f"error: $SRNETS_CHECKPOINT_SECONDS='{value}': expected a number of seconds" in capsys.readouterr().err
    assert not store.exists() or not any(store.iterdir())


@pytest.mark.parametrize("value", ["bogus", ""])
def test_an_executor_named_by_the_environment_is_checked_like_the_option(store, tiny_params, monkeypatch, capsys,
                                                                          value):
    """SRNETS_EXECUTOR sets --executor's default, which argparse does not check against its choices."""
    from srnets_lib.__main__ import main

    def never(*args, **kwargs):
        raise AssertionError("the sweep ran")

    monkeypatch.setattr(sweep, "RayExecutor", never)
    monkeypatch.setattr(sweep, "LocalExecutor", never)
    monkeypatch.setenv("SRNETS_EXECUTOR", value)
    with pytest.raises(SystemExit) as exit:
        main(["sweep", NOTEBOOK, "--params", str(tiny_params)])
    assert exit.value.code == 2
    err = capsys.readouterr().err
    assert f"argument --executor: $SRNETS_EXECUTOR={value!r}: invalid choice (choose from ray, local)" in err
    monkeypatch.setenv("SRNETS_EXECUTOR", "local")
    from srnets_lib.__main__ import parser

    assert parser().parse_args(["sweep", NOTEBOOK]).executor == "local"
