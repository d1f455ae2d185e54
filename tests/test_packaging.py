"""environment.yml (conda) lists the same dependencies as pyproject.toml; pins are exact."""

import re
import tomllib

import yaml


def _name(requirement: str) -> str:
    return re.split(r"[<>=\[ ;]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def test_environment_yml_matches_pyproject():
    project = tomllib.load(open("pyproject.toml", "rb"))["project"]
    wanted = {_name(r) for r in project["dependencies"]}
    wanted |= {_name(r) for extra in project["optional-dependencies"].values() for r in extra}
    env = yaml.safe_load(open("environment.yml"))
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    listed = {_name(r) for r in pip if not r.startswith("-")}
    assert listed == wanted


def test_constraints_pin_every_dependency_exactly():
    pins = {}
    for line in open("constraints.txt"):
        if line.strip() and not line.startswith("#"):
            name, _, version = line.strip().partition("==")
            pins[_name(name)] = version
    project = tomllib.load(open("pyproject.toml", "rb"))["project"]
    for requirement in project["dependencies"]:
        assert pins.get(_name(requirement)), f"{requirement} has no exact pin in constraints.txt"
    assert pins["torch"] == "2.13.0"  # the CPU wheel on the workplace disk


def _book_commands(*overrides: str) -> list[list[str]]:
    import shlex
    import subprocess

    out = subprocess.run(["make", "-n", "book", *overrides], capture_output=True, text=True,
                         check=True).stdout
    return [shlex.split(line, comments=True) for line in out.splitlines() if line.strip()]


def test_make_book_passes_one_output_folder_to_each_step():
    """`make book` hands jupyter-book and the browser check the same single path (a
    trailing comment on the BOOK_OUT line once split it in two and failed CI)."""
    for overrides, out in [((), "."), (("BOOK_OUT=/tmp/x",), "/tmp/x")]:
        commands = _book_commands(*overrides)
        build = next(c for c in commands if "jupyter-book" in c[0])
        check = next(c for c in commands if "srnets_lib.browser_check" in c)
        assert build[build.index("--path-output") + 1] == out
        assert check[check.index("--html") + 1] == f"{out}/_build/html"
        assert check[check.index("--screenshot") + 1] == f"{out}/_build/screenshots"
        assert check[-2:] == ["--screenshot", f"{out}/_build/screenshots"]


def test_the_browser_check_installs_nothing_and_says_how_to_get_a_browser(tmp_path, monkeypatch, capsys):
    """make book needs no root: without chromium the check skips with one line (make browser, or
    apt-get, installs it; .ci/run does)."""
    from srnets_lib import browser_check

    (tmp_path / "index.html").write_text("<html></html>")
    monkeypatch.setattr(browser_check.shutil, "which", lambda name: None)
    monkeypatch.setattr(browser_check.Path, "exists", lambda self: False)
    assert browser_check.main(["--html", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert err.startswith("browser_check: skipped: no chromium and chromedriver on this machine")
    assert "apt-get install chromium chromium-driver (or: make browser)" in err and len(err.splitlines()) == 1
