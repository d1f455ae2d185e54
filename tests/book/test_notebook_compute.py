"""Who computes when a page runs: a notebook a person runs in Jupyter computes nothing unasked (it
shows what is missing, what computing it costs, and how); papermill and scripts compute the runs the
store lacks; `compute` says so explicitly, as a bool or as papermill's -p string."""

import json
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from srnets_lib.book import page
from srnets_lib.settings import params as params_lib
from srnets_lib.settings.recipes import Recipes
from srnets_lib.sweeps.executors import execute


def digest(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_a_notebook_run_in_jupyter_computes_nothing_unasked_and_says_what_it_would_cost(store, tiny_params):
    """sec4_2 edited as a reader edits it (its parameters cell: another sparsity), run cell by cell
    through a Jupyter kernel as JupyterLab runs it: the store is not touched, and the page names the
    missing runs with their steps and time and the two ways to compute them."""
    params = params_lib.load(tiny_params)
    execute(Recipes(params).prune_ft("nli", "mask", "poe", 0.5, 1), params.execution.request())
    before = digest(store)
    notebook = nbformat.read(Path("book/sec4_2.ipynb"), as_version=4)
    cell = next(c for c in notebook.cells if "parameters" in c.metadata.get("tags", []))
    cell.source = cell.source.replace("params_file = None", f"params_file = {str(tiny_params)!r}").replace(
        "sparsity = None", "sparsity = 0.6")
    NotebookClient(notebook, timeout=600, kernel_name="python3", resources={"metadata": {"path": "book"}}).execute()
    assert digest(store) == before
    shown = "\n".join(output.get("data", {}).get("text/markdown", "") for c in notebook.cells
                      for output in c.get("outputs", []))
    assert "This notebook did not compute them" in shown and "optimizer steps" in shown, shown
    assert "timed by the store's finished runs of each method" in shown, shown
    assert "set `compute = True` in its parameters cell and run it again, or run it with papermill" in shown


@pytest.mark.parametrize("value, computes", [(True, True), (False, False), ("false", False), ("False", False),
                                             ("true", True), ("0", False), (1, True)])
def test_compute_as_papermill_passes_it(value, computes):
    assert page._computing(value) is computes


def test_a_compute_that_is_no_yes_or_no_is_refused_naming_the_parameter():
    with pytest.raises(ValueError, match="parameter compute='maybe': expected true or false"):
        page._computing("maybe")


def test_outside_a_kernel_a_page_computes_and_srnets_compute_decides_first(monkeypatch):
    monkeypatch.delenv("SRNETS_COMPUTE", raising=False)
    assert page._computing(None) is True  # a script, not a person's notebook
    monkeypatch.setenv("SRNETS_COMPUTE", "0")
    assert page._computing(None) is False
    monkeypatch.setenv("SRNETS_COMPUTE", "sometimes")
    with pytest.raises(ValueError, match="SRNETS_COMPUTE='sometimes': expected 0 or 1"):
        page._computing(None)


def test_the_notebooks_declare_compute_as_the_page_reads_it():
    for path in Path("book").glob("*.ipynb"):
        cells = json.loads(path.read_text())["cells"]
        source = "".join(next((c["source"] for c in cells if "parameters" in c["metadata"].get("tags", [])), []))
        if "compute =" in source:
            assert "None: papermill computes them, Jupyter shows what they cost" in source, path


def test_a_page_asked_for_one_sparsity_judges_it_there_only(store, tiny_params):
    """papermill book/sec4_2.ipynb out.ipynb -p sparsity 0.7: the cases at 0.7, none 'runs missing' at
    0.5, and the page says its default sparsity 0.5 is not in the store."""
    derived = tiny_params.parent / "derived.yaml"
    derived.write_text(f"base: {tiny_params}\nname: derived\npreset: {{sparsities: [0.5, 0.7]}}\n")
    sec = page.load("sec4_2", params_file=str(derived), sparsity="0.7", compute=True)
    cases = [v for v in sec.evaluate() if v.claim == "srnet"]
    assert cases and all("at sparsity 0.7" in v.subject for v in cases)
    assert all(v.outcome != "not measurable" for v in sec.evaluate())
    assert "**Judged at sparsity 0.7 only** (asked for it); its default sparsities 0.5 are not in the run store" \
        in sec.asked_note()


def test_the_numbers_behind_a_page_are_one_call_away(store, tiny_params):
    """sec.data(...) gives the figure's frame, narrowed by series and x, its verdicts as records, and
    refuses a series or a sparsity the page has no finished point of, naming those it has."""
    params = params_lib.load(tiny_params)
    execute(Recipes(params).prune_ft("nli", "mask", "poe", 0.5, 1), params.execution.request())
    sec = page.load("sec4_2", params_file=str(tiny_params), compute=False)
    rows = sec.data("figure", series="mask train (poe)", x=0.5)
    assert len(rows) == 1 and rows.id.iloc[0] == pytest.approx(sec.results.frame.set_index("series").id["mask train (poe)"])
    verdicts = sec.data("verdicts")
    assert {"claim", "subject", "margin", "outcome"} <= set(verdicts.columns)
    with pytest.raises(ValueError, match=r"no such series among the page's finished points; its series values: "
                                         r".*'mask train \(poe\)'"):
        sec.data("figure", series="mask training (poe)")
    with pytest.raises(ValueError, match=r"no such x .*its x values: 0, 0.5"):
        sec.data("figure", x=0.7)
    with pytest.raises(ValueError, match="this page's data are 'figure', 'table'"):
        sec.data("figure 2")
    assert all(hasattr(f, "savefig") for f in sec.figures())


def test_every_committed_notebook_is_output_free_with_the_projects_kernel():
    """What git holds is what nbstripout (the filter make sets up) leaves: no outputs, no execution
    counts, the venv's own python3 kernel, and each page tells an editor where its numbers are."""
    import subprocess
    import sys

    strip = Path(sys.executable).parent / "nbstripout"
    for path in sorted(Path("book").glob("*.ipynb")):
        nb = json.loads(path.read_text())
        assert nb["metadata"]["kernelspec"]["name"] == "python3", path
        code = [c for c in nb["cells"] if c["cell_type"] == "code"]
        assert all(not c.get("outputs") and c.get("execution_count") is None for c in code), path
        stripped = subprocess.run([str(strip), "--keep-id", "-t"], input=path.read_text(), capture_output=True, text=True)
        assert stripped.stdout == path.read_text(), f"{path}: nbstripout would change it"
        if path.stem != "scorecard":
            assert any("sec.data(" in "".join(c["source"]) and "remove-cell" in c["metadata"].get("tags", [])
                       for c in nb["cells"]), path


def test_git_ignores_jupyters_checkpoints_and_strips_saved_outputs():
    assert ".ipynb_checkpoints/" in Path(".gitignore").read_text().splitlines()
    assert "*.ipynb filter=nbstripout" in Path(".gitattributes").read_text().splitlines()
