"""What a book section is: its points (the runs behind its figure and tables), the figure and
table it shows and the paper's claims it judges; one `Section` subclass per section module."""

from __future__ import annotations

from srnets_lib.book import plots
from srnets_lib.settings.config import RunConfig
from srnets_lib.settings.recipes import Recipes
from srnets_lib.book.sections import claims
from srnets_lib.book.sections.point import Point
from srnets_lib.book.sections.results import Results
from srnets_lib.book.sections.series import full


class Section:
    """A paper section as its notebook (book/<name>.ipynb) shows it. Subclasses declare the
    class attributes and `subnetworks` (or `points`); `figure` and `table` draw the page's usual ones."""

    name: str  # the notebook's stem and the key of its settings in the params file's `sections`
    part: int = 1  # the book's part: 1, the SRNets paper; 2, TAMT (Liu et al., NAACL 2022)
    number: str  # the paper's numbering: "4.2", "C.5"
    title: str
    reproduces: str  # the paper's figure or table
    figure_title: str = ""
    x_name = "sparsity"  # what a point's x is, as its figure's axis and its table's column name it
    claims: tuple = ()  # judged on the page's points, per group
    reference_claims: tuple = ()  # judged on every full model the page holds (section 4.2: all tasks)
    paper_table: str | None = None  # the table of paper_numbers.yaml printed beside the page's own
    full_models = ("std", "poe")  # the losses of the full models drawn as reference lines
    opt_in = False  # computed by `make book-full` only (its runs are over the default build's budget)
    gathered_tasks: tuple = ()  # tasks whose rows the page gathers beside its own (Part II: the probes')
    # beyond the paper (analyses.py): the series whose OOD scores split by subset, and the series the
    # other masks are compared with (Jaccard)
    subset_series: tuple = ()
    structure_against: str = ""

    # --- what the page shows unless asked for others (its params file's choices) -----------
    def tasks(self, params) -> list[str]:
        """This page's tasks (sections.<page>.tasks), else Part I's (sections.tasks), else the preset's."""
        return list(params.sections.page(self.name).tasks or params.sections.tasks or params.preset.tasks)

    def seeds(self, params) -> list[int]:
        """This page's seeds (sections.<page>.seeds), else the preset's."""
        return list(params.sections.page(self.name).seeds or params.preset.seeds)

    @property
    def judged(self) -> tuple[float, ...]:
        """The sparsities the page's claims judge (each claim's `xs`)."""
        return tuple(sorted({x for claim in self.claims for x in getattr(claim, "xs", ())}))

    def sparsities(self, params, full: bool = False) -> list[float]:
        """The preset's; with sections.judged_only, unless `full`, those of them its claims judge."""
        preset = list(params.preset.sparsities)
        if full or not params.sections.judged_only:
            return preset
        return [s for s in preset if any(abs(s - x) < 1e-9 for x in self.judged)] or preset

    def points(self, recipes: Recipes, tasks: list[str], seeds: list[int], sparsities: list[float]) -> list[Point]:
        """For each task and seed: the full models, then the subnetworks."""
        return [p for task in tasks for seed in seeds
                for p in references(recipes, task, seed, self.full_models)
                + self.subnetworks(recipes, task, seed, sparsities)]

    def subnetworks(self, recipes: Recipes, task: str, seed: int, sparsities: list[float]) -> list[Point]:
        raise NotImplementedError

    def opt_in_points(self, recipes: Recipes, tasks: list[str], seeds: list[int], sparsities: list[float]) -> list[Point]:
        """Points of a page that only `make book-full` computes beside its own (Part II: figure 5's masks
        along training, figure 11's second toy backbone); the page draws them once they are in the store."""
        return []

    def subset_points(self, results: Results, series: tuple, sparsity: float) -> list[Point]:
        """The points whose OOD scores split by subset (analysis.subsets): the page's points of
        `series`, its full models and its subnetworks at `sparsity`."""
        return [p for p in results.points if p.task in results.tasks and p.series in series
                and (p.reference or abs(p.x - sparsity) < 1e-9)]

    def figure(self, results: Results) -> list:
        """Metric vs sparsity, mean +- std over seeds, full models as dashed lines."""
        return [plots.sparsity_figure(results.frame, self.figure_title, synthetic=results.synthetic)]

    def table(self, results: Results):
        """Mean +- std over seeds per task, series and x."""
        return plots.table(results.frame)

    def claims_for(self, params) -> tuple:
        """Every claim the page judges (some take a setting of the params file)."""
        return (*self.claims, *self.reference_claims)

    def judge(self, results: Results) -> list:
        """The section's claims judged on the page's tasks (Verdict records)."""
        return claims.judge(results, self.claims)

    def judged_at(self, results: Results) -> str:
        """Markdown: where the page's verdicts are judged, where a reader could take it for another
        point of its figure ("": nowhere else)."""
        return ""

    def remarks(self, results: Results) -> str:
        """Markdown: what the page's figure does not say by itself ("": nothing)."""
        return ""


def references(recipes: Recipes, task: str, seed: int, losses=("std", "poe"), keep_steps: bool = True) -> list[Point]:
    """The full models A_L(f(theta_pt)); the std model keeps its weights after section 5.1's steps
    (`keep_steps`), so 5.1 starts from the same run as section 4.2."""
    params = recipes.p
    keep = params.execution.request(keep_steps=tuple(params.sections.sec5_1.steps))
    return [Point(full(loss), task, seed, 0.0, recipes.full(task, loss, seed), True,
                  request=keep if loss == "std" and keep_steps else None)
            for loss in losses]


def levels(series: str, task: str, seed: int, sparsities, config: RunConfig) -> list[Point]:
    """Points at the levels `sparsities` of one IMP run (section 3.2.1, appendix A.1.1: every
    level is a multiple of imp_delta_s, up to the run's target)."""
    step = config.imp_delta_s
    for s in sparsities:
        if abs(s / step - round(s / step)) > 1e-6 or s > config.sparsity + 1e-9:
            raise ValueError(f"sparsity {s}: an IMP run yields multiples of imp_delta_s={step} up to "
                             f"{config.sparsity} (sections.imp_target)")
    return [Point(series, task, seed, s, config, level=round(s, 6)) for s in sparsities]
