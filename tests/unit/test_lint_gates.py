"""CI stops on a violation of each check it promises, before any test runs.

``.ci/run`` runs ``./dev lint`` (import-linter, ruff check, ruff format --check, basedpyright) and only
then the tests. A copy of the checkout gets one planted violation for each tool, and ``.ci/run`` in that
copy must fail and name every planted file: each tool saw its own. The copy shares this checkout's
virtualenv (a link), and its packages come first on the path, so the tools read the copy's code.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PLANTS = {
    # a module the import contracts forbid: a service importing Textual
    "grpo_tui/services/planted_layer.py": '"""Planted."""\n\nimport textual\n\nVERSION = textual.__version__\n',
    # an unused import (ruff check)
    "grpo_tui/planted_lint.py": '"""Planted."""\n\nimport os\n',
    # code ruff format would rewrite
    "grpo_tui/planted_format.py": '"""Planted."""\n\nVALUES = [1,2,  3]\n',
    # a type error (basedpyright)
    "grpo_tui/planted_types.py": '"""Planted."""\n\n\ndef count() -> int:\n    return "three"\n',
}


def checkout_copy(dest: Path) -> Path:
    listed = (
        subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .split("\0")
    )
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    (dest / ".venv").symlink_to(ROOT / ".venv")
    return dest


@pytest.mark.skipif(not (ROOT / ".venv" / "bin" / "basedpyright").exists(), reason="needs ./dev's virtualenv")
def test_ci_fails_on_a_planted_violation_of_each_check_before_testing(tmp_path):
    installed = (ROOT / "pyproject.toml").read_bytes() + (ROOT / "constraints.txt").read_bytes()
    stamp = ROOT / ".venv" / f".installed-{hashlib.sha1(installed).hexdigest()[:12]}"
    if not stamp.exists():  # ./dev in the copy would reinstall the shared virtualenv from the copy
        pytest.fail(
            "the virtualenv is older than pyproject.toml or constraints.txt: run ./dev test (it installs first)"
        )
    copy = checkout_copy(tmp_path / "checkout")
    for name, text in PLANTS.items():
        (copy / name).write_text(text)
    ran = tmp_path / "tests-ran"  # written by a planted test module as soon as pytest imports it
    (copy / "tests/unit/test_planted_marker.py").write_text(f"from pathlib import Path\n\nPath({str(ran)!r}).touch()\n")
    env = {**os.environ, "PYTHONPATH": str(copy), "PYTHONDONTWRITEBYTECODE": "1", "COLUMNS": "500"}
    result = subprocess.run([str(copy / ".ci" / "run")], cwd=copy, env=env, capture_output=True, text=True, timeout=600)
    out = result.stdout + result.stderr
    assert result.returncode != 0, out
    assert "grpo_tui.services.planted_layer -> textual" in out, out  # import-linter
    assert "grpo_tui/planted_lint.py" in out and "F401" in out, out  # ruff check
    assert "unformatted" in out and "--> grpo_tui/planted_format.py" in out, out  # ruff format --check
    assert "planted_types.py" in out and "reportReturnType" in out, out  # basedpyright
    assert not ran.exists(), "the tests ran after a failed lint"
