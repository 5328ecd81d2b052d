"""constraints.txt: the exact versions ``./dev`` and CI install, so that a new upstream release never changes
what a run of CI tests on a day nobody changed a line.

The package's own requirements in pyproject.toml stay ranges (users are never pinned); this file pins the
development environment inside them. It is ``pip freeze`` of an environment resolved from pyproject.toml,
without the project itself and without torch, which ``./dev`` installs on its own (the CPU build where there
is no GPU). Its first line records a hash of pyproject.toml's requirements, so a change of requirements
without a new lock is caught (tests/unit/test_lock.py). ``./dev lock`` writes it anew: the newest versions
the ranges allow, resolved in a fresh virtualenv; the diff of the commit shows what moved.

    python -m tools.lock write FREEZE_FILE     # constraints.txt from a `pip freeze` output
    python -m tools.lock check                 # exit 1 when constraints.txt is stale
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = ROOT / "pyproject.toml"
CONSTRAINTS = ROOT / "constraints.txt"
HEADER = "# requirements sha256: "
LEFT_OUT = ("grpo-tui", "grpo_tui", "torch")  # the project, and torch (its build is per machine)


def requirements_hash(pyproject: Path = PYPROJECT) -> str:
    project = tomllib.loads(pyproject.read_text())["project"]
    wanted = [project.get("dependencies", []), project.get("optional-dependencies", {})]
    return hashlib.sha256(json.dumps(wanted, sort_keys=True).encode()).hexdigest()


def _name(line: str) -> str:
    return re.split(r"[=<>!~ @\[;]", line, maxsplit=1)[0].strip().lower().replace("_", "-")


def pins(freeze: str) -> list[str]:
    """The lines of a ``pip freeze`` output that the lock keeps, sorted by name."""
    kept = [
        line.strip()
        for line in freeze.splitlines()
        if line.strip() and not line.startswith(("#", "-e ")) and _name(line) not in LEFT_OUT
    ]
    return sorted(kept, key=_name)


def render(freeze: str, pyproject: Path = PYPROJECT) -> str:
    return (
        f"{HEADER}{requirements_hash(pyproject)}\n"
        "# The versions ./dev and CI install (pip install -c constraints.txt). Written by `./dev lock`; do not edit.\n"
        + "".join(f"{line}\n" for line in pins(freeze))
    )


def problems(pyproject: Path = PYPROJECT, constraints: Path = CONSTRAINTS) -> list[str]:
    """Why constraints.txt does not lock pyproject.toml's requirements; [] when it does."""
    if not constraints.exists():
        return [f"{constraints.name} is missing: run ./dev lock"]
    first = constraints.read_text().splitlines()[0] if constraints.read_text() else ""
    if first != HEADER + requirements_hash(pyproject):
        return [f"the requirements in {pyproject.name} changed since {constraints.name} was written: run ./dev lock"]
    return []


def main(argv: list[str]) -> int:
    if argv[:1] == ["write"] and len(argv) == 2:
        CONSTRAINTS.write_text(render(Path(argv[1]).read_text()))
        return 0
    if argv == ["check"]:
        found = problems()
        for problem in found:
            print(problem, file=sys.stderr)
        return 1 if found else 0
    print("usage: python -m tools.lock write FREEZE_FILE | check", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
