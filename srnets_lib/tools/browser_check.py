"""Check the built HTML book in a real headless browser (Debian's chromium via selenium).

    python -m srnets_lib.tools.browser_check [--html _build/html] [--screenshot _build/screenshots]

Every chapter in _toc.yml must load; every image in it must have loaded with a non-zero
natural size; no cell output may show an error, a warning or a traceback (a figure panel that draws
no data is one: book/page.py), setup code, or a table cut in the middle; no table may be wider than
the text column; no text may name a path of the machine that built it; section notebooks must hold a
figure at least 70% of the text column wide; the scorecard must hold a row per claim; no code cell
may be shown, and no page's summary may give a claim another outcome than the scorecard's line for it;
sec4_2's interactive figure must draw, and a point hovered with the mouse must name its run and seed.
Last, JupyterLab is opened on book/sec4_2.ipynb (in this environment, its kernel the venv's python3,
gathering from the run store) and Run All must draw the page's first figure.
Screenshots are taken at 1400 and 800 px wide (<chapter>.png, <chapter>-800.png), and the table
widths are checked at both. A screenshot of each chapter is saved. It uses a chromium and chromedriver
already on the machine and installs nothing (`make browser` installs Debian's, as .ci/run does);
without them it says how to get them and skips. Exit status 1 lists every failure.
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
from pathlib import Path

import yaml

from srnets_lib.book import interactive, paper_numbers
from srnets_lib import paths

ERROR_SELECTORS = ".output.traceback, .output.error, .cell_output .output.stderr, div.highlight-ipythontb"
ERROR_TEXTS = ("Traceback (most recent call last)",)
SETUP_CODE = ("page.load(", "scorecard.build(", "params_file = None")  # the notebooks' hidden cells
FIGURE_WIDTH = 0.7  # a section's main figure spans at least this share of the text column
SHOWN_CODE_JS = ("return Array.from(document.querySelectorAll('.cell_input, div.highlight-ipython3'))"
                 ".filter(e => e.offsetParent !== null).length;")  # code cells a reader sees
ARTICLE_JS = "const a = document.querySelector('article.bd-article') || document.querySelector('main');"
WIDE_TABLES_JS = (ARTICLE_JS + "const w = a.getBoundingClientRect().width;"
                  "return Array.from(a.querySelectorAll('table')).filter(t => t.offsetParent !== null)"
                  ".map(t => [Math.round(t.getBoundingClientRect().width), Math.round(w), "
                  "(t.innerText || '').slice(0, 60)]).filter(([tw, aw]) => tw > aw + 2);")
# a path of the machine that built the book (the run store's, a checkout's, a temporary folder's)
MACHINE_PATH = re.compile(r"(?<![\w.:/~-])/(?:root|home|tmp|work|Users|var|mnt|srv|opt|usr)/[\w.+-]+")
WIDTHS = (1400, 800)  # the window widths a reader's page is checked and photographed at
CLAIMS_JS = ("return Array.from(document.querySelectorAll('.srnets-claim')).map(e => [e.tagName, e.dataset.page, "
             "e.dataset.claim, e.dataset.group, e.dataset.outcome]);")  # each claim's outcome, as shown


def chapters(toc_file: Path) -> list[str]:
    """Document names in _toc.yml, in order (root first)."""
    toc = yaml.safe_load(toc_file.read_text())
    names = [toc["root"]]

    def walk(entries):
        for entry in entries or []:
            if "file" in entry:
                names.append(entry["file"])
            walk(entry.get("sections"))
            for part in entry.get("parts", []):
                walk(part.get("chapters"))

    walk(toc.get("chapters"))
    for part in toc.get("parts", []):
        walk(part.get("chapters"))
    return [str(Path(n).with_suffix("")) for n in names]


HOW_TO_GET = "Debian: sudo apt-get install chromium chromium-driver (or: make browser)"


def find_chromium() -> tuple[str, str] | None:
    """Paths of a chromium and its chromedriver already on the machine; None if either is missing
    (nothing is installed here: `make browser` installs Debian's packages, as .ci/run does)."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver") or next(
        (p for p in ("/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver") if Path(p).exists()), None)
    return (browser, driver) if browser and driver else None


def check(html: Path, screenshots: Path) -> list[str]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By

    browser, driver_path = find_chromium()
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", f"--window-size={WIDTHS[0]},2000",
                 "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    screenshots.mkdir(parents=True, exist_ok=True)
    failures, claims = [], []
    try:
        for name in chapters(paths.PROJECT_ROOT / "_toc.yml"):
            page = html / f"{name}.html"
            if not page.is_file():
                failures.append(f"{name}: {page} was not built")
                continue
            driver.get(page.resolve().as_uri())
            title = driver.title
            images = driver.execute_script(
                "return Array.from(document.querySelectorAll('main img, article img'))"
                ".map(i => [i.getAttribute('src'), i.complete, i.naturalWidth, i.naturalHeight]);")
            broken = [src for src, complete, w, h in images if not (complete and w > 0 and h > 0)]
            errors = driver.find_elements(By.CSS_SELECTOR, ERROR_SELECTORS)
            text = driver.find_element(By.TAG_NAME, "body").text
            problems = []
            if not title or "404" in title:
                problems.append(f"title {title!r}")
            if broken:
                problems.append(f"{len(broken)} image(s) not loaded: {broken[:3]}")
            if errors:
                problems.append(f"{len(errors)} error output(s): {errors[0].text[:200]!r}")
            problems += [f"page text shows {t!r}" for t in ERROR_TEXTS if t in text]
            problems += page_problems(driver, Path(name).name, text, len(images))
            problems += explore_problems(driver, Path(name).name)
            claims += [tuple(c) for c in driver.execute_script(CLAIMS_JS)]
            problems += at_widths(driver, screenshots / Path(name).name)
            status = "ok" if not problems else "FAILED: " + "; ".join(problems)
            print(f"browser_check: {name}: {len(images)} image(s), {status}")
            failures += [f"{name}: {p}" for p in problems]
        failures += lab_problems(driver, screenshots)
    finally:
        driver.quit()
    return failures + disagreements(claims)


EXPLORED = "sec4_2"  # the page whose figure has an interactive copy (Page.explore)
HOVER_JS = ("return Array.from(document.querySelectorAll('#%s .hoverlayer .hovertext'))"
            ".map(e => e.textContent);" % interactive.POINT_ID)


def explore_problems(driver, name: str) -> list[str]:
    """A page's interactive figure drew its points and, hovered with the mouse, names a point's run,
    seed and score (offline: its plotly.js is in the page)."""
    import time

    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    points = driver.find_elements(By.CSS_SELECTOR, f"#{interactive.POINT_ID} .scatterlayer .points path.point")
    if not points:
        return [f"no interactive figure drawn (#{interactive.POINT_ID})"] if name == EXPLORED else []
    driver.execute_script("arguments[0].scrollIntoView({block: 'center'});", points[0])
    ActionChains(driver).move_to_element(points[0]).perform()
    deadline, shown = time.time() + 5, []
    while time.time() < deadline and not shown:
        shown = driver.execute_script(HOVER_JS)
        time.sleep(0.2)
    print(f"browser_check: {name}: the interactive figure's {len(points)} points; hovered: {shown[:1]}")
    return [] if shown and "run " in shown[0] and "seed " in shown[0] else [
        f"the interactive figure shows no run and seed when a point is hovered ({shown!r})"]


LAB_NOTEBOOK = "sec4_2.ipynb"
LAB_SECONDS = 300  # Run All on a gathered page: a kernel's start and the page's cells


def lab_problems(driver, screenshots: Path) -> list[str]:
    """JupyterLab on book/ opens LAB_NOTEBOOK, runs all its cells and shows its first figure."""
    import os
    import time

    from srnets_lib.tools.jupyter_run import Server

    env = {**os.environ, "SRNETS_COMPUTE": os.environ.get("SRNETS_COMPUTE", "0")}
    with Server(paths.BOOK_DIR, env, app="lab", options=("--LabApp.expose_app_in_browser=True",)) as lab:
        driver.get(f"{lab.url}/lab/tree/{LAB_NOTEBOOK}?token={lab.token}")
        deadline = time.time() + LAB_SECONDS
        script = ("const app = window.jupyterapp; if (!app || !app.shell.currentWidget ||"
                  " !app.shell.currentWidget.sessionContext || !app.shell.currentWidget.sessionContext.session)"
                  " return false; app.commands.execute('notebook:run-all-cells'); return true;")
        while time.time() < deadline and not driver.execute_script(script):
            time.sleep(1)
        figure = ("return document.querySelectorAll('.jp-OutputArea-output img').length;")
        while time.time() < deadline and not driver.execute_script(figure):
            time.sleep(2)
        found = driver.execute_script(figure)
        driver.save_screenshot(str(screenshots / "jupyterlab.png"))
    print(f"browser_check: JupyterLab: {LAB_NOTEBOOK} after Run All: {found} figure(s)")
    return [] if found else [f"JupyterLab: {LAB_NOTEBOOK} showed no figure {LAB_SECONDS} s after Run All"]


def disagreements(claims: list[tuple]) -> list[str]:
    """Where a page's summary gives a claim another outcome than the scorecard's line: `claims`, each
    element of class srnets-claim read from the pages (its tag, page, claim, group, outcome; the
    scorecard's lines are table rows, TR, the pages' are list items, LI)."""
    card = {(page, claim, group): word for tag, page, claim, group, word in claims if tag.upper() == "TR"}
    return [f"{page}: the claim {claim}{f' [{group}]' if group else ''} reads {word!r} on its page, "
            f"{card.get((page, claim, group))!r} on the scorecard"
            for tag, page, claim, group, word in claims if tag.upper() == "LI" and card.get((page, claim, group)) != word]


def at_widths(driver, shot: Path) -> list[str]:
    """At each of WIDTHS: a screenshot, and every table no wider than the text column."""
    problems = []
    for width in WIDTHS:
        driver.set_window_size(width, 2000)
        for tw, aw, head in driver.execute_script(WIDE_TABLES_JS):
            problems.append(f"at {width} px a table is {tw} px wide in the {aw} px text column ({head!r})")
        driver.save_screenshot(str(shot.with_name(shot.name + ("" if width == WIDTHS[0] else f"-{width}") + ".png")))
    driver.set_window_size(WIDTHS[0], 2000)
    return problems


def page_problems(driver, name: str, text: str, n_images: int) -> list[str]:
    """What a reader must not meet on a page: setup code, a table cut in the middle, a section's
    figure narrower than FIGURE_WIDTH of the text column, a scorecard without a row per claim."""
    problems = []
    shown = driver.execute_script(SHOWN_CODE_JS)
    if shown:
        problems.append(f"{shown} code cell(s) shown (every code cell is tagged remove-input or remove-cell)")
    if any(code in text for code in SETUP_CODE):
        problems.append("the setup code is shown (its cells' remove-input / remove-cell tags)")
    machine = MACHINE_PATH.search(text)
    if machine:
        problems.append(f"the text names a path of the machine that built it ({machine.group(0)!r})")
    cut = re.search(r"\d+ rows × \d+ columns", text)
    if cut:
        problems.append(f"a table is cut in the middle ({cut.group(0)})")
    if name.startswith(("sec", "app", "tamt")):
        widths = driver.execute_script(
            ARTICLE_JS + "return [a.getBoundingClientRect().width,"
            " Math.max(0, ...Array.from(a.querySelectorAll('img')).map(i => i.getBoundingClientRect().width))];")
        if not n_images:
            if "An opt-in page" not in text:  # an opt-in page's runs come with make book-full only
                problems.append("no figure")
        elif widths[1] < FIGURE_WIDTH * widths[0]:
            problems.append(f"the widest figure is {widths[1]:.0f} px of the {widths[0]:.0f} px text column "
                            f"(under {FIGURE_WIDTH:.0%})")
    if name == "scorecard":
        rows = driver.execute_script("return document.querySelectorAll('div.scorecard table tbody tr').length;")
        claims = len(paper_numbers.load()["claims"])
        if rows < claims:
            problems.append(f"the scorecard table has {rows} rows for the {claims} claims of paper_numbers.yaml")
    return problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m srnets_lib.tools.browser_check", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--html", default="_build/html")
    parser.add_argument("--screenshot", default="_build/screenshots", help="folder for one PNG per chapter")
    args = parser.parse_args(argv)
    html = Path(args.html)
    if not (html / "index.html").is_file():
        print(f"browser_check: {html}/index.html missing: build the book first (make book)", file=sys.stderr)
        return 1
    if find_chromium() is None:
        print(f"browser_check: skipped: no chromium and chromedriver on this machine; to check the HTML in a "
              f"headless browser install them ({HOW_TO_GET})", file=sys.stderr)
        return 0
    failures = check(html, Path(args.screenshot))
    for failure in failures:
        print(f"browser_check: FAILED {failure}", file=sys.stderr)
    print(f"browser_check: {'all chapters ok' if not failures else f'{len(failures)} failure(s)'}; "
          f"screenshots in {args.screenshot}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
