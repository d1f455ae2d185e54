"""Words that would send a user astray: every file of this checkout that the README, the book's
introduction, the Makefile's comments and the library's docstrings name exists (a module that
moved is named where it is now), and every command the README and the introduction give resolves:
`python -m <module>` names a module, its arguments parse with that command's own parser, and
`make <target>` names a target of the Makefile."""

import ast
import importlib.util
import re
import shlex

import pytest

from srnets_lib import paths

ROOT = paths.PROJECT_ROOT
LIBRARY = ROOT / "srnets_lib"
# the checkout's own folders, and the library's packages (docstrings name data/inputs.py for
# srnets_lib/data/inputs.py); a path under another root is the authors' (hg_transformers/...) or a user's
TOP = ("srnets_lib", "tests", "book", "params", "docs", "bench", "tools", ".ci")
PACKAGES = tuple(p.name for p in LIBRARY.iterdir() if (p / "__init__.py").is_file())
NAMED = re.compile(r"(?<![\w./-])((?:%s)/[\w./*-]*\w)" % "|".join(re.escape(t) for t in set(TOP + PACKAGES)))
FILE = re.compile(r"\.(py|md|yaml|yml|ipynb|json|txt|sh)$|/$")
# what the texts name that is not in a checkout: the user's inputs (the README's data table), a
# store's files, what a build writes
NOT_OURS = ("data/MNLI", "data/QQP", "data/fever", "data/glue", "data/squad", "data/wikitext", "data/nli",
            "data/paraphrase", "data/factcheck", "book/_executed", "book/_build")


def texts() -> list[tuple[str, str]]:
    """(where, text) of the README, the introduction, the Makefile's comments and every docstring."""
    found = [(name, (ROOT / name).read_text()) for name in ("README.md", "book/intro.md")]
    found.append(("Makefile", "\n".join(line for line in (ROOT / "Makefile").read_text().splitlines()
                                        if line.lstrip().startswith("#"))))
    for module in sorted(LIBRARY.rglob("*.py")):
        tree = ast.parse(module.read_text())
        for node in [tree, *ast.walk(tree)]:
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                doc = ast.get_docstring(node)
                if doc:
                    found.append((f"{module.relative_to(ROOT)}:{getattr(node, 'lineno', 1)}", doc))
    return found


def exists(named: str, where: str) -> bool:
    """`named` under the checkout, or under srnets_lib/ (a docstring's data/inputs.py); a glob
    matches something; the module a docstring sits in may name its own package's files."""
    candidates = [ROOT / named, LIBRARY / named]
    if where.startswith("srnets_lib/"):
        candidates.append((ROOT / where.split(":")[0]).parent / named)
    if "*" in named:
        return any(list(c.parent.glob(c.name)) for c in candidates)
    return any(c.exists() for c in candidates)


def test_every_file_the_docs_and_docstrings_name_exists():
    missing = []
    for where, text in texts():
        for match in NAMED.finditer(text):
            named = match.group(1).rstrip(".")
            after = text[match.end():match.end() + 60]
            if (not FILE.search(named) or named.startswith(NOT_OURS) or "<" in named
                    or re.match(r"\s*(of|in) (llyx97|github)", after)):  # the authors' files
                continue
            if not exists(named, where):
                missing.append(f"{where}: {named}")
    assert missing == [], "named but not in the checkout:\n" + "\n".join(missing)


def commands(text: str) -> list[str]:
    """The commands of a text: its fenced code blocks' lines (comments cut), and inline code that
    starts with `python -m` or `make `; each `&&`-joined command alone."""
    found, fence = [], None
    for line in text.splitlines():
        if line.startswith("```"):
            fence = line[3:].strip() if fence is None else None
        elif fence in ("", "bash", "sh", "console"):
            found.append(line.split("  #")[0].split(" # ")[0].strip())
    found += [" ".join(c.split()) for c in re.findall(r"`((?:python -m|make) [^`]+)`", text)]
    return [part.strip() for command in found for part in command.split("&&") if part.strip()]


def resolve(command: str) -> str | None:
    """Why `command` does not resolve, or None (a command this test does not know: None)."""
    try:
        words = shlex.split(command.replace("<", "_").replace(">", "_"))
    except ValueError as err:
        return f"not a shell command ({err})"
    while words and re.match(r"^[A-Z_]+=", words[0]):  # SRNETS_HUB_MIRROR=hub make book ...
        words = words[1:]
    if words[:1] == ["make"]:
        targets = set(re.findall(r"^([\w.-]+):", (ROOT / "Makefile").read_text(), re.M))
        wanted = [w for w in words[1:] if "=" not in w and not w.startswith("-")]
        return next((f"no make target {w}" for w in wanted if w not in targets), None)
    if words[:1] and words[0].endswith("python") and words[1:2] and words[1].endswith(".py"):
        return None if (ROOT / words[1]).is_file() else f"no script {words[1]}"  # .venv/bin/python tests/...
    if words[:2] != ["python", "-m"] or len(words) < 3:
        return None
    module = words[2]
    if importlib.util.find_spec(module) is None:
        return f"no module {module}"
    parsers = {"srnets_lib": "srnets_lib.__main__", "srnets_lib.tools.bench": "srnets_lib.tools.bench.__main__"}
    if module not in parsers or not words[3:]:  # a module named, not run: it exists
        return None
    parser = importlib.import_module(parsers[module]).parser()
    if module == "srnets_lib" and len(words) == 4:  # a command named (`python -m srnets_lib export`)
        commands = parser._subparsers._group_actions[0].choices
        return None if words[3] in commands else f"no command {words[3]}"
    try:
        parser.parse_args(words[3:])
    except SystemExit:
        return f"its arguments do not parse: {' '.join(words[3:])}"
    return None


@pytest.mark.parametrize("name", ["README.md", "book/intro.md"])
def test_every_command_the_readme_and_the_introduction_give_resolves(name):
    text = (ROOT / name).read_text()
    found = commands(text)
    assert name != "README.md" or sum(c.startswith("python -m srnets_lib") for c in found) >= 20
    wrong = [f"{command}: {why}" for command in found if (why := resolve(command))]
    assert wrong == [], "\n".join(wrong)


@pytest.mark.parametrize("name", ["README.md", "book/intro.md"])
def test_every_setting_the_readme_and_the_introduction_pass_on_the_command_line_is_accepted(name):
    """Each `--set key=value ...` they give is accepted by params/paper.yaml (a misspelt key such as
    `sec5_1_sparsity` is refused)."""
    from srnets_lib.settings import params

    text = " ".join((ROOT / name).read_text().split())
    given = [g for g in re.findall(r"`--set ([^`]+)`", text) if g != "key=value ..."]  # the form, not a setting
    assert name != "README.md" or len(given) >= 3
    for overrides in given:
        params.load("params/paper.yaml", shlex.split(overrides))
