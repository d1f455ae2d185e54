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
