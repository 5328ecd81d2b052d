"""Each record that crosses the wire is defined once, and "a JSON number that is not a bool" is checked in one module.

An ast scan of the source: no class other than the record's own has a GPU's, a run row's, a host's ``info`` or a
stop outcome's fields; the app builds none of their JSON objects by hand (a dict display of their keys) and converts
none with ``asdict``; and in the services, the executors and the contract no ``isinstance(x, bool)`` or
``type(x) is int`` check is written outside ``trainer_core/contract/run/json_values.py``. The checks themselves are
pinned where bools, NaN, huge ints and lengths make inline checks go wrong.
"""

from __future__ import annotations

import ast
import math
from dataclasses import fields
from pathlib import Path

import pytest

from grpo_tui.services.records.gpu import GPU
from grpo_tui.services.records.host_info import HostInfo
from grpo_tui.services.records.run_row import RunInfo
from grpo_tui.services.records.stop_outcome import StopOutcome
from trainer_core.contract.run import json_values
from trainer_core.contract.run.json_values import is_number, is_text, is_whole, number, text, whole

ROOT = Path(__file__).resolve().parents[2]
RECORDS = (GPU, RunInfo, HostInfo, StopOutcome)
OWNED = ("grpo_tui/services", "grpo_tui/executors", "trainer_core/contract")
CHECKS = ROOT / "trainer_core/contract/run/json_values.py"


def sources(*folders: str) -> list[tuple[Path, ast.Module]]:
    return [(p, ast.parse(p.read_text(), str(p))) for f in folders for p in sorted((ROOT / f).rglob("*.py"))]


def field_names(node: ast.ClassDef) -> set[str]:
    return {s.target.id for s in node.body if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name)}


@pytest.mark.parametrize("record", RECORDS, ids=lambda r: r.__name__)
def test_no_other_class_has_a_records_fields(record):
    own = {f.name for f in fields(record)}  # a copy has most of them (a dashboard frame shares a few with a row)
    copies = [
        f"{path.relative_to(ROOT)}:{node.lineno} {node.name}"
        for path, tree in sources("grpo_tui", "trainer_core")
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef) and len(field_names(node) & own) >= max(4, len(own) * 2 // 3)
    ]
    assert copies == [f"{Path(record.__module__.replace('.', '/') + '.py')}:{_line(record)} {record.__name__}"]


def _line(record) -> int:
    path = ROOT / (record.__module__.replace(".", "/") + ".py")
    return next(
        n.lineno
        for n in ast.walk(ast.parse(path.read_text()))
        if isinstance(n, ast.ClassDef) and n.name == record.__name__
    )


@pytest.mark.parametrize("record", RECORDS, ids=lambda r: r.__name__)
def test_the_app_writes_no_records_json_by_hand(record):
    """A dict display with a record's keys would be a second encoder; ``asdict`` a conversion between copies."""
    keys = {key for _, key, _ in record.table()}
    found = []
    for path, tree in sources("grpo_tui"):
        for node in ast.walk(tree):
            if isinstance(node, ast.Dict):
                named = {k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
                if len(named & keys) >= min(len(keys), 5):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
            elif isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "asdict":
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} asdict")
    assert found == []


def _inline_type_checks(tree: ast.Module) -> list[int]:
    lines = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and getattr(node.func, "id", None) == "isinstance"
            and len(node.args) == 2
            and getattr(node.args[1], "id", None) == "bool"
        ):
            lines.append(node.lineno)  # isinstance(x, bool): the half of a number check that inline copies forget
        elif (
            isinstance(node, ast.Compare)
            and isinstance(node.left, ast.Call)
            and getattr(node.left.func, "id", None) == "type"
            and any(isinstance(op, (ast.Is, ast.IsNot, ast.Eq, ast.NotEq)) for op in node.ops)
            and any(getattr(c, "id", None) in ("int", "float", "bool") for c in node.comparators)
        ):
            lines.append(node.lineno)  # type(x) is int
    return lines


def test_json_value_checks_are_written_in_one_module():
    found = [
        f"{path.relative_to(ROOT)}:{line}"
        for path, tree in sources(*OWNED)
        if path != CHECKS
        for line in _inline_type_checks(tree)
    ]
    assert found == [], "use trainer_core.contract.run.json_values (is_number, is_whole, is_flag, ...)"
    assert _inline_type_checks(ast.parse(CHECKS.read_text()))  # the scan finds them where they are


@pytest.mark.parametrize(
    ("value", "number_", "whole_"),
    [
        (True, False, False),
        (False, False, False),
        (0, True, True),
        (-1, True, False),
        (1 << 80, True, True),  # an int of any size is finite (math.isfinite would raise on it)
        (1.0, True, False),
        (math.nan, False, False),
        (math.inf, False, False),
        ("1", False, False),
        (None, False, False),
        ([1], False, False),
    ],
)
def test_the_checks(value, number_, whole_):
    assert is_number(value) is number_ and is_whole(value) is whole_
    assert number().accepts(value) is number_ and number().or_null().accepts(value) is (number_ or value is None)


def test_the_rules_say_what_they_expect():
    assert whole(0, 100).problem(101) == "expected a whole number from 0 to 100, got 101"
    assert whole(0, 100).problem(True) == "expected a whole number from 0 to 100, got True"
    assert number(0).or_null().problem(-1.5) == "expected a finite number >= 0 or null, got -1.5"
    assert text(3).problem("long") == "expected a string of at most 3 characters, got 'long'"
    assert text(3).problem("x" * 200).endswith("...") and is_text("abc", 3) and not is_text("abcd", 3)
    assert json_values.FLAG.problem(1) == "expected true or false, got 1" and json_values.FLAG.accepts(False)
