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
