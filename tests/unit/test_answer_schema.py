"""One JSON Schema for every machine-readable answer: published as written from its source, and true of real output.

``docs/answers.schema.json`` is written by ``python -m grpo_tui.mcp_server.schema``; these tests fail when it and
the source differ, validate the ``--json`` outputs of real commands against it, and change a record to see the
validation fail. The MCP tools' answers are validated in tests/integration/test_mcp_*.py, as are ``eval --json``
on the real KL-pathology demo run (test_mcp_actions.py) and ``hosts --json`` of a host over the test sshd
(test_mcp_remote.py).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from grpo_tui.mcp_server.schema import VERSION, main, schema, text
from tests.run_fixtures import make_eval_run, make_finished_run

from ..helpers import EXAMPLES, ROOT, cli

PUBLISHED = ROOT / "docs" / "answers.schema.json"
FINISHED = "20260101-000000-abcdef"
EVALS = "20260101-000000-e7a1ed"


def validator(name: str) -> jsonschema.Draft202012Validator:
    document = {k: v for k, v in schema().items() if k != "anyOf"}
    return jsonschema.Draft202012Validator({**document, "$ref": f"#/$defs/{name}"})


def errors(name: str, value: Any) -> list[str]:
    return [e.message for e in validator(name).iter_errors(value)]


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    runs = tmp_path_factory.mktemp("schema") / "runs"
    make_finished_run(runs, FINISHED)
    make_eval_run(runs, EVALS)
    return runs


@pytest.fixture(scope="module")
def outputs(runs) -> dict[str, Any]:
    """The ``--json`` output of each command, parsed."""
    found = {}
    for name, args in {
        "cli.runs": ["runs", "--json"],
        "cli.checkpoints": ["checkpoints", EVALS, "--json"],
        "cli.info": ["info", "--json"],
        "cli.stop": ["stop", FINISHED, "--json"],
    }.items():
        done = cli(*args, "--runs-dir", str(runs))
        assert done.returncode == 0, done.stderr
        found[name] = json.loads(done.stdout)
    return found


def test_the_published_schema_is_the_one_the_source_writes(tmp_path):
    assert PUBLISHED.read_text(encoding="utf-8") == text(), "run: python -m grpo_tui.mcp_server.schema " + str(
        PUBLISHED.relative_to(ROOT)
    )
    written = tmp_path / "schema.json"
    assert main([str(written)]) == 0 and written.read_text(encoding="utf-8") == text()


def test_the_schema_is_a_valid_json_schema_and_names_every_answer():
    document = schema()
    jsonschema.Draft202012Validator.check_schema(document)
    assert document["version"] == VERSION
    names = set(document["$defs"])
    assert {"cli.runs", "cli.checkpoints", "cli.info", "cli.stop", "cli.eval", "cli.launch", "cli.hosts"} <= names
    tools = {"list_runs", "run_summary", "metric_history", "health", "evals", "checkpoints", "samples"}
    assert {f"mcp.{t}" for t in (*tools, "compare_runs", "logs", "stop_run", "resume_run", "rollback_run")} <= names


@pytest.mark.parametrize("name", ["cli.runs", "cli.checkpoints", "cli.info", "cli.stop"])
def test_real_json_output_is_valid(outputs, name):
    assert errors(name, outputs[name]) == []
    jsonschema.validate(outputs[name], schema())  # and valid as some answer of the whole document


def test_launch_dry_run_json_is_valid_whether_the_config_passes_or_not(tmp_path):
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text('{"model_type": "qwen2"}')  # the dry run checks the folder, loads nothing
    env = ["--rl-env-module", str(EXAMPLES / "pattern_env.py"), "--rl-env-class", "PatternEnv"]
    runs = ["--runs-dir", str(tmp_path / "runs")]
    passed = cli("launch", "--dry-run", "--json", "--model", str(model), *env, *runs)
    refused = cli("launch", "--dry-run", "--json", "--model", str(tmp_path / "nowhere"), *env, *runs)
    assert (passed.returncode, refused.returncode) == (0, 2), passed.stderr + refused.stderr
    for done in (passed, refused):
        answer = json.loads(done.stdout)
        assert errors("cli.launch_check", answer) == []
        jsonschema.validate(answer, schema())
    problems = json.loads(refused.stdout)["problems"]
    assert [p["field"] for p in problems] == ["model"]
    assert errors("cli.launch_check", {**json.loads(passed.stdout), "ok": "yes"})
    assert not (tmp_path / "runs").exists()  # a dry run writes nothing


def test_hosts_json_of_a_host_that_is_down_is_valid(tmp_path):
    hosts = tmp_path / "hosts.yaml"
    hosts.write_text(  # port 1 on this machine: the connection is refused at once
        "deadbox:\n  ssh: 127.0.0.1\n  ssh_options: [Port=1, BatchMode=yes, ConnectTimeout=5]\n"
    )
    hosts.chmod(0o600)
    done = cli("hosts", "--json", env={"GRPO_TUI_HOSTS": str(hosts)})
    assert done.returncode == 1, done.stdout + done.stderr  # a host that did not answer
    rows = json.loads(done.stdout)
    assert [(r["name"], r["reachable"]) for r in rows] == [("deadbox", False)] and rows[0]["error"]
    assert errors("cli.hosts", rows) == []
    jsonschema.validate(rows, schema())
    assert errors("cli.hosts", [{**rows[0], "gpus": "none"}])


def test_a_changed_record_fails_validation(outputs):
    rows = copy.deepcopy(outputs["cli.runs"])
    rows[0]["status"] = "exploded"
    assert any("exploded" in e for e in errors("cli.runs", rows))
    rows = copy.deepcopy(outputs["cli.runs"])
    del rows[1]["step"]
    assert any("'step' is a required property" in e for e in errors("cli.runs", rows))
    ledger = copy.deepcopy(outputs["cli.checkpoints"])
    ledger["checkpoints"][0]["step"] = "ten"
    assert errors("cli.checkpoints", ledger)
    info = dict(outputs["cli.info"], surprise=1)  # a field the schema does not know is a change too
    assert errors("cli.info", info)


def test_an_mcp_answer_with_run_text_outside_untrusted_fails_validation():
    sample = {
        "answer": "samples",
        "version": VERSION,
        "run_id": FINISHED,
        "host": None,
        "read_at": 0.0,
        "step": 3,
        "steps": [3],
        "samples": [{"reward": 0.5, "untrusted": {"prompt": "p", "completion": "c"}}],
    }
    assert errors("mcp.samples", sample) == []
    moved = copy.deepcopy(sample)
    moved["samples"][0]["completion"] = moved["samples"][0].pop("untrusted")["completion"]
    assert errors("mcp.samples", moved)
    assert errors("mcp.samples", dict(sample, version=VERSION + 1))
