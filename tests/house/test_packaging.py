"""environment.yml (conda) lists the same dependencies as pyproject.toml; pins are exact."""

import re
import sys
import tomllib

import pytest
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
    for requirement in [*project["dependencies"], *project["optional-dependencies"]["book"]]:
        assert pins.get(_name(requirement)), f"{requirement} has no exact pin in constraints.txt"
    assert pins["torch"] == "2.13.0"  # the CPU wheel on the workplace disk


BOOK_ONLY = ("matplotlib", "seaborn", "papermill", "IPython", "ipykernel", "jupyter_book", "myst_nb", "selenium",
             "psutil")


def test_the_library_runs_without_the_books_dependencies(tmp_path):
    """`pip install srnets_lib` (no `book` extra): with every book-only package unimportable, the
    command line plans the book's runs and trains and stores one run; the book's figures are the
    only part that needs them."""
    import subprocess

    blocker = ("import sys\n"  # a module set to None in sys.modules is one Python cannot import
               f"sys.modules.update(dict.fromkeys({BOOK_ONLY!r}))\n"
               "from srnets_lib.__main__ import main\n"
               "sys.exit(main(sys.argv[1:]))\n")
    script = tmp_path / "core.py"
    script.write_text(blocker)
    env = {**__import__("os").environ, "SRNETS_RUNS": str(tmp_path / "runs")}

    def core(*args):
        return subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, env=env, timeout=600)

    planned = core("plan", "book/sec4_2.ipynb", "--params", "params/toy.yaml")
    assert planned.returncode == 0 and "runs" in planned.stdout, planned.stderr
    ran = core("run", "params/toy.yaml", "task=nli", "method=finetune", "loss=std", "seed=1", "backbone=tiny",
               "num_layers=null", "data.train_size=32", "data.dev_size=16", "data.test_size=16", "data.ood_size=16")
    assert ran.returncode == 0, ran.stderr
    assert list((tmp_path / "runs").glob("*/final.json"))


def _make_book(tmp_path, *overrides: str, sweep_status: int = 0):
    """Run `make book`'s recipe with stand-ins for python and jupyter-book that record their
    arguments (one JSON list per line) and for the sweep exit with `sweep_status`."""
    import json
    import subprocess

    log, venv = tmp_path / "calls.jsonl", tmp_path / "venv"
    (venv / "bin").mkdir(parents=True, exist_ok=True)
    stand_in = (f"#!{sys.executable}\nimport json, sys\nopen({str(log)!r}, 'a').write(json.dumps(sys.argv) + '\\n')\n"
                f"sys.exit({sweep_status} if 'sweep' in sys.argv else 0)\n")
    for path in (tmp_path / "python", venv / "bin" / "jupyter-book"):
        path.write_text(stand_in)
        path.chmod(0o755)
    done = subprocess.run(["make", "-s", "book", f"PY={tmp_path / 'python'}", f"VENV={venv}", "STAMP=", *overrides],
                          capture_output=True, text=True)
    calls = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return done, calls


def test_make_book_passes_one_output_folder_to_each_step(tmp_path):
    """`make book` hands jupyter-book and the browser check the same single path (a
    trailing comment on the BOOK_OUT line once split it in two and failed CI)."""
    for overrides, out in [((), "."), (("BOOK_OUT=/tmp/x",), "/tmp/x")]:
        (tmp_path / "calls.jsonl").unlink(missing_ok=True)
        done, calls = _make_book(tmp_path, *overrides)
        assert done.returncode == 0, done.stderr
        build = next(c for c in calls if c[0].endswith("jupyter-book"))
        check = next(c for c in calls if "srnets_lib.tools.browser_check" in c)
        assert build[build.index("--path-output") + 1] == out
        assert check[check.index("--html") + 1] == f"{out}/_build/html"
        assert check[-2:] == ["--screenshot", f"{out}/_build/screenshots"]


@pytest.mark.parametrize("status", [1, 143])
def test_failed_runs_do_not_stop_the_book_but_an_interrupted_sweep_does(tmp_path, status):
    """A sweep with failed runs (exit 1): the book is still built and checked, then make fails
    saying so; an interrupted sweep (143: SIGTERM) stops make book at once."""
    done, calls = _make_book(tmp_path, sweep_status=status)
    built = any(c[0].endswith("jupyter-book") for c in calls)
    assert done.returncode != 0 and built == (status == 1)
    if status == 1:
        assert any("srnets_lib.tools.browser_check" in c for c in calls)
        assert "built, but some runs failed" in done.stdout


def test_the_browser_check_installs_nothing_and_says_how_to_get_a_browser(tmp_path, monkeypatch, capsys):
    """make book needs no root: without chromium the check skips with one line (make browser, or
    apt-get, installs it; .ci/run does)."""
    from srnets_lib.tools import browser_check

    (tmp_path / "index.html").write_text("<html></html>")
    monkeypatch.setattr(browser_check.shutil, "which", lambda name: None)
    monkeypatch.setattr(browser_check.Path, "exists", lambda self: False)
    assert browser_check.main(["--html", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert err.startswith("browser_check: skipped: no chromium and chromedriver on this machine")
    assert "apt-get install chromium chromium-driver (or: make browser)" in err and len(err.splitlines()) == 1


def _installer():
    """tools/install.py, loaded as a module (it is a script, not part of the package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("install", "tools/install.py")
    install = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(install)
    return install


def test_the_installer_hands_uv_pips_index_settings():
    """uv does not read pip's configuration: tools/install.py passes what `pip config list`
    prints (a local wheel folder, extra indexes, constraint files) as uv's options, each value
    once; other settings (certificates, timeouts) are not index settings."""
    install = _installer()
    printed = ("global.cert='/etc/ssl/certs/ca.crt'\n"
               ":env:.find-links='/opt/wheels'\n"
               ":env:.index-url='https://mirror/simple'\n"
               "global.index-url='https://pypi.org/simple'\n"
               "global.extra-index-url='file:///a/simple file:///b/simple'\n"
               "global.find-links='/opt/wheels'\n"
               "site.constraint='/etc/pip/caps.txt'\n")
    assert install.uv_options(printed) == [
        "--find-links", "/opt/wheels", "--index-url", "https://mirror/simple",
        "--extra-index-url", "file:///a/simple", "--extra-index-url", "file:///b/simple",
        "--constraint", "/etc/pip/caps.txt"]
    assert install.uv_options("") == []


@pytest.mark.parametrize("failing", ["uv's wheel", "uv's install"])
def test_the_installer_falls_back_to_pip_when_uv_fails(monkeypatch, failing):
    """A machine where uv cannot install (no wheel for it, an index it cannot read) still gets
    the environment: pip installs the same requirements with the same constraints."""
    import subprocess

    install = _installer()
    calls = []

    def run(command, **kwargs):
        calls.append(command)
        is_uv = command[0].endswith("/uv")
        failed = command[-1] == "uv" if failing == "uv's wheel" else is_uv
        return subprocess.CompletedProcess(command, 1 if failed else 0, stdout="", stderr="")

    monkeypatch.setattr(install.subprocess, "run", run)
    assert install.main() == 0
    assert calls[-1][1:] == ["-m", "pip", "install", "-q", "-c", "constraints.txt", "-e", ".[book,test,ray]"]
    assert not calls[-1][0].endswith("/uv")
    assert len(calls) == (2 if failing == "uv's wheel" else 4)  # + pip config list, uv pip install


def test_the_installer_uses_uv_alone_and_compiles_bytecode(monkeypatch):
    """Where uv installs, pip installs nothing but uv itself, and uv compiles every module as pip
    would: where PYTHONDONTWRITEBYTECODE is set a module left uncompiled is compiled again by
    every process that imports it (each notebook kernel, each sweep worker)."""
    import subprocess

    install = _installer()
    calls = []
    monkeypatch.setattr(install.subprocess, "run",
                        lambda command, **kw: calls.append(command) or subprocess.CompletedProcess(command, 0, "", ""))
    assert install.main() == 0
    uv = calls[-1]
    assert uv[0].endswith("/uv") and uv[1:3] == ["pip", "install"] and "--compile-bytecode" in uv
    assert uv[-4:] == ["-c", "constraints.txt", "-e", ".[book,test,ray]"]
    assert [c for c in calls if "install" in c and not c[0].endswith("/uv") and c[-1] != "uv"] == []
