"""`python -m srnets_lib rekey`: a store computed by algorithm version 3 moves to version 4's keys
(only scientific settings), so its runs serve requests again without being recomputed."""

import json
import shutil

import yaml

from srnets_lib import paths
from srnets_lib.store import rekey
from srnets_lib.settings.config import DataConfig, RunConfig, describe
from srnets_lib.sweeps.executors import execute
from srnets_lib.settings.request import Request
from srnets_lib.store.runs import Run

CONFIG = RunConfig(task="nli", backbone="tiny", data=DataConfig(train_size=64, dev_size=32, ood_size=32), epochs=1,
                   batch_size=16, eval_interval=2, max_length=48)
NEW_FIELDS = ("schema_version", "data_fingerprint", "ood_every", "kept_steps", "weights", "files")


def as_version_3(store, eval_ood: str, eval_batch_size: int = 64) -> str:
    """Lay the stored run out as version 3 did (config with the moved fields, untyped final.json,
    the directory named by the version-3 key); return that key."""
    run = Run(CONFIG, store)
    raw = {**describe(CONFIG), "eval_batch_size": eval_batch_size, "eval_ood": eval_ood, "keep_steps": [2]}
    key = rekey.v3_key(raw)
    folder = store / key
    shutil.copytree(run.dir, folder)
    (folder / paths.CONFIG).write_text(yaml.safe_dump(raw))
    final = json.loads(run.file(paths.FINAL).read_text())
    (folder / paths.FINAL).write_text(json.dumps({k: v for k, v in final.items() if k not in NEW_FIELDS}))
    return key


def test_the_version_3_key_is_reproduced():
    """The key test_config pinned under version 3 for RunConfig(task="nli")."""
    assert rekey.v3_key(describe(RunConfig(task="nli"))) == "nli-finetune-std-6ee95b827a64"


def test_a_version_3_store_is_moved_and_reused_without_recomputing(store):
    execute(CONFIG, Request(ood_every=True, keep_steps=(2,), weights=True, eval_batch_size=64))
    selected, every = as_version_3(store, "selected"), as_version_3(store, "every")
    shutil.rmtree(Run(CONFIG, store).dir)
    (store / "nli-finetune-std-000000000000").mkdir()  # not a version-3 run of its own config
    (store / "nli-finetune-std-000000000000" / paths.CONFIG).write_text(yaml.safe_dump(describe(CONFIG)))
    (store / "nli-finetune-std-000000000000" / paths.FINAL).write_text("{}")
    counts = rekey.rekey(store)
    assert counts == {"moved": 1, "superseded": 1, "skipped": 1, "unfinished": 0}
    run = Run(CONFIG, store)
    result = run.result()  # the run that scored OOD at every evaluation covers more: kept
    assert result.ood_every and result.kept_steps == [2] and result.weights and result.key == run.key
    assert len(list((store / "_superseded").iterdir())) == 1  # the other, whichever was moved first
    assert not (store / selected).exists() and not (store / every).exists()
    stamp = run.file(paths.FINAL).stat().st_mtime_ns
    assert run.serves(Request(ood_every=True, keep_steps=(2,), weights=True))
    assert execute(CONFIG, Request(ood_every=True)).id == result.id
    assert run.file(paths.FINAL).stat().st_mtime_ns == stamp  # nothing recomputed


def test_rekey_checks_every_folder_before_moving_any_and_names_each_bad_one(store, capsys):
    """A config.yaml that is not YAML and a cut final.json: both folders are named, in one line
    each, and no run is moved (before, a traceback, or a bare JSON error part-way through)."""
    from srnets_lib.__main__ import main

    execute(CONFIG, Request(ood_every=True, keep_steps=(2,), weights=True, eval_batch_size=64))
    good, not_yaml, cut = (as_version_3(store, "every", size) for size in (64, 32, 16))
    shutil.rmtree(Run(CONFIG, store).dir)
    (store / not_yaml / paths.CONFIG).write_text("task: nli\nlr: [1e-4\n  epochs: {")
    final = store / cut / paths.FINAL
    final.write_text(final.read_text()[:len(final.read_text()) // 2])
    before = sorted(p.name for p in store.iterdir())
    assert main(["rekey", "--runs", str(store)]) == 2
    err = capsys.readouterr().err
    assert f"{store / not_yaml / paths.CONFIG}: not YAML" in err and f"{final}: not JSON" in err
    assert "nothing was moved" in err and "Traceback" not in err and str(store / good) not in err
    assert len(err.strip().splitlines()) == 3
    assert sorted(p.name for p in store.iterdir()) == before  # nothing moved
