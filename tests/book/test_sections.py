"""Sections as objects: each notebook's points are the runs the paper's figure or table needs
(the counts below are those of the per-section recipes they replaced), its setup is one call,
and a page shows what the run store lacks instead of dropping it."""

import json
from pathlib import Path

import pytest

from srnets_lib.book import page as pages, paper_numbers, sections
from srnets_lib.settings import params

# points per section: (params/paper.yaml, params/toy.yaml)
POINTS = {"sec4_2": (312, 156), "sec4_3": (216, 18), "sec4_4": (168, 14), "sec4_5": (156, 13), "sec5_1": (72, 5),
          "sec5_2": (96, 16), "appc1": (240, 20), "appc5": (40, 5),
          # Part II: per task and fine-tuning seed the full model and every subnetwork (paper: 3 objectives x 5
          # sparsities x 3 masks, IMP 5 levels x 3, Rand 9 x 3, OMP 9; toy: one of each at 0.7); the
          # pretraining page adds one point per subnetwork on the corpus; figure 4's RoBERTa-base (paper only) has
          # TAMT and IMP at 8 sparsities: 1 + 3 x 8 x 3 + 8 x 3 + 27 + 9 per task and fine-tuning seed
          "tamt_transfer": (7 * 3 * 97 + 7 * 3 * 133, 3 * 7), "tamt_pretraining": (96 + 7 * 3 * 97, 6 + 3 * 7 + 76),
          # opt-in pages. Figures 6/7 per task and fine-tuning seed: the full model, TAMT-MLM and -KD from OMP
          # and from random masks at step 0 (the initial mask) and each step count and mask seed, IMP at each
          # pruning interval and mask seed, at each of tamt.iteration_sparsities (figures 14-16; paper: 5 tasks x 3
          # x (1 + 3 sparsities x 3 x (2 x 2 x 8 + 5)), and figure 8's IMP masks at 1396 steps, probed on the corpus
          # (3 sparsities x 3 mask seeds); toy: 3 x (1 + 2 sparsities x (2 x 2 x 5 + 3))); figure 5's trajectories
          # (toy, make book-full): TAMT-MLM and -KD at 4 step counts and 2 sparsities, each probed and fine-tuned
          # on 3 tasks (64), IMP, OMP and Rand at 0.6 likewise (12); figure 9 per task,
          # size and fine-tuning seed (the few-shot scripts': 5, CoLA at 2k and 4k their own): the full model, OMP,
          # and TAMT-MLM, -KD and IMP per mask seed (paper: 16 sizes x 5 x 11, CoLA 2k 37, 4k 18; toy: one seed)
          "tamt_iterations": (5 * 3 * (1 + 3 * 3 * 37) + 3 * 3, 3 * (1 + 2 * 23)), "tamt_data": (16 * 5 * 11 + 37 + 18, 3 * 2 * 5)}
SERIES = {  # the paper's legends (params/paper.yaml)
    "sec4_2": {"full bert (std)", "full bert (poe)", "mask train (std)", "mask train (poe)", "mask train (poe) on poe ft",
               "imp (std)", "imp (poe)", "imp (poe) on poe ft"},
    "sec4_3": {"full bert (std)", "full bert (poe)", "imp-rw (poe), then std ft", "imp-rw (poe), then poe ft",
               "mask train (poe), then std ft", "mask train (poe), then poe ft"},
    "sec4_4": {"full bert (std)", "full bert (poe)", "mask train (std), pt", "mask train (poe), pt", "mask train (poe)"},
    "sec4_5": {"full bert (std)", "bert-ft subnet", "bert-pt subnet", "bert-pt subnet + ft"},
    "sec5_1": {"ft step=0", "ft step=5000", "ft step=10000", "ft step=15000", "ft step=20000", "ft to end"},
    "sec5_2": {"full bert (std)", "fixed", "gradual 0.7->0.9", "fixed, soft init", "gradual 0.2->0.9", "gradual 0.5->0.9"},
    "appc1": {f"{kind} ({loss})" for kind in ("full bert", "mask train") for loss in ("std", "poe", "reweight", "confreg")},
    "appc5": {"full bert (std)", "full bert (poe)", "mask 0.5", "mask 0.7", "mask 0.5->0.7"},
    "tamt_transfer": {"full model", "TAMT-MLM", "TAMT-KD", "TAMT-MLM+KD", "IMP", "OMP", "Rand"},  # TAMT figures 3, 4
    "tamt_pretraining": {"full model", "TAMT-MLM", "TAMT-KD", "TAMT-MLM+KD", "IMP", "OMP", "Rand"},
    "tamt_iterations": {"full model", "TAMT-MLM", "TAMT-KD", "TAMT-MLM (Rand_init)", "TAMT-KD (Rand_init)", "IMP"},
    "tamt_data": {"full model", "TAMT-MLM", "TAMT-KD", "IMP", "OMP"},
}


@pytest.mark.parametrize("name", sections.SECTIONS)
def test_each_section_shows_the_points_it_did_before(name):
    paper, toy = params.load("params/paper.yaml"), params.load("params/toy.yaml")
    assert (len(sections.points(name, paper)), len(sections.points(name, toy, full=True))) == POINTS[name]
    assert {p.series for p in sections.points(name, paper)} == SERIES[name]


@pytest.mark.parametrize("name", sections.SECTIONS)
def test_the_analyses_beyond_the_paper_name_series_the_page_has(name):
    """Per-subset scores and mask structure (analyses.py) pick series by name: a name the page
    lacks would draw nothing."""
    section = sections.get(name)
    series = {p.series for p in sections.points(name, params.load("params/paper.yaml"))}
    assert set(section.subset_series) <= series
    assert not section.structure_against or section.structure_against in series - {s for s in series if "full" in s}


@pytest.mark.parametrize("name", [n for n in sections.SECTIONS if sections.get(n).part == 1])
@pytest.mark.parametrize("file", ["params/paper.yaml", "params/toy.yaml"])
def test_every_series_a_claim_reads_is_one_its_page_makes(name, file):
    """A claim reads series by name (series.py): one its page's points do not make would leave the
    claim "not measurable" on every build, whatever was computed."""
    section, chosen = sections.get(name), params.load(file)
    made = {p.series for p in sections.points(name, chosen)}
    reads = {s for claim in section.claims_for(chosen) for s in claim.reads()}
    assert reads and reads <= made


def test_appendix_c5_splits_each_backbones_full_models_beside_those_of_section_4_2(store, monkeypatch):
    monkeypatch.setenv("SRNETS_COMPUTE", "0")
    page = pages.load("appc5", params_file="params/toy.yaml")
    shown = page.section.subset_points(page.results, page.section.subset_series, 0.7)
    assert {p.series for p in shown} == {f"full model ({loss}), {backbone}" for loss in ("std", "poe")
                                         for backbone in ("section 4.2's backbone", "MiniLM, 3 layers")}
    section_4_2 = {p.config.key() for p in sections.points("sec4_2", params.load("params/toy.yaml")) if p.reference}
    assert {p.config.key() for p in shown if "4.2" in p.series} <= section_4_2
    assert not {p.config.key() for p in shown if "layers" in p.series} & section_4_2


def test_section_4_5_bounds_each_training_distribution_by_its_bayes_optimal_model(store, monkeypatch):
    """The ID data alone (the std model; "+ ft") and with the OOD training data (the mask searches):
    at the toy's strength 0.8 the first follows the cue on 3 of nli's 5 ambiguous members (OOD 70.0),
    the second on 1 (OOD 90.0): section 4.5's 'nearly 100%' is out of reach of a model that fits
    the mixed data (optimum.design_criteria, checked against generated data in test_data)."""
    monkeypatch.setenv("SRNETS_COMPUTE", "0")
    table = pages.load("sec4_5", params_file="params/toy.yaml").training_optimum()
    assert table.loc[("nli", "ID"), "OOD"] == "70.0"
    assert table.loc[("nli", "ID + OOD"), "OOD"] == "90.0"
    assert table.loc[("nli", "ID + OOD"), "follows the cue on"] == "1 of 5 members"


def test_section_4_2_states_how_much_id_ideal_debiasing_keeps(store, monkeypatch):
    """The rule follower (100% OOD) against the Bayes-optimal model of the toy's training data at
    strength 0.8: 94.7% of its ID on nli, 91.9% on the two-class tasks, under the retention rule's
    95% (the introduction's table; optimum.design_criteria, checked against generated data)."""
    monkeypatch.setenv("SRNETS_COMPUTE", "0")
    table = pages.load("sec4_2", params_file="params/toy.yaml").training_optimum()
    shares = table.xs("ID", level=1)["its share"]
    assert shares.to_dict() == {"nli": "94.7%", "paraphrase": "91.9%", "factcheck": "91.9%"}
    poe = table.xs("ID, PoE's main model (section 3.3)", level=1)  # the rule follower: 100% OOD
    assert set(poe["OOD"]) == {"100.0"} and (poe["ID"] == poe["rule follower's ID"]).all()


def test_appendix_c1_gives_example_reweightings_and_confregs_optimum(store, monkeypatch):
    """Weighted as appendix eq. 3 weighs it (with the best cue-only bias model), the toy's nli
    training data are best fit by a model that follows the cue on 1 of the 5 ambiguous members
    (OOD 90.0), where the unweighted data's optimum follows it on 3 (OOD 70.0); confreg's optimum
    (eq. 4, its teacher that optimum) makes the same decisions, so scores as it does."""
    monkeypatch.setenv("SRNETS_COMPUTE", "0")
    table = pages.load("appc1", params_file="params/toy.yaml").training_optimum()
    assert table.loc[("nli", "ID"), "OOD"] == "70.0"
    assert table.loc[("nli", "ID, reweighted (appendix eq. 3)"), "OOD"] == "90.0"
    confreg = table.loc[("nli", "ID, confreg, its teacher the std optimum (appendix eq. 4)")]
    assert confreg.to_dict() == table.loc[("nli", "ID")].to_dict()  # the std optimum's decisions: OOD 70.0
    from srnets_lib.book.analyses import OPTIMUM_OF
    from srnets_lib.data.optimum import EXACT_LOSSES

    assert set(OPTIMUM_OF) == set(EXACT_LOSSES)  # a row label for each loss whose optimum is exact


def test_section_4_2_adds_the_full_models_of_the_tasks_it_does_not_prune():
    toy = params.load("params/toy.yaml")
    points = sections.points("sec4_2", toy, tasks=["nli"], seeds=[1], sparsities=[0.5])
    assert {p.task for p in points if not p.reference} == {"nli"}
    assert {p.task for p in points if p.reference} == {"nli", "paraphrase", "factcheck"}


def test_requests_follow_what_a_point_reads():
    """The std full models keep section 5.1's steps (not in C.5); 5.1's runs score OOD throughout."""
    toy = params.load("params/toy.yaml")
    std = [p for p in sections.points("sec4_2", toy) if p.series == "full bert (std)"]
    assert all(p.request.keep_steps == tuple(toy.sections.sec5_1.steps) for p in std)
    assert all(p.request is None for p in sections.points("appc5", toy))
    assert all(p.request.ood_every for p in sections.points("sec5_1", toy))


@pytest.mark.parametrize("name", sections.SECTIONS)
def test_a_notebook_is_its_parameters_one_setup_call_and_its_summary(name):
    nb = json.loads(Path(f"book/{name}.ipynb").read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert nb["nbformat"] == 4 and not any(c["outputs"] or c["execution_count"] for c in code)
    # the HTML shows neither (MyST-NB tags); the setup's output, what the page is, stays
    assert code[0]["metadata"]["tags"] == ["parameters", "remove-cell"] and "compute = None" in "".join(code[0]["source"])
    assert code[1]["metadata"]["tags"] == ["remove-input"]
    # then the page's summary, computed from its verdicts, before any figure or table
    assert "".join(code[2]["source"]) == "sec.summary()" and code[2]["metadata"]["tags"] == ["remove-input"]
    assert "".join(code[-1]["source"]) == "sec.reproduce()" and code[-1]["metadata"]["tags"] == ["remove-input"]
    setup = "".join(code[1]["source"])
    assert f'sec = page.load("{name}", ' in setup and setup.count("\n") == 2
    section = sections.get(name)
    assert "".join(nb["cells"][0]["source"]).startswith(f"# {section.number} {section.title}\n")


def test_the_paper_numbers_are_read_from_one_file():
    table5 = paper_numbers.table("table5", ["nli"])
    assert list(table5.columns) == ["paper's row", "MNLI", "HANS"]
    assert table5.loc["gradual 0.7->0.9", "MNLI"] == "76.84 (0.46)" and table5.loc["fixed", "HANS"] == "52.56 (0.92)"
    assert "PAWS-wiki" in paper_numbers.table("table5").columns
    table6 = paper_numbers.table("table6")
    assert table6.loc[("BERT-large", "mask 0.7"), "MNLI"] == "77.54 (6.10)"
    assert table6.loc[("RoBERTa-base", "full model (std)"), "HANS"] == "68.33 (0.88)"  # C.5 names it so
    assert {sections.get(n).paper_table for n in sections.SECTIONS} - {None} == set(paper_numbers.load()) - {"claims"}


def test_a_page_that_only_gathers_shows_its_missing_runs(store, tiny_params, monkeypatch):
    monkeypatch.setenv("SRNETS_COMPUTE", "0")
    page = pages.load("sec4_4", params_file=str(tiny_params), seeds="[1]", sparsity="0.7")
    results = page.results
    assert results.seeds == [1] and results.sparsities == [0.7]
    assert results.missing == results.points and results.frame.empty
    assert "5 of the 5 points of this page have no finished run" in page.missing_note()
    assert page.evaluate() == []  # 4.4's rule reads its sparsities together: not judged at 0.7 alone
    assert page.asked_note().startswith("**Judged at sparsity 0.7 only** (asked for it); its default sparsities 0.5")
    everything = pages.load("sec4_4", params_file=str(tiny_params), seeds="[1]")
    verdicts = everything.evaluate()
    assert verdicts and all(v.holds is None and v.reason == "runs missing" for v in verdicts)
    assert not store.exists()  # nothing computed


def test_a_page_draws_its_opt_in_sparsities_once_the_store_has_them(store, tiny_params, monkeypatch):
    """The default build computes a page at the sparsities its claims judge (sections.judged_only);
    the preset's other sparsities
    are drawn when their runs are in the store (make book-full), and said to be opt-in when not."""
    derived = tiny_params.parent / "derived.yaml"
    derived.write_text(f"base: {tiny_params}\nname: derived\npreset: {{sparsities: [0.5, 0.7]}}\n")
    page = pages.load("sec4_4", params_file=str(derived), seeds="[1]", compute=True)
    results = page.results
    subnetworks = results.frame[~results.frame.reference.astype(bool)]
    assert results.sparsities == [0.5] and set(subnetworks.x) == {0.5} and not results.missing
    assert {p.x for p in results.opt_in_missing} == {0.7}
    assert page.opt_in_note().startswith("The default build computes this page at sparsity 0.5, where")
    assert "Opt-in: the curves' points at 0.7; 3 of 3 are not in the run store; `make book-full`" in page.opt_in_note()
    pages.load("sec4_4", params_file=str(derived), seeds="[1]", sparsity="0.7", compute=True)
    monkeypatch.setenv("SRNETS_COMPUTE", "0")
    results = pages.load("sec4_4", params_file=str(derived), seeds="[1]").results
    assert not results.opt_in_missing and set(results.frame[~results.frame.reference.astype(bool)].x) == {0.5, 0.7}


def test_the_opt_in_pages_are_swept_and_planned_only_when_asked():
    from srnets_lib.book.runs import of_notebooks as graph

    notebooks = [f"book/{n}.ipynb" for n in sections.SECTIONS if n.startswith("tamt")]
    toy = params.load("params/toy.yaml")
    default, shown = graph(notebooks, toy)
    full, shown_full = graph(notebooks, toy, full=True)
    assert set(shown) == {"tamt_transfer", "tamt_pretraining"} and set(shown_full) == set(n[5:-6] for n in notebooks)
    assert len(full) > len(default) and all(key in full.nodes for key in default.nodes)


def test_each_page_ends_with_the_commands_that_reproduce_it(tmp_path):
    """One point with papermill (-p sparsity only where the notebook declares it, the params file
    where it is not the default), the sweep of its runs, and the paper-scale plan."""
    from srnets_lib.settings import params

    toy = params.load("params/toy.yaml")
    with_sparsity = pages.reproduce_text("sec4_2", toy, [0.7], [2])
    assert '`papermill book/sec4_2.ipynb out.ipynb -p sparsity 0.7 -p seeds "[2]"`' in with_sparsity
    assert "`python -m srnets_lib sweep book/sec4_2.ipynb --params params/toy.yaml`" in with_sparsity
    assert "`python -m srnets_lib plan book/sec4_2.ipynb --params params/paper.yaml`" in with_sparsity
    assert "`make book PARAMS=params/paper.yaml PART=1`" in with_sparsity  # the whole part: no run twice
    assert "PART=2" in pages.reproduce_text("tamt_transfer", toy, [0.7], [1])
    other = tmp_path / "mine.yaml"
    other.write_text(open("params/toy.yaml").read())
    without = pages.reproduce_text("sec5_1", params.load(other), [0.7], [1])
    # a params file outside the project by its name: never a path of the machine that built the page
    assert "-p sparsity" not in without and '-p seeds "[1]" -p params_file mine.yaml`' in without


def test_tables_put_each_ood_set_on_rows_of_its_own_with_one_decimal():
    """No column of dashes: a task's OOD set is named on its rows; mean ± std over seeds, x100,
    one decimal; a row without an OOD score keeps its ID."""
    import pandas as pd

    from srnets_lib.book import plots

    df = pd.DataFrame([{"task": "nli", "series": "full", "seed": 1, "id": 0.9, "ood:hans": 0.6, "ood:paws": None},
                       {"task": "nli", "series": "full", "seed": 2, "id": 0.92, "ood:hans": 0.62, "ood:paws": None},
                       {"task": "paraphrase", "series": "full", "seed": 1, "id": 0.95, "ood:hans": None, "ood:paws": 0.7},
                       {"task": "sst2", "series": "full", "seed": 1, "id": 0.88, "ood:hans": None, "ood:paws": None}])
    out = plots.table(df, index=("task", "series"))
    assert list(out.columns) == ["ID dev", "OOD", "seeds"] and out.index.names == ["task", "series", "OOD set"]
    # the ID column names the split the ID scores were measured on (the toy's test split)
    assert list(plots.table(df.assign(id_split="test"), index=("task", "series")).columns)[0] == "ID test"
    # the sample standard deviation over seeds (ddof 1): two seeds 2 points apart give 1.4
    assert out.loc[("nli", "full", "hans")].tolist() == ["91.0 ± 1.4", "61.0 ± 1.4", 2]
    assert out.loc[("paraphrase", "full", "paws")].tolist() == ["95.0", "70.0", 1]  # one seed: no spread
    assert out.loc[("sst2", "full", "–")].tolist() == ["88.0", "–", 1] and len(out) == 3
    # rows in numeric order of the numbers in their labels (5.1's steps), not as text
    steps = pd.DataFrame([{"task": "nli", "series": f"ft step={n}", "seed": 1, "x": n, "id": 0.9} for n in (0, 16, 24, 8)])
    assert list(plots.table(steps).index.get_level_values("series")) == [f"ft step={n}" for n in (0, 8, 16, 24)]


def test_the_scorecard_has_no_runs_of_its_own_and_is_swept_with_the_rest():
    from srnets_lib.book.runs import notebook_jobs as jobs, of_notebooks as graph

    toy = params.load("params/toy.yaml")
    _, shown = graph(["book/scorecard.ipynb", "book/sec4_5.ipynb"], toy)
    assert set(shown) == {"sec4_5"}
    assert {j.notebook for j in jobs(["book/scorecard.ipynb", "book/sec4_5.ipynb"], "params/toy.yaml")} == {"book/sec4_5.ipynb"}
    with pytest.raises(ValueError, match="not a book notebook"):
        graph(["book/intro.ipynb"], toy)


def test_a_figure_caption_names_the_papers_figure_and_what_this_build_drew(store, tiny_params, monkeypatch):
    import matplotlib.pyplot as plt

    monkeypatch.setenv("SRNETS_COMPUTE", "0")
    page = pages.load("sec4_4", params_file=str(tiny_params), seeds="[1]")
    fig = plt.figure()
    fig.suptitle("Subnetworks without fine-tuning")
    caption = page.caption(fig)
    plt.close(fig)
    assert caption.startswith("*Subnetworks without fine-tuning.* Redraws the paper's figure 5 from synthetic data")
    assert ": nli, 1 seed;" in caption


@pytest.mark.parametrize("notebook", sorted(Path("book").glob("*.ipynb")), ids=lambda p: p.stem)
def test_no_code_cell_of_a_notebook_shows_in_the_html(notebook):
    """Every code cell is tagged remove-input (its output shows, its code does not) or remove-cell
    (the parameters): the HTML shows no code, and the notebook keeps it, editable."""
    nb = json.loads(notebook.read_text())
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            assert {"remove-input", "remove-cell"} & set(cell["metadata"].get("tags", [])), "".join(cell["source"])


def test_the_browser_check_flags_a_page_that_disagrees_with_the_scorecard():
    from srnets_lib.tools.browser_check import disagreements

    card = [("TR", "sec4_2", "srnet", "", "confirmed"), ("TR", "appc5", "srnet", "RoBERTa-base", "within noise")]
    assert disagreements(card + [("LI", "sec4_2", "srnet", "", "confirmed"),
                                 ("LI", "appc5", "srnet", "RoBERTa-base", "within noise")]) == []
    found = disagreements(card + [("LI", "appc5", "srnet", "RoBERTa-base", "confirmed")])
    assert found == ["appc5: the claim srnet [RoBERTa-base] reads 'confirmed' on its page, 'within noise' on the scorecard"]


def test_a_series_has_one_colour_in_every_figure_and_a_figures_series_distinct_ones():
    """The palette is keyed by the series' name (plots.COLOURS), not by its place in a figure: the same
    name the same colour on every page, in the main figure as in the mask and per-subset figures."""
    from srnets_lib.book import plots

    everywhere = {}
    for page, names in SERIES.items():
        for order in (sorted(names), sorted(names, reverse=True)):
            colours = plots.palette_of(order)
            assert len(set(colours.values())) == len(names), page  # one figure: every series its own colour
            for name in names & set(plots.COLOURS):
                assert everywhere.setdefault(name, colours[name]) == colours[name] == plots.palette_of([name])[name]
    assert plots.palette_of(["mask train (poe)", "imp (std)"]) == plots.palette_of(["imp (std)", "mask train (poe)"])


def test_a_sparsity_figure_draws_scores_in_percent_with_its_legend_below_the_panels():
    import pandas as pd

    from srnets_lib.book import plots

    df = pd.DataFrame([{"task": "nli", "series": series, "seed": 1, "x": x, "reference": x == 0.0, "id": score,
                        "ood:hans": score - 0.2, "metric": "accuracy", "ood_metric": "accuracy", "id_split": "test"}
                       for series, x, score in (("full bert (std)", 0.0, 0.9), ("mask train (poe)", 0.5, 0.8),
                                                ("mask train (poe)", 0.7, 0.75))])
    fig = plots.sparsity_figure(df, "a figure")
    first = fig.axes[0]
    assert first.get_ylabel() == "accuracy (%)"
    ys = [y for line in first.get_lines() for y in line.get_ydata()]
    assert 75.0 in ys and 90.0 in ys and max(ys) <= 100  # the curve's points and the dashed full model
    # the legend below every panel and its axis labels, never over them
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    legend, = fig.legends
    assert legend.get_window_extent(renderer).y1 <= min(ax.get_tightbbox(renderer).y0 for ax in fig.axes
                                                        if ax.get_visible() and ax.axison) + 1
    plots.pyplot().close(fig)


def test_the_same_run_has_the_same_colour_on_every_page():
    """A run drawn on two pages (4.2's PoE mask is 4.4's mask on the fine-tuned model and 5.1's
    'ft to end'; 4.4's mask on the pre-trained model is 5.1's 'ft step=0') keeps its colour."""
    from srnets_lib.book import plots

    toy, drawn = params.load("params/toy.yaml"), {}
    for name in sections.SECTIONS:
        for p in sections.points(name, toy, full=True):
            colour = plots.palette_of([p.series])[p.series]
            drawn.setdefault(p.config.key(), set()).add((colour, f"{name}: {p.series}"))
    differing = {key: sorted(names) for key, names in drawn.items() if len({c for c, _ in names}) > 1}
    assert differing == {}
