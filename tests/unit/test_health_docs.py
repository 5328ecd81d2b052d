"""Every health rule that anything emits is a ``HealthRule`` and has its row in docs/health.md; every error kind
is an ``ErrorKind`` and is listed in docs/run-format.md.

The emitters are found in the source (a ``HealthWarning``/``Error`` built with a literal name, or a
``HealthRule``/``ErrorKind`` member named), so a rule added anywhere without its enum member or its docs fails here.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path

import pytest

import grpo_tui
import trainer_core
from trainer_core.contract.health.monitor import (
    ADVICE,
    METRIC_RULES,
    RULES,
    STOPPABLE_RULES,
    HealthMonitor,
    threshold_names,
)
from trainer_core.contract.run.disk import DISK_KINDS, FULL_KINDS
from trainer_core.contract.run.events import Error, ErrorKind, HealthWarning, decode, warning
from trainer_core.contract.run.rules import HealthRule, RuleGroup
from trainer_core.contract.run.severity import Severity

DOCS = Path(__file__).resolve().parents[2] / "docs"
# every module but the enums' own (whose advice table names every member)
SOURCES = [
    p
    for pkg in (grpo_tui, trainer_core)
    for p in sorted(Path(pkg.__path__[0]).rglob("*.py"))
    if p.parts[-2:] != ("run", "rules.py")
]


def _literal(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _argument(call: ast.Call, keyword: str) -> ast.AST | None:
    """The first positional argument of ``call``, or its ``keyword`` argument."""
    if call.args:
        return call.args[0]
    return next((k.value for k in call.keywords if k.arg == keyword), None)


def _emitted() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """``{name: {file:line, ...}}`` of the rule names and of the error kinds the source builds or names."""
    rules: dict[str, set[str]] = {}
    kinds: dict[str, set[str]] = {}
    members = {"HealthRule": (HealthRule, rules), "ErrorKind": (ErrorKind, kinds)}
    for path in SOURCES:
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            where = f"{path.name}:{getattr(node, 'lineno', 0)}"
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in members
                and node.attr.isupper()
            ):
                enum, found = members[node.value.id]
                found.setdefault(enum[node.attr].value, set()).add(where)
            if not isinstance(node, ast.Call):
                continue
            name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
            if name == "HealthWarning":
                literal = _literal(_argument(node, "rule"))
                if literal is not None:
                    rules.setdefault(literal, set()).add(where)
            elif name == "Error":
                literal = _literal(next((k.value for k in node.keywords if k.arg == "kind"), None))
                if literal is not None:
                    kinds.setdefault(literal, set()).add(where)
            elif name == "_record_failure":
                literal = _literal(node.args[0] if node.args else None)
                if literal is not None:
                    kinds.setdefault(literal, set()).add(where)
    return rules, kinds


EMITTED_RULES, EMITTED_KINDS = _emitted()


def _documented_rules() -> set[str]:
    """The rules with a row of their own in docs/health.md: a table line that starts with the rule's name."""
    return set(re.findall(r"^\| `([a-z_]+)` \|", (DOCS / "health.md").read_text(), flags=re.MULTILINE))


def test_the_scan_finds_the_emitters_it_is_meant_to():
    assert {"kl_explosion", "crash_killed", "connection_lost", "prompt_too_long", "torn_checkpoint"} <= set(
        EMITTED_RULES
    )
    assert {"environment", "exception", "trainer_exit", "vllm_server"} <= set(EMITTED_KINDS)


@pytest.mark.parametrize("rule", sorted(EMITTED_RULES))
def test_every_emitted_rule_is_a_health_rule(rule):
    assert HealthRule.parse(rule) is not None, (
        f"{rule!r} is emitted at {sorted(EMITTED_RULES[rule])} but not a HealthRule"
    )


def test_every_rule_has_its_row_in_the_health_page():
    missing = [rule.value for rule in HealthRule if rule.value not in _documented_rules()]
    assert not missing, f"docs/health.md has no row for {missing}"


def test_every_rule_is_emitted_somewhere():
    assert {rule.value for rule in HealthRule} <= set(EMITTED_RULES)


def test_the_health_page_documents_every_threshold():
    page = (DOCS / "health.md").read_text()
    for name in threshold_names():
        assert f"| `{name}` |" in page, name


def test_rule_lists_are_derived_from_the_enum():
    assert RULES == tuple(rule.value for rule in HealthRule) and all(type(name) is str for name in RULES)
    assert METRIC_RULES == tuple(r.value for r in HealthRule if r.group is RuleGroup.METRIC)
    assert STOPPABLE_RULES == tuple(r.value for r in HealthRule if r.group is RuleGroup.METRIC or r is HealthRule.STALL)
    assert set(ADVICE) == set(RULES) and all(ADVICE[rule] for rule in RULES)


def test_the_monitor_checks_every_metric_rule_in_order():
    monitor = HealthMonitor()
    assert tuple(monitor._checks) == METRIC_RULES
    assert set(monitor.rules) == set(METRIC_RULES)


def test_a_warning_carries_its_rules_one_advice_and_stays_plain_on_disk():
    built = warning(HealthRule.CRASH_KILLED, Severity.CRITICAL, 3, "killed", {"status": "lost"})
    assert built.rule is HealthRule.CRASH_KILLED and built.rule == "crash_killed"
    assert built.advice == HealthRule.CRASH_KILLED.advice == ADVICE["crash_killed"]
    record = built.to_record()
    assert record["rule"] == "crash_killed" and type(record["rule"]) is str
    back = decode(dict(record))
    assert isinstance(back, HealthWarning) and back.rule is HealthRule.CRASH_KILLED
    assert dataclasses.replace(back, time=None) == built
    newer = decode({"type": "warning", "rule": "a_rule_from_a_newer_version", "severity": "warn"})
    assert isinstance(newer, HealthWarning) and newer.rule == "a_rule_from_a_newer_version"


@pytest.mark.parametrize("kind", sorted(EMITTED_KINDS))
def test_every_emitted_error_kind_is_an_error_kind(kind):
    assert ErrorKind.parse(kind) is not None, (
        f"{kind!r} is emitted at {sorted(EMITTED_KINDS[kind])} but not an ErrorKind"
    )


def test_every_error_kind_is_listed_in_the_run_format():
    [row] = [line for line in (DOCS / "run-format.md").read_text().splitlines() if line.startswith("| `error` |")]
    assert all(f"`{kind.value}`" in row for kind in ErrorKind), row
    assert DISK_KINDS <= set(ErrorKind) and FULL_KINDS <= DISK_KINDS


def test_error_kinds_parse_and_stay_plain_on_disk():
    error = decode({"type": "error", "kind": "trainer_exit", "message": "killed"})
    assert isinstance(error, Error) and error.kind is ErrorKind.TRAINER_EXIT
    record = Error(kind=ErrorKind.DISK_FULL, message="full").to_record()
    assert record["kind"] == "disk_full" and type(record["kind"]) is str
    assert Error().kind is ErrorKind.EXCEPTION
    other = decode({"type": "error", "kind": "a_kind_from_a_newer_version"})
    assert isinstance(other, Error) and other.kind == "a_kind_from_a_newer_version"
