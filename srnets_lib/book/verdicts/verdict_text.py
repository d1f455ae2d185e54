"""How a page writes its verdicts (verdict.py decides them): each case's sentence with its margin,
standard error and seeds, the page's opening summary, and one line per claim with its coloured
outcome and a link to its row of the scorecard."""

from __future__ import annotations

from srnets_lib.book.verdicts.verdict import (NOISE, STATEMENTS, UNITS, Verdict, anchor, claim_outcomes, counted,
                                              digits, shown, size)

# each outcome's mark and colour, as every page and the scorecard show it
MARKS = {"confirmed": ("\u25cf", "#1a7f37"), "partly confirmed": ("\u25d0", "#0969da"),
         "within noise": ("\u25cc", "#9a6700"), "not confirmed": ("\u2715", "#cf222e"),
         "not measurable": ("\u2013", "#6e7781"), "not built": ("\u25cb", "#6e7781")}


def mark(word: str) -> str:
    """An outcome's coloured mark (HTML)."""
    symbol, colour = MARKS[next((k for k in MARKS if word.startswith(k)), "not measurable")]
    return f'<span style="color: {colour}; font-weight: bold" title="{word}">{symbol}</span>'


def badge(word: str) -> str:
    """An outcome's mark and its word, coloured (HTML)."""
    colour = MARKS[next((k for k in MARKS if word.startswith(k)), "not measurable")][1]
    return f'{mark(word)} <span style="color: {colour}; font-weight: bold">{word}</span>'


def noise_text(v: Verdict, extra: int = 0) -> str:
    """The margin's standard error and where it comes from."""
    if v.noise is None:
        return "standard error unknown: no stored predictions behind it, and one seed"
    sources = ([(v.sampling, "the stored predictions")] if v.sampling is not None else []) + (
        [(v.seed_noise, f"the {len([m for m in v.seed_margins if m is not None])} seeds' margins")]
        if v.seed_noise is not None else [])
    if len(sources) == 1:
        return f"standard error {size(v.noise, v.unit, extra)}, from {sources[0][1]}"
    return (f"standard error {size(v.noise, v.unit, extra)} ("
            + " and ".join(f"{size(e, v.unit, extra)} from {where}" for e, where in sources) + ")")


def parts_text(v: Verdict) -> str:
    """Each part of a rule of several: its margin and standard error (over the seeds where there
    are several), so a part the seeds disagree on is seen."""
    if len(v.parts) < 2:
        return ""
    noise = v.part_noise
    return "; its parts " + ", ".join(f"{name} {shown(m, v.unit)}" + (f" ± {size(noise[name], v.unit)}"
                                                                         if noise[name] is not None else "")
                                     for name, m in v.parts.items())


def _margin(v: Verdict) -> str:
    """The margin sentence: over its thresholds (more digits where the unit's would misread the
    comparison with its noise; a tie at the printed precision named), its parts, its standard error,
    the seeds behind it, how many clear it alone."""
    if v.margin is None:
        return ""
    extra = digits(v.margin, v.noise, v.unit, v.outcome == "within noise")
    margin = shown(v.margin, v.unit, extra)
    tie = (f", a tie at the printed precision ({shown(v.margin, v.unit, extra + 2)})"
           if float(margin.split()[0].rstrip("%")) == 0 else "")
    alone = (f"; {v.seeds_clearing} of {len(v.seed_margins)} seeds clear it alone ("
             + ", ".join("n/a" if m is None else shown(m, v.unit) for m in v.seed_margins) + ")") if v.seed_margins else ""
    thin = f", under the {UNITS[v.unit][2]} margin the rule asks" if v.thin else ""
    return (f"(margin {margin} over its thresholds{tie}{thin}; {noise_text(v, extra)}{parts_text(v)}; mean of "
            f"{v.seeds} seed{'s' * (v.seeds != 1)}{alone})")


def same_examples(v: Verdict) -> str:
    """The models a verdict compares that are right on the very same examples, said."""
    if not v.identical:
        return ""
    return (" " + "; ".join(v.identical) + (" are" if len(v.identical) == 1 else " each are")
            + " right and wrong on the very same examples: their difference has no sampling noise.")


PHRASES = {"confirmed": "**confirmed** here", "not confirmed": "**not confirmed** here",
           "within noise": f"**within noise** here: its margin is within {NOISE:g} standard errors of 0"}


def _sentence(v: Verdict, first: bool) -> str:
    if v.holds is None and not v.measured:
        return f"not measurable ({v.reason})." if first else f"{v.statement}: not measurable ({v.reason})."
    word = v.outcome
    phrase = f"**not measurable** here: {v.reason}" if word == "not measurable" else PHRASES[word]
    return (" ".join([f"{v.measured}: {v.statement} is {mark(word)} {phrase}", _margin(v)]).rstrip() + "."
            + same_examples(v) + " " + " ".join(v.notes))


def render(verdicts: list[Verdict]) -> str:
    """Markdown: a bold line per group, then a bullet per subject; verdicts on one subject share
    its bullet, and one not measurable for the same reason as the one before it is said once."""
    lines, group, line, said = [], None, None, set()
    for v in verdicts:
        if v.group != group:
            group, line = v.group, None
            lines += [f"\n**{group}**\n"] if group else []
        if (v.task, v.subject) != line:
            line, said = (v.task, v.subject), set()
            lines.append(f"- {v.subject}:")
        if v.holds is None and not v.measured and v.reason in said:
            continue
        lines[-1] += " " + _sentence(v, first=lines[-1].endswith(":"))
        said.add(v.reason)
    return "\n".join(lines).strip()


def summary(verdicts: list[Verdict], synthetic: bool) -> str:
    """The two or three sentences that open a page: how many of its cases read each outcome, then
    its clearest and its weakest case with their numbers (all from the verdicts, so from the store)."""
    scale = "on synthetic data, not the paper's" if synthetic else "at this build's settings"
    words = [v.outcome for v in verdicts]
    if not verdicts:
        return f"**In short** ({scale}): this page judges no case of its claims at these settings."
    if all(w == "not measurable" for w in words):
        return f"**In short** ({scale}): none of the {len(verdicts)} cases this page judges is measurable yet."
    thin = sum(v.thin for v in verdicts)
    confirmed = words.count("confirmed")
    parts = [f"{confirmed} confirm{'s' * (confirmed == 1)} the paper's claim"]
    parts += [f"{words.count('within noise')} {'is' if words.count('within noise') == 1 else 'are'} within noise "
              f"(the margin within {NOISE:g} standard errors of 0)"] * ("within noise" in words)
    parts += [f"{words.count('not confirmed')} {'is' if words.count('not confirmed') == 1 else 'are'} not confirmed"
              + (f" ({thin} clearing the thresholds by less than the rule's margin)" if thin else "")] * (
        "not confirmed" in words)
    parts += [f"{words.count('not measurable')} not measurable"] * ("not measurable" in words)
    cases = "the one case this page judges" if len(verdicts) == 1 else f"the {len(verdicts)} cases this page judges"
    text = f"**In short** ({scale}): of {cases}, " + ", ".join(parts) + "."
    judged = sorted((v for v in verdicts if v.margin is not None and v.holds is not None),
                    key=lambda v: v.margin * UNITS[v.unit][0])
    case = (lambda v: f"{v.statement} on {v.subject} ({v.measured}; margin {shown(v.margin, v.unit)}, {v.outcome})")
    if not judged:
        return text
    if len(judged) == 1:
        return text + f" The case: {case(judged[0])}."
    return text + f" The clearest: {case(judged[-1])}. The weakest: {case(judged[0])}."


def claims_html(verdicts: list[Verdict], page: str, unjudged: str = "not measurable") -> str:
    """HTML: one line per claim of the page with its coloured outcome (data-* attributes for the
    browser check) and a link to its row of the scorecard."""
    items = []
    for claim, group, word, found in claim_outcomes(verdicts, unjudged):
        where = f" [{group}]" if group else ""
        text = STATEMENTS[claim].text.replace("*", "") if claim in STATEMENTS else claim
        items.append(f'<li class="srnets-claim" data-page="{page}" data-claim="{claim}" data-group="{group}" '
                     f'data-outcome="{word}">{badge(word)}: {text}{where} ({counted(found)}; '
                     f'<a href="scorecard.html#{anchor(page, claim, group)}">its row on the scorecard</a>)</li>')
    return f'<ul class="srnets-claims" style="list-style: none; padding-left: 0">{"".join(items)}</ul>' if items else ""
