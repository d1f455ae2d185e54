"""Editing a page in Jupyter, for real: a Jupyter server on a free local port runs book/sec4_2.ipynb
cell by cell in the project's kernel (the venv's python3) with a changed parameter, as JupyterLab
runs it; the page draws its figure, and the numbers behind it come back as a DataFrame."""

import json
import os
from pathlib import Path

import pandas as pd

from srnets_lib.settings import params as params_lib
from srnets_lib.settings.recipes import Recipes
from srnets_lib.sweeps.executors import execute
from srnets_lib.tools.jupyter_run import Server


def test_a_page_runs_cell_by_cell_through_a_jupyter_server_with_a_changed_parameter(store, tiny_params):
    params = params_lib.load(tiny_params)
    execute(Recipes(params).prune_ft("nli", "mask", "poe", 0.5, 1), params.execution.request())
    cells = [c for c in json.loads(Path("book/sec4_2.ipynb").read_text())["cells"] if c["cell_type"] == "code"]
    sources = ["".join(c["source"]) for c in cells]
    sources[0] = sources[0].replace("params_file = None", f"params_file = {str(tiny_params)!r}").replace(
        "seeds = None", "seeds = [1]")  # the reader's edit of the parameters cell
    sources.append("print(sec.data().to_json(orient='records'))")
    with Server(notebook_dir=Path("book"), env={**os.environ, "SRNETS_RUNS": str(store)}) as server:
        outputs = server.run_cells(sources)
    errors = [o for cell in outputs for o in cell if o["output_type"] == "error"]
    assert not errors, errors[0]["traceback"][-3:]
    assert any("image/png" in o.get("data", {}) for cell in outputs for o in cell)  # the figure
    printed = "".join(o["text"] for o in outputs[-1] if o["output_type"] == "stream")
    frame = pd.DataFrame(json.loads(printed))
    assert {"series", "task", "seed", "x", "id"} <= set(frame.columns)
    assert "mask train (poe)" in set(frame.series) and set(frame.seed) == {1}
