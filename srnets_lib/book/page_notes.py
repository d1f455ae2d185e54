"""The notes a page opens with, besides its verdicts: the points the store lacks (and who computes
them, at what cost), the opt-in points `make book-full` adds, and, where a page was asked for some
sparsities only, which of its defaults the store holds."""

from __future__ import annotations

from collections import Counter

from srnets_lib.book import banner, runs, sections
from srnets_lib.book.sections import gather


def compute_hint(page) -> str:
    """How a page's missing points are computed: what it costs where a person's notebook held back."""
    if page.held_back:
        return (". This notebook did not compute them (a notebook a person runs computes nothing unasked): "
                f"computing them takes {runs.cost(page.results.missing, page.params).words()}; set `compute = True` "
                "in its parameters cell and run it again, or run it with papermill. A finished run is never "
                "replaced while it computes: an interruption leaves every finished run as it was.")
    if page.section.opt_in:
        return ". An opt-in page: `make book-full` computes them (or this notebook with `compute=True`)."
    return ". `make book` (its sweep) or this notebook with `compute=True` computes them."


def opt_in(page) -> str:
    """Markdown: which of the page's points are opt-in (other sparsities of its curves, Part II's
    masks along training or other backbones), and how to compute them."""
    def listed(xs) -> str:
        words = [f"{x:g}" for x in xs]
        return " and ".join([", ".join(words[:-1]), words[-1]] if len(words) > 1 else words)

    plural = "ies" if len(page.results.sparsities) > 1 else "y"
    others = sorted({p.x for p in page.results.opt_in if p.x not in page.results.sparsities and not p.group})
    groups = list(dict.fromkeys(p.group for p in page.results.opt_in if p.group))
    which = [f"the curves' points at {listed(others)}"] * bool(others) + (
        [f"the points of {', '.join(groups[:3])}{' ...' if len(groups) > 3 else ''}"] * bool(groups))
    return (f"The default build computes this page at sparsit{plural} {listed(page.results.sparsities)}, where its claims "
            f"are judged (`sections.judged_only` in `{banner.shown_path(page.params.source)}`: the CPU budget). "
            f"Opt-in: {' and '.join(which) or 'its other points'}; {len(page.results.opt_in_missing)} of {len(page.results.opt_in)} "
            "are not in the run store; `make book-full` computes them, and this page then draws them.")


def asked(page) -> str | None:
    """Markdown, for a page asked for its sparsities: its verdicts are judged there only, and which
    of its default sparsities the store holds points at (judged where it runs with its defaults)."""
    default = sections.resolve(page.section.name, page.params, page.results.tasks, page.results.seeds, None)[2]
    others = [s for s in default if not any(abs(s - x) < 1e-9 for x in page.results.sparsities)]
    if not page.results.asked or not others:
        return None
    held = [s for s in others if not gather.missing(sections.points(page.section.name, page.params, page.results.tasks,
                                                                   page.results.seeds, [s]))]
    words = ", ".join(f"{s:g}" for s in held)
    return (f"**Judged at sparsity {', '.join(f'{s:g}' for s in page.results.sparsities)} only** (asked for it); "
            + (f"the run store also holds this page's points at {words}, judged where the notebook runs with "
               "its default sparsities." if held else
               f"its default sparsities {', '.join(f'{s:g}' for s in others)} are not in the run store."))


def missing(page, failed=()) -> str:
    counts = Counter(p.series for p in page.results.missing)
    text = (f"**{len(page.results.missing)} of the {len(page.results.points)} points of this page have no finished run** in "
            f"the run store (`{banner.shown_store()}`); the figure, tables and verdicts below leave them out: "
            + ", ".join(f"{series} ({n})" for series, n in counts.items()) + compute_hint(page))
    reasons = {p.config.key(): gather.why_missing(p.config) for p in page.results.missing}
    reasons.update({o.job: f"failed: {o.error}" for o in failed if o.job not in reasons or not reasons[o.job]})
    return text + "".join(f"\n- run `{key}` {why}" for key, why in reasons.items() if why)


def caption(page, fig) -> str:
    """What a figure is: the paper's figure it redraws and what this build put in it."""
    title = fig._suptitle.get_text() if fig._suptitle is not None else page.section.title
    data = "synthetic data and the packaged MiniLM, not the paper's" if page.results.synthetic else "this build's runs"
    seeds = f"{len(page.results.seeds)} seed{'s' * (len(page.results.seeds) != 1)}"
    return (f"*{title}.* Redraws the paper's {page.section.reproduces} from {data}: {', '.join(page.results.tasks)}, "
            f"{seeds}; each value is a mean over seeds (with a ± std band or bar where there are several).")
