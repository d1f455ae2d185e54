"""The model card (README.md) of an exported run: the Hub's YAML metadata (base model, pipeline,
datasets, metrics, model-index results), then what the model is (the paper and section it
reproduces, for the toy that it is a synthetic-data model and not the paper's), how to load it, its
exact settings and the commands that recompute and re-export it, its ID and OOD scores with the
seed spread of its point where the store has the other seeds, its sparsity overall and per layer
(heads and neurons emptied: mask_structure.py), where it ran, the check of the folder against the
run, and its size, latency and memory measured beside the dense model (measure.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import yaml

from srnets_lib import paths
from srnets_lib.book import mask_structure, sections
from srnets_lib.book.banner import shown_path
from srnets_lib.book.sections import gather
from srnets_lib.engine import kinds
from srnets_lib.export.check import Check
from srnets_lib.export.hf import Folder, backbone_layers
from srnets_lib.export.rebuild import Rebuilt
from srnets_lib.export.targets import Target
from srnets_lib.settings.params import Params

PAPERS = {
    "srnets": ("A Win-win Deal: Towards Sparse and Robust Pre-trained Language Models", "Liu et al., NeurIPS 2022",
               "@inproceedings{liu2022winwin,\n  title = {A Win-win Deal: Towards Sparse and Robust Pre-trained Language "
               "Models},\n  author = {Liu, Yuanxin and Meng, Fandong and Lin, Zheng and Li, Jiangnan and Fu, Peng and "
               "Cao, Yanan and Wang, Weiping and Zhou, Jie},\n  booktitle = {Advances in Neural Information Processing "
               "Systems},\n  year = {2022}\n}"),
    "tamt": ("Learning to Win Lottery Tickets in BERT Transfer via Task-agnostic Mask Training",
             "Liu et al., NAACL 2022 (TAMT)",
             "@article{liu2022tamt,\n  title = {Learning to Win Lottery Tickets in BERT Transfer via Task-agnostic Mask "
             "Training},\n  author = {Liu, Yuanxin and Meng, Fandong and Lin, Zheng and Fu, Peng and Cao, Yanan and "
             "Wang, Weiping and Zhou, Jie},\n  journal = {CoRR},\n  volume = {abs/2204.11218},\n  year = {2022}\n}"),
}
# the Hub names and licences of the backbones the params files use
BASE_MODELS = {"packaged": ("sentence-transformers/all-MiniLM-L6-v2", "apache-2.0"),
               "bert-base-uncased": ("google-bert/bert-base-uncased", "apache-2.0"),
               "bert-large-uncased": ("google-bert/bert-large-uncased", "apache-2.0"),
               "roberta-base": ("FacebookAI/roberta-base", "mit")}
# the Hub datasets of each task's real data (params/paper.yaml; data/local.py for the files)
DATASETS = {"nli": ["nyu-mll/glue", "jhu-cogsci/hans"], "paraphrase": ["nyu-mll/glue", "google-research-datasets/paws"],
            "factcheck": ["fever/fever"], "squad": ["rajpurkar/squad"], "corpus": ["Salesforce/wikitext"],
            **{t: ["nyu-mll/glue"] for t in ("cola", "sst2", "rte", "mrpc", "stsb", "mnli")}}


@dataclass
class Facts:
    """Everything a card says, gathered by the export (cli.py)."""

    target: Target
    rebuilt: Rebuilt
    folder: Folder
    check: Check
    params: Params
    command: str  # the export command that wrote this folder
    spread: dict[str, tuple[float, float, int]] = field(default_factory=dict)  # split -> mean, std, seeds
    measurement: str | None = None  # markdown (measure.py), None where not measured

    @property
    def paper(self) -> str:
        config, page = self.rebuilt.config, self.target.page or ""
        return "tamt" if page.startswith("tamt") or kinds.of(config.task).task_agnostic or config.task_agnostic_mask else "srnets"

    @property
    def synthetic(self) -> bool:
        return self.rebuilt.config.data.source == "synthetic"


def render(facts: Facts) -> str:
    """The card: YAML front matter, then its sections."""
    meta = yaml.safe_dump(front_matter(facts), sort_keys=False, allow_unicode=True)
    parts = [f"---\n{meta}---", title(facts), usage(facts), scores(facts), sparsity(facts.rebuilt),
             settings(facts), provenance(facts), measured(facts), sharing(), citation(facts)]
    return "\n\n".join(p for p in parts if p).rstrip() + "\n"


def score_rows(facts: Facts) -> list[tuple[str, str, float, str]]:
    """(split, metric, value, 'mean ± std (n seeds)' or '') for the ID split and each OOD set, x100
    as the book shows them; a corpus run's held-out MLM and KD losses as they are (TAMT section 3.4)."""
    r, result = facts.rebuilt.scores, facts.rebuilt.result
    if facts.rebuilt.kind.task_agnostic:
        return [(f"held-out {k}", k, v, "") for k, v in result.scores.items()]
    rows = [(f"{result.id_split} (ID)", result.metric, r.id)] + [(k, result.ood_metric, v) for k, v in r.ood.items()]
    out = []
    for split, metric, value in rows:
        m = facts.spread.get(split.split(" ")[0])
        spread = f"{100 * m[0]:.1f} ± {100 * m[1]:.1f} ({m[2]} seeds)" if m and m[2] > 1 else ""
        out.append((split, f"{metric} (x100)", 100 * value, spread))
    return out


def front_matter(facts: Facts) -> dict:
    """The Hub's metadata: library, pipeline, base model, licence, tags, datasets, metrics, results."""
    config, rebuilt = facts.rebuilt.config, facts.rebuilt
    base = BASE_MODELS.get(config.backbone)
    meta = {"library_name": "transformers", "pipeline_tag": rebuilt.kind.pipeline_tag}
    if base:
        meta.update({"base_model": base[0], "license": base[1]})
    meta["tags"] = ["srnets", "pruning", "sparse", f"sparsity-{round(100 * rebuilt.scores.sparsity)}",
                    config.method, f"loss-{config.loss}"] + (["synthetic-data"] if facts.synthetic else [])
    if not facts.synthetic:
        meta["datasets"] = DATASETS.get(config.task, [])
    rows = score_rows(facts)
    meta["metrics"] = list(dict.fromkeys(metric.removesuffix(" (x100)") for _, metric, _, _ in rows))
    kind = "synthetic " if facts.synthetic else ""
    meta["model-index"] = [{"name": facts.folder.path.name, "results": [
        {"task": {"type": meta["pipeline_tag"]},
         "dataset": {"name": f"{kind}{config.task}: {split}", "type": f"srnets-synthetic-{config.task}"
                     if facts.synthetic else (DATASETS.get(config.task) or [config.task])[0]},
         "metrics": [{"type": metric.removesuffix(" (x100)"), "value": round(value, 2), "name": f"{split} {metric}"}]}
        for split, metric, value, _ in rows]}]
    return meta


def title(facts: Facts) -> str:
    """What the model is and which paper section it reproduces; the toy's warning."""
    config, rebuilt, target = facts.rebuilt.config, facts.rebuilt, facts.target
    paper, cited, _ = PAPERS[facts.paper]
    what = (f"a {100 * rebuilt.scores.sparsity:.1f}%-sparse subnetwork" if rebuilt.masks
            else "a dense model") + f" ({config.method}, loss {config.loss}) of `{config.backbone}` on task `{config.task}`"
    lines = [f"# {facts.folder.path.name}", "", f"This folder holds {what}, exported from the srnets run store "
             f"(run `{config.key()}`{f', IMP level {rebuilt.level:g}' if rebuilt.level is not None else ''}). "
             f"It is the runnable companion's reproduction of *{paper}* ({cited})."]
    if target.point is not None:
        section = sections.get(target.page)
        p = target.point
        lines.append(f"It is the point of section {section.number} ({section.title}; the paper's {section.reproduces}) "
                     f"in series `{p.series}`, task `{p.task}`, x = {p.x:g}, seed {p.seed} (book page "
                     f"`book/{target.page}.ipynb`, params `{shown_path(facts.params.source)}`).")
    if facts.synthetic:
        backbone = {"packaged": "all-MiniLM-L6-v2, a sentence embedder", "tiny": "a tiny random BERT, as the tests use"}.get(
            config.backbone, f"`{config.backbone}`")
        kept = f", its first {config.num_layers} layers" if config.num_layers else ""
        lines += ["", "**A synthetic-data model, not the paper's.** It was trained on data srnets generates "
                  "(`srnets_lib/data/synthetic.py`: planted-bias tasks, and their sentences as the corpus) with a "
                  f"small backbone ({backbone}{kept}). Its scores are not the paper's numbers; it shows the method "
                  "end to end."]
    return "\n".join(lines)


def usage(facts: Facts) -> str:
    """How to load it with transformers alone, and how its inputs were tokenised."""
    folder, config = facts.folder, facts.rebuilt.config
    trust = ", trust_remote_code=True" if folder.remote_code else ""
    lines = ["## Use", "", "```python", f"from transformers import AutoTokenizer, {folder.auto_class}", "",
             f'model = {folder.auto_class}.from_pretrained("path/to/this/folder"{trust})',
             f'tokenizer = AutoTokenizer.from_pretrained("path/to/this/folder"{trust})',
             f"outputs = model(**{facts.rebuilt.kind.example_inputs})", "```", "",
             f"The run tokenised its examples this way: truncated to {config.max_length} tokens (the tokenizer's "
             "`model_max_length`), a second text only where the task has pairs."]
    if folder.remote_code:
        lines.append("The classifier reads the masked mean of the last token states (the run's `pooling: mean`), "
                     "which no transformers architecture does: `modeling_mean_pooled.py` here defines it (torch and "
                     "transformers only), registered in `config.json`'s `auto_map` under its own `model_type`, so "
                     "loading needs `trust_remote_code=True` and fails without it rather than pooling the [CLS] state.")
    total, kept = backbone_layers(config.backbone), facts.rebuilt.model.config.num_hidden_layers
    layers = (f"the first {kept} Transformer layers of the backbone's {total} (the run's `num_layers`)"
              if config.num_layers and total and kept < total else f"all {kept} Transformer layers of the backbone")
    lines.append(f"`config.json` keeps {layers}; its `srnets` entry names the run, backbone and pooling.")
    return "\n".join(lines)


def scores(facts: Facts) -> str:
    rows = score_rows(facts)
    lines = ["## Scores", "", "| split | metric | this model | its point over seeds |", "| --- | --- | --- | --- |"]
    lines += [f"| {s} | {m} | {v:.4g} | {spread or '–'} |" if facts.rebuilt.kind.task_agnostic else
              f"| {s} | {m} | {v:.1f} | {spread or '–'} |" for s, m, v, spread in rows]
    result = facts.rebuilt.result
    notes = [f"The ID score is read on the `{result.id_split}` split"
             + (" (synthetic data: an ID test split that checkpoint selection never reads)" if result.id_split == "test"
                else " (the dev set checkpoints were selected on, as the authors' scripts report)") + "."]
    if facts.rebuilt.kind.task_agnostic:
        notes = ["A task-agnostic run on the corpus (TAMT section 3.4): its held-out MLM and KD losses on the corpus' "
                 "dev blocks, lower is better."]
    if result.scores and facts.rebuilt.level is None and not facts.rebuilt.kind.task_agnostic:
        notes.append("Other scores: " + ", ".join(f"{k} {v:.4f}" for k, v in result.scores.items()) + ".")
    if not any(r[3] for r in rows):
        notes.append("No spread: the run store holds no other seed of this point.")
    return "\n".join(lines + [""] + notes)


def sparsity(rebuilt: Rebuilt) -> str:
    """Overall, per masked matrix outside the layers, and per layer with heads and neurons emptied."""
    if not rebuilt.masks:
        return "## Sparsity\n\nDense: no mask (sparsity 0)."
    s = rebuilt.scores
    lines = ["## Sparsity", "", f"{100 * s.sparsity:.2f}% of the Transformer matrices' weights are zero (the paper's "
             "denominator: Q, K, V, attention output, FFN in and out of every layer)"
             + (f"; per matrix {100 * rebuilt.result.sparsity_min:.2f}-{100 * rebuilt.result.sparsity_max:.2f}%"
                if rebuilt.level is None else "") + ". Unstructured: any weight may be pruned."]
    outside = {n: m for n, m in rebuilt.masks.items() if not mask_structure.LAYER.search(n)}
    lines += [f"- `{n}`: {100 * (1 - m.float().mean().item()):.1f}% zero" for n, m in outside.items()]
    per_layer = mask_structure.by_layer(rebuilt.masks)
    if per_layer and all(len(m) == 6 for m in per_layer.values()):
        emptied = mask_structure.emptied(rebuilt.masks, rebuilt.model.config.num_attention_heads).set_index("layer")
        lines += ["", "| layer | zero weights | heads emptied | FFN neurons emptied |", "| --- | --- | --- | --- |"]
        for layer, matrices in per_layer.items():
            zero = 1 - sum(int(m.sum()) for m in matrices.values()) / sum(m.numel() for m in matrices.values())
            row = emptied.loc[layer]
            lines.append(f"| {layer} | {100 * zero:.1f}% | {100 * row['heads emptied']:.1f}% | "
                         f"{100 * row['neurons emptied']:.1f}% |")
        lines.append(f"\nA head or neuron counts as emptied when it keeps under {mask_structure.NEARLY_EMPTY:.0%} of its "
                     f"weights (`srnets_lib/book/mask_structure.py`). {two_four(rebuilt.masks)}")
    return "\n".join(lines)


def two_four(masks: dict) -> str:
    """Whether the mask is semi-structured 2:4 (at most 2 kept of every 4 consecutive input weights)."""
    groups = ok = 0
    for name, kept in masks.items():
        if mask_structure.LAYER.search(name) and kept.dim() == 2 and kept.shape[1] % 4 == 0:
            per_group = kept.reshape(kept.shape[0], -1, 4).sum(-1)
            groups, ok = groups + per_group.numel(), ok + int((per_group <= 2).sum())
    if not groups:
        return ""
    verdict = "it is" if ok == groups else "it is not"
    return (f"Semi-structured 2:4 (what sparse GPU kernels accelerate): {100 * ok / groups:.1f}% of the groups of 4 "
            f"consecutive input weights keep at most 2, so {verdict} a 2:4 mask.")


def settings(facts: Facts) -> str:
    """The run's settings that differ from the defaults, its dependencies, and the commands."""
    config = facts.rebuilt.config
    own = config.model_dump(mode="json", exclude_defaults=True, exclude={"init_from", "mask_from", "teacher"})
    deps = {k: getattr(config, k).key() for k in ("init_from", "mask_from", "teacher") if getattr(config, k) is not None}
    lines = ["## Settings", "", "The run's settings that differ from `RunConfig`'s defaults (`config.yaml` beside this "
             "card holds all of them, resolved):", "", "```yaml", yaml.safe_dump(own, sort_keys=True).rstrip(), "```"]
    if deps:
        lines += ["", "It starts from the runs " + ", ".join(f"`{k}`: `{v}`" for k, v in deps.items()) + "."]
    lines += ["", "**Recompute and export it again.**", ""] + [f"- {c}" for c in commands(facts)]
    lines.append(f"\nWeights: {facts.rebuilt.weights}."
                 + (f" Note: {facts.rebuilt.recomputed}." if facts.rebuilt.recomputed else ""))
    return "\n".join(lines)


def commands(facts: Facts) -> list[str]:
    target, source = facts.target, shown_path(facts.params.source)
    found = []
    if target.point is not None:
        p, page = target.point, target.page
        sparsity = f" -p sparsity {p.x:g}" if _declares(page, "sparsity") and p.x else ""
        seeds = "" if page.startswith("tamt") else f' -p seeds "[{p.seed}]"'
        other = "" if source == "params/toy.yaml" else f" -p params_file {source}"
        found.append(f"The point, in its own process: `papermill book/{page}.ipynb out.ipynb{sparsity}{seeds} "
                     f"-p tasks \"[{p.task}]\"{other}` (with the page's other points at that setting)")
        found.append(f"Every point of its page: `python -m srnets_lib sweep book/{page}.ipynb --params {source}`")
    found.append(f"This folder: `{facts.command}`")
    return found


def _declares(page: str, parameter: str) -> bool:
    cells = json.loads((paths.BOOK_DIR / f"{page}.ipynb").read_text())["cells"]
    cell = next(c for c in cells if "parameters" in c.get("metadata", {}).get("tags", []))
    return any(line.lstrip().startswith(f"{parameter} =") for line in "".join(cell["source"]).splitlines())


def provenance(facts: Facts) -> str:
    """Where the run computed, in which precision, and the check of this folder against it."""
    run, config, check = facts.rebuilt.result, facts.rebuilt.config, facts.check
    where = ", ".join(f"{k} {v}" for k, v in run.execution.items() if k != "compile_fallback")
    lines = ["## Where it ran, and the check of this folder", "",
             f"Trained in precision `{config.precision}` ({where}); {run.steps_run} steps in {run.seconds:.0f} s. "
             "The weights here are float32; fp32 results differ across CPUs and thread counts by float noise "
             "(docs/MEASUREMENTS.md of srnets)."]
    lines.append(f"Loaded back with transformers alone, this folder's outputs differ from the srnets model's by at most "
                 f"{check.max_output_difference:.2e} on a probe batch.")
    if check.agreement:
        lines.append("It predicts the run's stored prediction on " + ", ".join(
            f"{a}/{n} `{split}` examples" for split, (a, n) in check.agreement.items()) + ".")
    return "\n".join(lines)


def measured(facts: Facts) -> str:
    if facts.measurement is not None:
        return facts.measurement
    why = "a dense model: nothing to compare" if not facts.rebuilt.masks else "exported with `--no-measure`"
    return (f"## Size, latency and memory\n\nNot measured for this folder ({why}); docs/MEASUREMENTS.md of srnets "
            "has the toy's and a BERT-base-shaped model's.")


def sharing() -> str:
    return ("## Sharing it\n\nUploading is your step (this export never reaches the network): "
            "`huggingface-cli upload <user>/<name> path/to/this/folder`, or in Python "
            "`model.push_to_hub(\"<user>/<name>\")` and `tokenizer.push_to_hub(...)` after loading it as above "
            "(then copy `mask.npz`, `config.yaml` and this README too).")


def citation(facts: Facts) -> str:
    return f"## Citation\n\n```bibtex\n{PAPERS[facts.paper][2]}\n```"


def seed_spread(target: Target, params: Params) -> dict[str, tuple[float, float, int]]:
    """Per split of the target's point: mean, sample std (as the book's tables) and count over the
    seeds of that point the store has finished."""
    p = target.point
    if p is None:
        return {}
    siblings = [q for q in sections.points(target.page, params, full=True)
                if (q.series, q.task, q.x, q.group) == (p.series, p.task, p.x, p.group)]
    df = gather.frame(siblings)
    if df.empty:
        return {}
    columns = {"test" if df.id_split.iloc[0] == "test" else "dev": "id",
               **{c[len("ood:"):]: c for c in df.columns if c.startswith("ood:")}}
    counts = {c: int(df[c].notna().sum()) for c in columns.values()}
    return {split: (float(df[c].mean()), float(df[c].std()) if counts[c] > 1 else 0.0, counts[c])
            for split, c in columns.items()}
