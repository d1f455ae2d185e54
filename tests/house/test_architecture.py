"""The house's rules, checked on the source (docs/ARCHITECTURE.md): layers that import only downwards
(no import cycle, counting imports inside functions), few imports of this package's own modules
inside functions (lazy imports are for heavy third-party modules), task kinds branched on only in
their own modules, small pieces, a short top level, and a docstring opening every module."""

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "srnets_lib"
MODULES = sorted(p for p in ROOT.rglob("*.py"))


def name_of(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path: Path) -> list[tuple[str, bool]]:
    """(module of this package it imports, whether inside a function) for every import of `path`,
    those under `if TYPE_CHECKING:` too (an annotation is a dependency as well)."""
    package = name_of(path) if path.name == "__init__.py" else name_of(path).rpartition(".")[0]
    found, tree = [], ast.parse(path.read_text())
    for node in ast.walk(tree):
        inside = getattr(node, "col_offset", 0) > 0
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
            if base.startswith("srnets_lib"):
                for alias in node.names:  # `from . import x` imports the module x where there is one
                    sub = f"{base}.{alias.name}"
                    found.append((sub if sub in NAMES else base, inside))
        elif isinstance(node, ast.Import):
            found += [(a.name, inside) for a in node.names if a.name.startswith("srnets_lib")]
    return found


NAMES = {name_of(p) for p in MODULES}


def test_no_import_cycle_even_through_imports_inside_functions():
    edges = {name_of(p): {m for m, _ in imported(p) if m in NAMES and m != name_of(p)} for p in MODULES}
    state: dict[str, int] = {}

    def visit(node, trail):
        state[node] = 1
        for nxt in sorted(edges[node]):
            if state.get(nxt) == 1:
                cycle = trail[trail.index(nxt):] + [nxt] if nxt in trail else [node, nxt]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt, trail + [nxt])
        state[node] = 2

    for module in sorted(edges):
        if module not in state:
            visit(module, [module])


# the layers, bottom up: a module imports only from its own package and the ones before it
# (srnets_lib/__init__.py holds ALGORITHM_VERSION only: the bottom)
LAYERS = ("srnets_lib", "paths", "hparams", "metrics", "data", "model", "engine", "methods", "settings", "store", "training",
          "sweeps", "book", "export", "tools", "__main__")


def layer(module: str) -> int:
    parts = module.split(".")
    return LAYERS.index(parts[1] if len(parts) > 1 else parts[0])


def test_each_layer_imports_only_the_layers_below_it():
    upward = [f"{name_of(p)} imports {m}" for p in MODULES for m, _ in imported(p)
              if layer(m) > layer(name_of(p))]
    assert upward == []


def test_few_imports_of_this_package_inside_functions():
    lazy = [(name_of(p), m) for p in MODULES for m, inside in imported(p) if inside]
    assert len(lazy) <= 10, "\n".join(f"{a} imports {b} inside a function" for a, b in lazy)


KIND = re.compile(r'\bCORPUS\b|==\s*"span"|"span"\s*==|==\s*"corpus"|"corpus"\s*==|in\s*\(\s*CORPUS')


def test_task_kinds_are_branched_on_only_in_their_own_modules():
    outside = [f"{p.relative_to(ROOT.parent)}:{i}" for p in MODULES if "kinds" not in p.parts
               for i, line in enumerate(p.read_text().splitlines(), 1) if KIND.search(line.split("#")[0])]
    assert outside == []


def test_pieces_are_small_and_the_top_level_short():
    long = []
    for path in MODULES:
        source = path.read_text()
        lines = source.count("\n") + 1
        if lines > 400:
            long.append(f"{path.name}: module of {lines} lines")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                size, limit = node.end_lineno - node.lineno + 1, 150 if isinstance(node, ast.ClassDef) else 60
                if size > limit:
                    long.append(f"{path.relative_to(ROOT)}:{node.name} {size} lines")
    assert long == []
    top = [p.name for p in ROOT.glob("*.py") if p.name != "__init__.py"]
    assert len(top) <= 12, top


SECTIONS_DIR = ROOT / "book" / "sections"


def test_a_section_reads_results_never_the_page():
    """The book's sections draw, tabulate and judge a frozen `Results` (book/sections/results.py),
    which book/page.py builds: no function of book/sections/ takes the Page (a parameter `page` is a
    page's name, a str) and no module there imports book/page.py."""
    taking = []
    for path in sorted(SECTIONS_DIR.glob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for arg in node.args.args + node.args.kwonlyargs:
                    annotation = ast.unparse(arg.annotation) if arg.annotation else ""
                    if (arg.arg == "page" and annotation != "str") or "Page" in annotation:
                        taking.append(f"{path.name}:{node.lineno} {node.name}({arg.arg}: {annotation or '?'})")
        taking += [f"{path.name} imports {m}" for m, _ in imported(path) if m == "srnets_lib.book.page"]
    assert taking == []


def test_each_section_module_is_short():
    """Every module of book/sections/ (a paper section's, sec*, appc*, tamt*, and the parts they
    share) stays under 150 lines: what a section draws or judges at length has its own module, and
    the rule judging every claim lives in book/verdicts/."""
    sections = sorted(SECTIONS_DIR.glob("*.py"))
    assert len([p for p in sections if p.name.startswith(("sec", "appc", "tamt"))]) >= 13
    long = [f"{p.name}: {p.read_text().count(chr(10))} lines" for p in sections if p.read_text().count("\n") > 150]
    assert long == []


def test_every_module_opens_with_a_docstring_that_says_what_it_is_for():
    bare = [str(p.relative_to(ROOT)) for p in MODULES if not ast.get_docstring(ast.parse(p.read_text()))]
    assert bare == []


def test_what_the_notebooks_and_docs_import_or_run_exists():
    """Every `from srnets_lib... import name` in a notebook and every `python -m srnets_lib...` in
    the docs, the Makefile and the notebooks names a module (and name) that exists: a moved module
    breaks no page of the book."""
    import importlib
    import importlib.util
    import json

    project = ROOT.parent
    sources = {p: "\n".join("".join(c["source"]) for c in json.loads(p.read_text())["cells"])
               for p in (project / "book").glob("*.ipynb")}
    sources |= {p: p.read_text() for p in [project / "README.md", project / "Makefile", *(project / "docs").glob("*.md"),
                                           *(project / "book").glob("*.md")]}
    broken = []
    for path, text in sources.items():
        for module, names in re.findall(r"from (srnets_lib[\w.]*) import ([\w, ]+)", text):
            try:
                found = importlib.import_module(module)
                broken += [f"{path.name}: {module}.{n}" for n in (n.strip() for n in names.split(","))
                           if n and not hasattr(found, n) and importlib.util.find_spec(f"{module}.{n}") is None]
            except ImportError:
                broken.append(f"{path.name}: {module}")
        broken += [f"{path.name}: python -m {m}" for m in re.findall(r"python -m (srnets_lib[\w.]*)", text)
                   if importlib.util.find_spec(m) is None]
    assert broken == []


def test_the_architecture_docs_tree_is_the_package_tree():
    """docs/ARCHITECTURE.md's picture names every package of srnets_lib, and every module it names
    exists (a module moved or renamed makes the picture fail here, not mislead a reader)."""
    text = (ROOT.parent / "docs" / "ARCHITECTURE.md").read_text()
    tree = text.split("```")[1]
    packages = {p.parent.name for p in ROOT.glob("*/__init__.py")}
    assert {p for p in packages if f"{p}/" not in tree} == set()
    files = {p.name for p in ROOT.rglob("*.py")}
    named = set(re.findall(r"\b(\w+\.py)\b", tree))
    assert named - files == set()


def defined_names(path: Path) -> list[tuple[str, int]]:
    """The classes a module defines (at any depth) and its module-level CapWords names (type aliases
    such as `MethodName = Literal[...]`), with their lines."""
    tree = ast.parse(path.read_text())
    names = [(n.name, n.lineno) for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
    for node in tree.body:
        for target in (node.targets if isinstance(node, ast.Assign) else
                       [node.target] if isinstance(node, ast.AnnAssign) else []):
            if isinstance(target, ast.Name) and re.fullmatch(r"[A-Z][a-z]\w*", target.id):
                names.append((target.id, node.lineno))
    return names


def test_no_class_name_is_defined_twice():
    """One name, one meaning: a settings model and the book's class, or a protocol and its concrete
    class, are named for what each is (a reader greps `Page` and finds one)."""
    where: dict[str, list[str]] = {}
    for path in MODULES:
        for name, line in defined_names(path):
            where.setdefault(name, []).append(f"{path.relative_to(ROOT)}:{line}")
    assert {n: w for n, w in where.items() if len(w) > 1} == {}


def is_module(dotted: str) -> bool:
    path = ROOT.parent.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def test_no_module_is_imported_under_another_name_of_this_package():
    """`from srnets_lib.model import backbones as models` reads as another module: a module of this
    package is imported under its own name (or a name that adds to it, such as `corpus_kind`)."""
    renamed = []
    for path in [*MODULES, *(ROOT.parent / "tests").rglob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("srnets_lib"):
                renamed += [f"{path.name}: {a.name} as {a.asname}" for a in node.names
                            if a.asname and a.name != "__main__" and a.name not in a.asname and is_module(f"{node.module}.{a.name}")]
    assert renamed == []


# the authors' files the code and docs cite (llyx97/sparse-and-robust-PLM, llyx97/TAMT and the
# transformers version they vendor): names that are not this project's
AUTHORS_FILES = {
    "LT_pretrain.py", "clf_distill_loss_functions.py", "compare_mask.py", "data_collator.py", "eval_kd.py",
    "eval_mlm.py", "glue_trans.py", "glue_trans_few.py", "language_modeling.py", "mask_dist.py",
    "mask_run_glue.py", "mask_trainer.py", "mask_trainer_mlm.py", "maskers.py", "modeling_bert.py",
    "optimization.py", "pregenerate_training_data.py", "qqp_generate_data.py", "run_glue.py",
    "squad_trans.py", "squad_trans_few.py", "train_kd.py", "train_mlm.py", "trainer.py", "trainer_imp.py",
    "write_bash.py"}
# files that are examples, not this project's: docs/ARCHITECTURE.md's method and task kind to add,
# and the script tests/house/test_packaging.py writes
EXAMPLES = {"snip.py", "tokens.py", "core.py"}
PACKAGES = "engine|methods|model|settings|store|training|sweeps|export|metrics|tools"


def test_the_files_the_code_and_docs_name_exist():
    """A mention of one of this project's files (`srnets_lib/model/dropout.py`, `engine/kinds`,
    `prepare.py`) names a file or folder that exists: a moved module leaves no stale pointer."""
    project = ROOT.parent
    ours = {p.name for p in project.rglob("*.py") if ".venv" not in p.parts}
    texts = [*MODULES, *(project / "tests").rglob("*.py"), *(project / "docs").glob("*.md"), project / "README.md",
             project / "Makefile", *(project / "book").glob("*.md"), *(project / "params").glob("*.yaml"),
             *ROOT.rglob("*.yaml")]
    stale = []
    for path in texts:
        for i, line in enumerate(path.read_text().splitlines(), 1):
            where = f"{path.relative_to(project)}:{i}"
            for named in re.findall(r"(?<![\w./-])((?:srnets_lib|" + PACKAGES + r")/[\w./]*\w)", line):
                relative = named.removeprefix("srnets_lib/")
                candidates = (ROOT / relative, project / named)  # srnets_lib/tools/ or the project's tools/
                if not any(c.exists() or c.with_suffix(".py").exists() for c in candidates) \
                        and named.rpartition("/")[2] not in EXAMPLES:
                    stale.append(f"{where}: {named}")
            stale += [f"{where}: {name}" for name in re.findall(r"(?<![\w.-])(\w+\.py)\b", line)
                      if name not in ours | AUTHORS_FILES | EXAMPLES]
    assert stale == []


def test_every_test_module_lives_in_the_folder_of_the_layer_it_guards():
    """docs/ARCHITECTURE.md's table of the tests by layer names each folder of tests/ and lists each
    test module once, in the row of the folder it lives in."""
    table = (ROOT.parent / "docs" / "ARCHITECTURE.md").read_text().split("## The tests, by the layer they guard")[1]
    rows = {folder: re.findall(r"\b(test_\w+\.py)\b", rest)
            for folder, rest in re.findall(r"^\| tests/(\w+)/ \|(.*)\|$", table, flags=re.M)}
    tests = ROOT.parent / "tests"
    assert sorted(rows) == sorted({p.parent.name for p in tests.glob("*/test_*.py")})  # each folder its row
    for folder, listed in rows.items():
        assert sorted(listed) == sorted(p.name for p in (tests / folder).glob("test_*.py")), folder
    assert not list(tests.glob("test_*.py")), "a test module outside the layers' folders"


def test_the_functions_the_docs_name_exist():
    """A `module.name` the docs, the README or the book's pages name, where `module` is one module of
    this package (by its file name), is defined there: a renamed function leaves no stale pointer.
    Settings paths (`data.source`, `tamt.imp_rewind`, a page's `sec5_1.sparsity`) are the params
    files' keys, not modules; `model.roberta` is a transformers model's attribute."""
    from srnets_lib.settings.config import RunConfig
    from srnets_lib.settings.pages import SECTIONS
    from srnets_lib.settings.params import Params

    by_name: dict[str, list[Path]] = {}
    for path in MODULES:
        by_name.setdefault(path.parent.name if path.name == "__init__.py" else path.stem, []).append(path)
    keys = set(Params.model_fields) | set(RunConfig.model_fields) | set(SECTIONS) | {"config", "model"}
    files = {"py", "ipynb", "json", "yaml", "safetensors", "md", "txt", "sh"}
    project = ROOT.parent
    stale = []
    for text in [*(project / "docs").glob("*.md"), project / "README.md", *(project / "book").glob("*.md")]:
        for i, line in enumerate(text.read_text().splitlines(), 1):
            for code in re.findall(r"`([^`]+)`", line):
                for module, name in re.findall(r"(?<![\w./])([a-z_]\w*)\.([A-Za-z_]\w*)", code):
                    paths = by_name.get(module, [])
                    if len(paths) == 1 and module not in keys and name not in files \
                            and name not in top_level_names(paths[0]):
                        stale.append(f"{text.relative_to(project)}:{i}: {module}.{name}")
    assert stale == []


def top_level_names(path: Path) -> set[str]:
    """What `module.name` can name in the module at `path`: its definitions and imports (a package's
    submodules too)."""
    found = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found.add(node.name)
        elif isinstance(node, ast.Assign):
            found |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            found.add(node.target.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            found |= {(a.asname or a.name).split(".")[0] for a in node.names}
    if path.name == "__init__.py":
        found |= {p.stem for p in path.parent.glob("*.py")} | {p.name for p in path.parent.iterdir() if p.is_dir()}
    return found
