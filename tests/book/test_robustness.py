"""`python -m srnets_lib robustness`: each setting changes one data field; its runs are its own
(keyed by their data), its cells are judged on them, and the scorecard page shows the table."""

import json

from srnets_lib.settings import params as params_lib
from srnets_lib.book import robustness, sections
from srnets_lib.__main__ import main
from srnets_lib.store.runs import Run


def test_settings_change_one_field_at_a_time():
    assert robustness.settings((3,), (0.65,)) == [("default", []), ("data_seed=3", ["data.data_seed=3"]),
                                                  ("bias_strength=0.65", ["data.bias_strength=0.65"])]


def test_each_setting_is_computed_on_its_own_data_and_judged_on_its_own_runs(store, tiny_params):
    nli = ["--set", "sections.sec4_2.tasks=[nli]"]
    assert main(["robustness", "--params", str(tiny_params), "--pages", "sec4_2", "--data-seeds", "3",
                 "--strengths", "--executor", "local", *nli]) == 0
    for overrides, seed in (([], 0), (["data.data_seed=3"], 3)):
        configs = [p.config for p in sections.points("sec4_2", params_lib.load(tiny_params, nli[1:] + overrides))]
        assert all(c.data.data_seed == seed and Run(c).done for c in configs)
    params = params_lib.load(tiny_params)
    df = robustness.load(params)
    assert list(dict.fromkeys(df.setting)) == ["default", "data_seed=3"] and set(df.page) == {"sec4_2"}
    assert df.holds.notna().all() and len(df) % 2 == 0  # every cell judged, the same cells in both settings
    assert list(robustness.pivot(df).columns) == ["default", "data_seed=3"]
    # a setting whose runs the store lacks is not judged on another setting's runs
    assert main(["robustness", "--params", str(tiny_params), "--pages", "sec4_2", "--data-seeds", "4",
                 "--strengths", "--no-compute", *nli]) == 0
    rows = json.loads(robustness.path(params).read_text())["rows"]
    assert {r["setting"] for r in rows if r["holds"] is None} == {"data_seed=4"}


def test_an_empty_store_shows_the_shipped_grid_while_its_runs_are_the_builds(store, tiny_params):
    """The grid shipped with the package was judged on params/toy.yaml: a toy build with an empty
    store shows it, with its commit, CPU and how many of the grid's settings it holds, while every
    setting's run keys are the build's; another params file's build says how to make its own."""
    from srnets_lib.book import scorecard

    toy = params_lib.load("params/toy.yaml")
    stored = json.loads((robustness.paths.PROJECT_ROOT / "srnets_lib/book" / robustness.SHIPPED).read_text())
    assert stored["params"] == "toy" and stored["commit"] and stored["cpu"] and stored["judged"]
    assert set(stored["settings"]) <= {name for name, _ in robustness.settings()} and "default" in stored["settings"]
    df, why = robustness.shipped(toy)
    text = scorecard.Scorecard(toy).robustness().text
    if df is None:  # the toy's runs changed since the grid was judged: it is not shown as this build's
        assert "keys changed" in why and f"*Not computed for this build's store* ({why})" in text
    else:
        assert text.startswith("From the last grid measured, shipped with the package") and stored["commit"] in text
        assert set(df.setting) == set(stored["settings"]) and robustness.coverage(df) in text
    other = scorecard.Scorecard(params_lib.load(tiny_params)).robustness().text
    assert "*Not computed for this build's store*" in other and "keys changed" in other  # the toy's name, other runs


def test_a_grid_without_some_settings_names_them():
    import pandas as pd

    held = pd.DataFrame({"setting": ["default", "data_seed=1"]})
    sentence = robustness.coverage(held)
    assert sentence.startswith(f" It holds 2 of the grid's {len(robustness.settings())} settings: data_seed=2, ")
    assert "bias_strength=0.95 are not computed yet" in sentence
    everything = pd.DataFrame({"setting": [name for name, _ in robustness.settings()]})
    assert robustness.coverage(everything) == ""


def test_the_scorecard_shows_the_table_or_how_to_make_it(store):
    from srnets_lib.book import scorecard

    card = scorecard.Scorecard(params_lib.load("params/toy.yaml"))  # on an empty store
    rows = [{"setting": s, "page": "sec4_2", "claim": "poe-improves-ood", "task": "nli", "holds": h, "verdicts": 1,
             "held": int(h), "margin": m} for s, h, m in (("default", True, 0.03), ("data_seed=1", False, -0.01))]
    file = robustness.path(card.params)
    file.parent.mkdir(parents=True)
    file.write_text(json.dumps({"judged": "2026-01-01T00:00:00", "rows": rows}))
    text = card.robustness().text
    # a grid stored before outcomes and standard errors were: its cells read confirmed / not confirmed
    assert "1 of 2 cells confirmed (50%) over 2 settings; 1 not confirmed" in text
    assert "judged 2026-01-01T00:00:00" in text and "commit `not recorded`" in text
    assert 'title="confirmed">' in text and "+3.0 points" in text and 'title="not confirmed">' in text
    assert "-1.0 points" in text


def _row(setting, outcome="confirmed", margin=0.02):
    return {"setting": setting, "page": "sec4_2", "claim": "poe-improves-ood", "task": "nli", "holds": True,
            "verdicts": 1, "held": 1, "margin": margin, "outcome": outcome, "noise": 0.005}


def _digest(params_file, name, overrides, judged="2026-01-01T00:00:00"):
    keys = robustness.keys(params_lib.load(params_file, overrides), ["sec4_2"])
    return name, {"overrides": overrides, "keys": keys, "judged": judged, "commit": "abc1234", "cpu": "a CPU"}


def test_a_grid_computed_in_parts_keeps_the_earlier_settings_whose_runs_are_unchanged(tiny_params):
    """A call judges its settings and keeps the earlier table's others while their run keys are this
    build's, each with the commit, CPU and date it was judged at; a changed run, a default setting
    read otherwise (another rule) or another params file keeps nothing of it."""
    base, pages = params_lib.load(tiny_params), ["sec4_2"]
    earlier = {"params": base.name, "pages": pages, "judged": "2026-01-01T00:00:00",
               "settings": dict([_digest(tiny_params, "default", []),
                                 _digest(tiny_params, "data_seed=1", ["data.data_seed=1"]),
                                 _digest(tiny_params, "bias_strength=0.65", ["data.bias_strength=0.65"])]),
               "rows": [_row("default"), _row("data_seed=1"), _row("bias_strength=0.65", "within noise")]}
    earlier["settings"]["bias_strength=0.65"]["keys"] = "changed"  # its runs are not this build's any more
    now = dict([_digest(tiny_params, "default", [], "2026-02-02T00:00:00"),
                _digest(tiny_params, "data_seed=2", ["data.data_seed=2"], "2026-02-02T00:00:00")])
    rows, digests = robustness.merged([_row("default"), _row("data_seed=2", "not confirmed", -0.1)], dict(now),
                                      earlier, base, tiny_params, pages)
    assert list(digests) == ["default", "data_seed=1", "data_seed=2"]
    assert [r["setting"] for r in rows] == ["default", "data_seed=1", "data_seed=2"]
    assert digests["data_seed=1"]["judged"] == "2026-01-01T00:00:00" and digests["default"]["judged"].startswith("2026-02")
    df = robustness._frame({"judged": "2026-02-02T00:00:00", "commit": "def5678", "cpu": "another CPU",
                            "settings": digests, "rows": rows})
    assert robustness.judged_text(df) == ("judged 2026-02-02T00:00:00 at commit `abc1234` on a CPU (default, "
                                          "data_seed=2); judged 2026-01-01T00:00:00 at commit `abc1234` on a CPU "
                                          "(data_seed=1)")
    # a setting this call found no run of keeps its earlier cells
    absent = [_row("default"), _row("data_seed=1", "not measurable", None)]
    rows, digests = robustness.merged(absent, dict([("default", now["default"]),
                                                    _digest(tiny_params, "data_seed=1", ["data.data_seed=1"], "x")]),
                                      earlier, base, tiny_params, pages)
    assert [r["outcome"] for r in rows] == ["confirmed", "confirmed"] and digests["data_seed=1"]["judged"] != "x"
    # the default setting read otherwise: the earlier table was judged by another rule
    rows, digests = robustness.merged([_row("default", margin=0.05)], {"default": now["default"]}, earlier, base,
                                      tiny_params, pages)
    assert list(digests) == ["default"]
    # another params file's table
    other = {**earlier, "params": f"{base.name}-other"}
    assert list(robustness.merged([_row("default")], {"default": now["default"]}, other, base, tiny_params,
                                  pages)[1]) == ["default"]
