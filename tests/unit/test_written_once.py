"""Concepts written once stay written once: exit code 2, the training stack's names and the demos' prompts.

Each is one constant in one module; a second copy drifts. These read the product's source (ast), so a copy
fails here on the day it is written, wherever it lands.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import tomllib

from trainer_core.commands import demo_prompts
from trainer_core.contract.config.stack import NEVER_IN_APP, TRAINING_STACK
from trainer_core.contract.run.status import EXIT_BAD_INPUT

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = [p for package in ("grpo_tui", "trainer_core") for p in sorted((ROOT / package).rglob("*.py"))]


def trees() -> list[tuple[Path, ast.Module]]:
    return [(path, ast.parse(path.read_text(), str(path))) for path in PRODUCT]


def where(path: Path, node: ast.AST) -> str:
    return f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', '?')}"


def test_exit_code_2_is_one_constant_that_every_command_and_the_trainer_use():
    found = []
    for path, tree in trees():
        for node in ast.walk(tree):
            if isinstance(node, ast.Return) and node.value is not None:
                values = [node.value.body, node.value.orelse] if isinstance(node.value, ast.IfExp) else [node.value]
                if any(isinstance(v, ast.Constant) and v.value == 2 for v in values):
                    found.append(where(path, node))
            if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in (
                "exit",
                "SystemExit",
            ):
                if node.args and isinstance(node.args[0], ast.Constant) and node.args[0].value == 2:
                    found.append(where(path, node))
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and node.value.value == 2:
                names = [t.id for t in node.targets if isinstance(t, ast.Name)]
                if any("EXIT" in n for n in names) and path.name != "status.py":
                    found.append(where(path, node))
    assert EXIT_BAD_INPUT == 2
    assert not found, f"exit code 2 written outside trainer_core/contract/run/status.py: {found}"
    main = (ROOT / "trainer_core" / "__main__.py").read_text()
    assert "EXIT_BAD_INPUT" in main


def test_the_training_stack_is_named_once_and_the_import_contract_forbids_exactly_it():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    contracts = config["tool"]["importlinter"]["contracts"]
    forbidden = [
        c["forbidden_modules"]
        for c in contracts
        if c.get("source_modules") == ["grpo_tui"] and "torch" in c.get("forbidden_modules", ())
    ]
    assert forbidden == [list(NEVER_IN_APP)]
    stack = set(TRAINING_STACK)
    copies = []
    for path, tree in trees():
        if path.name == "stack.py":
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
                strings = {e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
                if len(strings & stack) >= 3:
                    copies.append(where(path, node))
    assert not copies, f"the training stack listed again outside contract/config/stack.py: {copies}"


@pytest.mark.parametrize(
    "prompt",
    [demo_prompts.INSTRUCTIONS[0], demo_prompts.REQUESTS[0]],
    ids=["pattern-instructions", "hotel-requests"],
)
def test_the_demos_prompts_are_written_only_in_demo_prompts(prompt):
    copies = []
    for path, tree in trees():
        if path.name == "demo_prompts.py":
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and node.value == prompt:
                copies.append(where(path, node))
    assert not copies, f"{prompt!r} written outside trainer_core/commands/demo_prompts.py: {copies}"
