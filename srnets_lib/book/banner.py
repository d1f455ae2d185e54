"""What the numbers on a book page are: the banner (synthetic toy results, a derived params
file's, or a paper-scale reproduction) and the scope line (tasks or seeds other than the preset's).
The sentences judging the paper's claims are the sections' verdicts (verdicts/verdict.py)."""

from __future__ import annotations

from pathlib import Path

from srnets_lib import paths

SYNTHETIC_NOTE = ("**These results come from synthetic planted-bias data and a small backbone "
                  "(all-MiniLM-L6-v2, a sentence embedder trained on sentence pairs including NLI "
                  "data, truncated to its first layers). They are not the paper's numbers.**")


def synthetic(params) -> bool:
    """Whether the params file's runs read the synthetic tasks (the embedded default's data)."""
    return params.defaults.get("data", {}).get("source", "synthetic") == "synthetic"


def shown_path(source: str) -> str:
    """A params file as a reader would type it: relative to the project when inside it, else its
    file name (a page is read on other machines: never the builder's own path)."""
    path = Path(source).resolve()
    return path.relative_to(paths.PROJECT_ROOT).as_posix() if path.is_relative_to(paths.PROJECT_ROOT) else path.name


def shown_store() -> str:
    """The run store as a page names it: `runs/` of the checkout, else `$SRNETS_RUNS`, never the
    builder's own path (a page is read on other machines)."""
    root = paths.runs_root()
    return "runs/" if root == paths.PROJECT_ROOT / "runs" else "$SRNETS_RUNS"


def banner(params) -> str:
    """What the numbers on a page are: synthetic toy results, a derived params file's, or a
    paper-scale reproduction (never the paper's own published numbers)."""
    if synthetic(params):
        return SYNTHETIC_NOTE
    if params.name != "paper":
        return (f"**These results come from `{shown_path(params.source)}` ({params.name}: {params.description.strip()}). "
                "They are not the paper's settings and not the paper's numbers.**")
    return ("**These results are this build's reproduction at the paper's settings (`params/paper.yaml`), "
            "computed from the run store; the paper's own figures are not reproduced here.**")


def scope(params, tasks, seeds, section: str = "") -> str:
    """A line for a page whose tasks or seeds are not the preset's (the params file's `sections`);
    Part II's pages are compared with its own block (`tamt`: downstream tasks, mask seeds)."""
    parts = []
    part_two = section.startswith("tamt")
    defaults = (params.tamt.tasks, params.tamt.mask_seeds) if part_two else (params.preset.tasks, params.preset.seeds)
    for what, chosen, preset in (("task", list(tasks), list(defaults[0])), ("seed", list(seeds), list(defaults[1]))):
        if chosen != preset:
            parts.append(f"{what}{'s' if len(chosen) > 1 else ''} {', '.join(map(str, chosen))} "
                         f"(the {'default' if part_two else 'preset'}'s: {', '.join(map(str, preset))})")
    if not parts:
        return ""
    block = "tamt" if part_two else "sections"
    return f"\n\nThis page shows {' and '.join(parts)}, as `{block}` in `{shown_path(params.source)}` chooses."
