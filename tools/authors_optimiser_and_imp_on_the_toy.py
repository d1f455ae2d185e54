"""What two of the authors' behaviours change on the embedded default (params/toy.yaml), seed 1:

  1. TAMT's IMP on MLM with and without rewinding (tamt.imp_rewind: the toy rewinds, the authors'
     LT_pretrain.py does not): the Jaccard similarity of the two runs' masks at each level, and the
     70% masks' downstream scores (ID test, fine-tuned on each toy task) and held-out MLM loss;
  2. mask training with torch's AdamW and with the authors' (optimizer: adamw / hf_adamw): section
     4.2's mask training (std loss, 70%, on the std fine-tuned NLI model) and TAMT-MLM at 70% (its
     mask fine-tuned on each toy task): the Jaccard similarity of the masks and the score differences.

    SRNETS_RUNS=/tmp/toy-runs python tools/authors_optimiser_and_imp_on_the_toy.py

Runs go to the run store ($SRNETS_RUNS); a second call reads them back. Prints one table per item.
"""

from __future__ import annotations

import time

from srnets_lib.model import pruning
from srnets_lib.settings import params
from srnets_lib.settings.recipes import Recipes
from srnets_lib.store.runs import Run
from srnets_lib.sweeps.executors import execute

TASKS = ("nli", "paraphrase", "factcheck")


def scores(recipes: Recipes, mask, level=None) -> dict[str, float]:
    """The mask's downstream ID test score (x100) on each toy task, and its held-out MLM loss."""
    found = {task: 100 * execute(recipes.transfer(task, mask, 1, level)).id for task in TASKS}
    found["mlm loss"] = execute(recipes.probe(mask, level)).scores["mlm_loss"]
    return found


def row(name: str, values: dict[str, float]) -> str:
    return f"| {name} | " + " | ".join(f"{v:.2f}" if "loss" not in k else f"{v:.4f}" for k, v in values.items()) + " |"


def imp_rewinding(toy: Recipes) -> None:
    rewound = toy.tamt_imp(1)
    kept = rewound.model_copy(update={"imp_rewind": False})
    for config in (rewound, kept):
        execute(config)
    levels = sorted(Run(rewound).result().levels, key=float)
    similarity = {level: pruning.jaccard(Run(rewound).masks(float(level)), Run(kept).masks(float(level)))
                  for level in levels}
    print("IMP on MLM, Jaccard(rewound, kept) by level:", ", ".join(f"{k}: {v:.4f}" for k, v in similarity.items()))
    top = toy.p.tamt.imp_target
    a, b = scores(toy, rewound, top), scores(toy, kept, top)
    print("| IMP at 70% | " + " | ".join(a) + " |")
    print(row("rewound (the toy)", a)), print(row("kept (the authors')", b))
    print(row("kept - rewound", {k: b[k] - a[k] for k in a}))


def mask_optimisers(toy: Recipes) -> None:
    runs = {"section 4.2 mask (std, 70%, nli)": toy.prune_ft("nli", "mask", "std", 0.7, 1),
            "TAMT-MLM (70%)": toy.tamt("mlm", 0.7, 1)}
    for name, torch_adamw in runs.items():
        authors = torch_adamw.model_copy(update={"optimizer": "hf_adamw"})
        results = [execute(c) for c in (torch_adamw, authors)]
        similarity = pruning.jaccard(Run(torch_adamw).masks(), Run(authors).masks())
        print(f"{name}: Jaccard(adamw, hf_adamw) = {similarity:.4f}")
        if torch_adamw.task == "corpus":
            a, b = scores(toy, torch_adamw), scores(toy, authors)
        else:
            a, b = ({"ID test": 100 * r.id, **{k: 100 * v for k, v in r.ood.items()}} for r in results)
        print("| | " + " | ".join(a) + " |")
        print(row("adamw (the toy)", a)), print(row("hf_adamw (the authors')", b))
        print(row("hf_adamw - adamw", {k: b[k] - a[k] for k in a}))


if __name__ == "__main__":
    started = time.time()
    toy = Recipes(params.load("params/toy.yaml"))
    imp_rewinding(toy)
    mask_optimisers(toy)
    print(f"{time.time() - started:.0f} s")
