"""Install the project and its pinned dependencies into the virtual environment that runs this.

`make` calls it once, when it creates .venv: `.venv/bin/python tools/install.py`. It installs with
uv where uv installs and resolves (about 30 s on 2 cores), else with pip (about 1.5 minutes). Both
take the same constraints.txt, so both give the same versions, and both compile every module to
bytecode as they install. uv does not read pip's configuration, so it is handed pip's own index
settings (`pip config list`: find-links, index URLs, constraint files):
a machine whose pip finds a local CPU wheel of torch gets it from uv too.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

CONSTRAINTS = ["-c", "constraints.txt"]
WHAT = [*CONSTRAINTS, "-e", ".[book,test,ray]"]
# pip's setting -> uv's option (`pip config list` prints `<where>.<setting>='<values>'`)
OPTIONS = {"find-links": "--find-links", "extra-index-url": "--extra-index-url", "index-url": "--index-url",
           "constraint": "--constraint"}


def uv_options(pip_config: str) -> list[str]:
    """uv's command-line options for the index settings in `pip config list`'s output: each of
    a setting's space-separated values becomes one option, once, in the order pip lists them;
    of several main indexes (index-url), the first."""
    pairs: list[tuple[str, str]] = []
    for line in pip_config.splitlines():
        key, _, value = line.partition("=")
        option = OPTIONS.get(key.rpartition(".")[2])
        if option is None or not value.strip():
            continue
        for v in shlex.split(value)[0].split():
            if (option, v) not in pairs and not (option == "--index-url" and any(o == option for o, _ in pairs)):
                pairs.append((option, v))
    return [part for pair in pairs for part in pair]


def pip(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pip", *args], text=True, **kwargs)


def with_uv() -> bool:
    """Install with uv (itself pinned in constraints.txt); False where that fails."""
    if pip("install", "-q", *CONSTRAINTS, "uv").returncode != 0:
        return False
    config = pip("config", "list", capture_output=True).stdout
    uv = Path(sys.executable).parent / "uv"
    # unsafe-best-match: every index's versions compete, as in pip (uv's default takes a package from
    # the first index that has it). --compile-bytecode: as pip, compile every module now (about 20 s);
    # where PYTHONDONTWRITEBYTECODE is set, as on the workplace's machines, a module not compiled at
    # install is compiled again by every process that imports it (2.5 s more for each notebook's
    # kernel and each sweep worker)
    command = [str(uv), "pip", "install", "-q", "--python", sys.executable, "--index-strategy", "unsafe-best-match",
               "--compile-bytecode", *uv_options(config), *WHAT]
    return subprocess.run(command).returncode == 0


def main() -> int:
    if with_uv():
        return 0
    print("tools/install.py: uv did not install the environment; pip installs it instead (about 1.5 minutes)",
          file=sys.stderr)
    return pip("install", "-q", *WHAT).returncode


if __name__ == "__main__":
    sys.exit(main())
