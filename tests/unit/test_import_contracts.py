"""The import boundaries hold, and the tools guarding them notice when one breaks.

The contracts are in pyproject.toml (``[tool.importlinter]``, two contract types in
``tools/import_contracts.py``); CI runs them and ruff through ``./dev lint``. A linter that passes whatever it is given
is worse than none, so each contract is shown failing on an import planted in a copy of the packages under
tmp_path: the copy comes first on the path, and every failure must name the planted module, which exists
only in the copy. The runtime check (no torch in ``sys.modules`` after importing the app) stays in
test_isolation_and_commands.py: this one reads the source, that one sees what really gets loaded.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"


def run_tool(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    # wide COLUMNS: the report is wrapped to the terminal, which would split the names asserted on
    env = {**os.environ, "PYTHONPATH": str(cwd), "PYTHONDONTWRITEBYTECODE": "1", "COLUMNS": "500"}
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60)


def lint_imports(cwd: Path) -> subprocess.CompletedProcess:
    return run_tool(["-c", LINT_IMPORTS, "--no-cache", "--no-logo"], cwd)


@pytest.fixture
def copy(tmp_path) -> Path:
    """The packages, their contracts and the custom contract types, copied where planting harms nothing."""
    skip = shutil.ignore_patterns("__pycache__")
    for package in ("grpo_tui", "trainer_core"):
        shutil.copytree(ROOT / package, tmp_path / package, ignore=skip)
    shutil.copy(ROOT / "pyproject.toml", tmp_path)
    shutil.copytree(ROOT / "tools", tmp_path / "tools", ignore=skip)
    return tmp_path


def plant(path: Path, line: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        f.write(f"\n{line}  # planted\n")


def test_the_contracts_hold_on_the_real_tree():
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr


def test_ci_lints_before_it_tests():
    ci = (ROOT / ".ci" / "run").read_text()
    assert "./dev lint" in ci and ci.index("./dev lint") < ci.index("./dev test")


def broken_contracts(result: subprocess.CompletedProcess) -> list[str]:
    return [line.removesuffix(" BROKEN") for line in result.stdout.splitlines() if line.endswith(" BROKEN")]


APP_TO_CORE = "The app imports only the contract layer of trainer_core"
APP_TO_HEAVY = "The app never loads the training stack"
CONTRACT_LAYER = "The contract layer imports only itself"
TRAINER_TO_APP = "The trainer never imports the app"
SERVICES_NO_UI = "Services and executors use no Textual, widgets or screens"
WIDGETS_NO_SCREENS = "Widgets import no screens"
DOMAIN_LAYERS = "The contract's domains are layered"
RUN_ALONE = "The run format imports no other domain"
TRAINER_LAYERS = "The trainer's domains are layered"
SERVICE_LAYERS = "The app's services are layered"
SERVICES_UNDER = "Services sit under executors"


@pytest.mark.parametrize(
    ("where", "line", "named", "contract"),
    [
        (
            "grpo_tui/planted.py",
            "from trainer_core.training import runner",
            "grpo_tui.planted -> trainer_core.training.runner",
            APP_TO_CORE,
        ),
        ("grpo_tui/planted.py", "import torch", "grpo_tui.planted -> torch", APP_TO_HEAVY),
        (
            "trainer_core/contract/run/events.py",
            "import textual",
            "trainer_core.contract.run.events -> textual",
            CONTRACT_LAYER,
        ),
        (
            "trainer_core/contract/config/run_config.py",
            "import trainer_core.training.runner",
            "trainer_core.contract.config.run_config -> trainer_core.training.runner",
            CONTRACT_LAYER,
        ),
        (
            "trainer_core/contract/planted.py",
            "import requests",
            "trainer_core.contract.planted -> requests",
            CONTRACT_LAYER,
        ),
        (
            "trainer_core/training/planted.py",
            "import grpo_tui.app",
            "trainer_core.training.planted -> grpo_tui.app",
            TRAINER_TO_APP,
        ),
        (
            "grpo_tui/services/planted.py",
            "import textual.widgets",
            "grpo_tui.services.planted -> textual",
            SERVICES_NO_UI,
        ),
        (
            "grpo_tui/executors/planted.py",
            "from grpo_tui.widgets import runs_table",
            "grpo_tui.executors.planted -> grpo_tui.widgets.runs_table",
            SERVICES_NO_UI,
        ),
        (
            "grpo_tui/widgets/planted.py",
            "from grpo_tui.screens import confirm",
            "grpo_tui.widgets.planted -> grpo_tui.screens.confirm",
            WIDGETS_NO_SCREENS,
        ),
        (
            "trainer_core/contract/run/planted.py",
            "from trainer_core.contract.health import core",
            "trainer_core.contract.run.planted -> trainer_core.contract.health.core",
            RUN_ALONE,
        ),
        (
            "trainer_core/contract/run/planted.py",
            "from trainer_core.contract.config import checks",
            "trainer_core.contract.run.planted -> trainer_core.contract.config.checks",
            DOMAIN_LAYERS,
        ),
        (
            "trainer_core/contract/health/planted.py",
            "from trainer_core.contract.config import run_config",
            "trainer_core.contract.health.planted -> trainer_core.contract.config.run_config",
            DOMAIN_LAYERS,
        ),
        (
            "trainer_core/contract/config/planted.py",
            "from trainer_core.contract.alerts import targets",
            "trainer_core.contract.config.planted -> trainer_core.contract.alerts.targets",
            DOMAIN_LAYERS,
        ),
        (
            "trainer_core/contract/alerts/planted.py",
            "from trainer_core.contract.recipes import reader",
            "trainer_core.contract.alerts.planted -> trainer_core.contract.recipes.reader",
            DOMAIN_LAYERS,
        ),
        (
            "trainer_core/training/planted.py",
            "from trainer_core.commands import inspection",
            "trainer_core.training.planted -> trainer_core.commands.inspection",
            TRAINER_LAYERS,
        ),
        (
            "trainer_core/environment/planted.py",
            "from trainer_core.agents import episodes",
            "trainer_core.environment.planted -> trainer_core.agents.episodes",
            TRAINER_LAYERS,
        ),
        (
            "trainer_core/evaluation/planted.py",
            "from trainer_core.training import runner",
            "trainer_core.evaluation.planted -> trainer_core.training.runner",
            TRAINER_LAYERS,
        ),
        (
            "grpo_tui/services/catalog/planted.py",
            "from grpo_tui.services.stream import folded",
            "grpo_tui.services.catalog.planted -> grpo_tui.services.stream.folded",
            SERVICE_LAYERS,
        ),
        (
            "grpo_tui/services/records/planted.py",
            "from grpo_tui.services.machine import gpus",
            "grpo_tui.services.records.planted -> grpo_tui.services.machine.gpus",
            SERVICE_LAYERS,
        ),
        (
            "grpo_tui/services/lifecycle/planted.py",
            "from grpo_tui.executors import local",
            "grpo_tui.services.lifecycle.planted -> grpo_tui.executors.local",
            SERVICES_UNDER,
        ),
    ],
    ids=[
        "app-imports-heavy-module",
        "app-imports-torch",
        "contract-imports-textual",
        "contract-imports-heavy-side",
        "contract-imports-unlisted-package",
        "trainer-imports-app",
        "service-imports-textual",
        "executor-imports-a-widget",
        "widget-imports-a-screen",
        "run-imports-health",
        "run-imports-config",
        "health-imports-config",
        "config-imports-alerts",
        "alerts-imports-recipes",
        "training-imports-a-command",
        "environment-imports-agents",
        "evaluation-imports-training",
        "catalog-imports-stream",
        "records-import-machine",
        "service-imports-an-executor",
    ],
)
def test_a_planted_import_breaks_its_contract(copy, where, line, named, contract):
    plant(copy / where, line)
    result = lint_imports(copy)
    assert result.returncode != 0
    assert any(name.startswith(contract) for name in broken_contracts(result)), result.stdout + result.stderr
    assert named in result.stdout, result.stdout


def test_a_planted_import_circle_is_found_even_through_a_function_level_import(copy):
    plant(copy / "grpo_tui/planted_a.py", "from grpo_tui import planted_b")
    plant(copy / "grpo_tui/planted_b.py", "def later():\n    from grpo_tui import planted_a")
    result = lint_imports(copy)
    assert result.returncode != 0
    assert "Import circle among grpo_tui.planted_a, grpo_tui.planted_b:" in result.stdout, result.stdout


def test_an_import_for_type_checking_only_is_no_violation(copy):
    plant(copy / "grpo_tui/planted.py", "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import torch")
    result = lint_imports(copy)
    assert "Contracts:" in result.stdout and "grpo_tui.planted" not in result.stdout, result.stdout + result.stderr


def test_ruff_reads_the_project_config_and_fails_on_a_planted_unused_import(copy):
    module = copy / "tools/import_contracts.py"
    check = ["-m", "ruff", "check", "--no-cache", str(module.relative_to(copy))]
    clean = run_tool(check, copy)
    assert clean.returncode == 0, clean.stdout
    # unused (F401, ruff's default set) and deprecated (UP035, only in ours): both reported = our config is read
    module.write_text(module.read_text().replace("import sys\n", "import sys\nfrom typing import Callable\n", 1))
    result = run_tool(check, copy)
    assert result.returncode != 0
    assert "F401" in result.stdout and "UP035" in result.stdout, result.stdout


def test_a_module_left_at_the_top_of_the_contract_breaks_the_domain_layout(copy):
    plant(copy / "trainer_core/contract/loose.py", "import json")
    result = lint_imports(copy)
    assert any(name.startswith(DOMAIN_LAYERS) for name in broken_contracts(result)), result.stdout + result.stderr
    assert "trainer_core.contract.loose" in result.stdout, result.stdout


def test_lint_loads_its_contract_types_without_the_tests():
    assert "tests." not in (ROOT / "pyproject.toml").read_text().split("[tool.importlinter]")[1].split("[[")[0]


@pytest.mark.parametrize(
    ("where", "contract"),
    [
        ("trainer_core/loose.py", TRAINER_LAYERS),
        ("grpo_tui/services/loose.py", SERVICE_LAYERS),
    ],
    ids=["trainer-top-level", "services-top-level"],
)
def test_a_module_left_at_the_top_of_a_layered_package_breaks_its_layout(copy, where, contract):
    plant(copy / where, "import json")
    result = lint_imports(copy)
    assert any(name.startswith(contract) for name in broken_contracts(result)), result.stdout + result.stderr
    assert where.removesuffix(".py").replace("/", ".") in result.stdout, result.stdout
