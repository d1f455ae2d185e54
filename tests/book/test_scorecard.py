"""The scorecard: a row per claim the book judges, computed from the run store and the paper's
numbers (paper_numbers.yaml), never typed."""

import json
import re
from pathlib import Path

import pytest

from srnets_lib.book import paper_numbers, scorecard, sections
from srnets_lib.settings import params
from srnets_lib.book.verdicts.verdict import STATEMENTS, claim_outcomes, pct
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
    nli = next(v for v in card.verdicts["sec4_2"] if v.claim == "bias-exploited" and v.task == "nli")
    margin = std_id - std_ood - 0.05
    assert nli.margin == pytest.approx(margin) and nli.noise == nli.sampling > 0  # one seed: the predictions' noise
    # the rule: within noise when |margin| <= 2 standard errors, else confirmed when it clears 1 point
    word = "within noise" if abs(margin) <= 2 * nli.noise else "confirmed" if margin >= 0.01 else "not confirmed"
    assert nli.outcome == word
    # nli is judged from the store; paraphrase and factcheck have no runs
    assert row.confirmed == (f"{int(word == 'confirmed')} of 3 confirmed"
                             + (f", 1 {word}" if word != "confirmed" else "") + ", 2 not measurable")
    assert row.verdict == ("partly confirmed" if word == "confirmed" else word)
    assert row.measured.startswith(f"nli: std full model ID {pct(std_id)} vs OOD {pct(std_ood)}")
    assert row.margin.startswith(f"{100 * margin:+.1f} points ± {100 * nli.noise:.1f} points (1 seed)")
    assert row.alone == "1 seed"
    assert row.paper.startswith("figure only: the std full BERT") and row.paper.endswith(
        "(figures 2 and 3, the full BERT lines)")
    c5 = card.frame[(card.frame.page == "appc5") & (card.frame.claim_id == "bias-exploited")].iloc[0]
    assert c5.paper.startswith("RoBERTa-base, full model, std: MNLI 87.14, HANS 68.33; BERT-large, full model, std:")


def test_the_scorecard_is_a_line_per_claim_and_every_page_agrees_with_it(store, tiny_params):
    """Glanceable: one table line per claim with a coloured mark and its outcome, a link to its page,
    the rule in words (its thresholds' values, never their names), the margin with its unit. Each
    page's summary lists its claims with the outcome the scorecard gives them (both read
    verdict.claim_outcomes: one outcome per claim, computed once) and links back to their line."""
    p = params.load(tiny_params)
    full = [pt for pt in sections.points("sec4_2", p) if pt.reference and pt.task == "nli"]
    assert all(o.ok for o in book_runs.compute(full, p))
    card = scorecard.build(str(tiny_params))
    lines = re.findall(r'<tr id="([^"]+)" class="srnets-claim" data-page="([^"]+)" data-claim="([^"]+)" '
                       r'data-group="([^"]*)" data-outcome="([^"]+)">(.*?)</tr>', card.table().text, re.S)
    assert len(lines) == len(card.frame)
    outcomes = {}
    for anchor, page, claim, group, word, cells in lines:
        assert f'title="{word}">' in cells and "color: #" in cells  # the coloured mark
        assert f'<a href="{page}.html">' in cells
        outcomes[(page, claim, group)] = (word, anchor)
    for statement, rule in zip(card.frame.claim_id, card.frame.rule):
        assert not any(name in rule for name in STATEMENTS[statement].thresholds) and " = " not in rule
    assert all(m == "n/a" or re.match(r"[+-]\d+\.\d+ (points|%|nats|of rho) ", m) for m in card.frame.margin)
    judged = 0
    for name, page in card.pages.items():
        listed = re.findall(r'data-page="([^"]+)" data-claim="([^"]+)" data-group="([^"]*)" data-outcome="([^"]+)">'
                            r'.*?<a href="scorecard.html#([^"]+)">', page.summary().text)
        assert len(listed) == len({(c, g) for c, g, *_ in claim_outcomes(card.verdicts[name])})
        for page_name, claim, group, word, anchor in listed:
            assert outcomes[(page_name, claim, group)] == (word, anchor)
            judged += word not in ("not measurable", "not built (opt-in page: make book-full)")
    assert judged >= 2  # sec4_2's two full-model claims are judged on nli
