"""The scorecard: a row per claim the book judges, computed from the run store and the paper's
numbers (paper_numbers.yaml), never typed."""

import json
from pathlib import Path

from srnets_lib.book import paper_numbers, scorecard, sections
from srnets_lib.settings import params
from srnets_lib.book.sections.verdict import pct
from srnets_lib.book import runs as book_runs


def test_every_claim_a_page_judges_has_one_entry_of_the_paper_numbers(store):
    """Built on an empty store every verdict is 'not measurable', and the rows are exactly the
    (page, claim) pairs of paper_numbers.yaml, none missing, none left over: one row per pair, or
    one per backbone where the page has several (C.5, as table 6)."""
    toy = params.load("params/toy.yaml")
    card = scorecard.build("params/toy.yaml")
    entries = [(e["page"], e["claim"]) for e in paper_numbers.load()["claims"]]
    assert len(set(entries)) == len(entries)
    per_page = {"appc5": len(toy.sections.appc5.backbones)}
    rows = sorted(e for e in entries for _ in range(per_page.get(e[0], 1)))
    assert sorted(zip(card.frame.page, card.frame.claim_id)) == rows
    assert set(card.frame.verdict) <= {"not measurable", "not built (opt-in page: make book-full)"}
    assert not store.exists()  # gathered, never computed


def test_a_row_reads_the_store_and_the_papers_table(store, tiny_params):
    p = params.load(tiny_params)
    full = [pt for pt in sections.points("sec4_2", p) if pt.reference and pt.task == "nli"]
    assert {pt.series for pt in full} == {"full bert (std)", "full bert (poe)"}
    assert all(o.ok for o in book_runs.compute(full, p))
    std = next(pt for pt in full if pt.series == "full bert (std)")
    final = json.loads((Path(store) / std.config.key() / "final.json").read_text())
    std_id, std_ood = final["id"], next(iter(final["ood"].values()))

    card = scorecard.build(str(tiny_params))
    row = card.frame[(card.frame.page == "sec4_2") & (card.frame.claim_id == "bias-exploited")].iloc[0]
    holds = std_id - std_ood > 0.05 + 0.01
    # nli is judged from the store; paraphrase and factcheck have no runs
    assert row.confirmed == f"{int(holds)} of 3" and row.verdict == ("partly confirmed" if holds else "not confirmed")
    assert row.measured.startswith(f"nli: std full model ID {pct(std_id)} vs OOD {pct(std_ood)}")
    assert row.margin == f"{100 * (std_id - std_ood - 0.05):+.1f} points (1 seed)"
    assert row.paper == "figure only (figures 2 and 3, the full BERT lines)"
    c5 = card.frame[(card.frame.page == "appc5") & (card.frame.claim_id == "bias-exploited")].iloc[0]
    assert c5.paper.startswith("RoBERTa-base, full model, std: MNLI 87.14, HANS 68.33; BERT-large, full model, std:")
