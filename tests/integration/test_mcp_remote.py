"""``grpo-tui mcp`` reads a run on a host over the test sshd, through the same SSH executor and mirror as the app,
answers a tool error naming the host when one is down, and one naming the command when a rollback is asked of a run
on a host; ``hosts --json`` of the same hosts is valid by the published schema."""

from __future__ import annotations

import json

from tests.remote_hosts import remote, sshd  # noqa: F401
from tests.run_fixtures import make_finished_run

from .test_mcp_stdio import FINISHED, check_answer, mcp_client

STOPPED = "20260107-000000-5ab0c1"


def test_a_run_on_a_host_is_listed_and_read_and_a_down_host_is_named(remote):  # noqa: F811
    make_finished_run(remote.runs / "gpubox", FINISHED)
    with mcp_client(env=remote.env) as client:
        listed = client.call("list_runs", {"host": "gpubox"})
        assert [(r["run_id"], r["host"], r["status"]) for r in listed["runs"]] == [(FINISHED, "gpubox", "completed")]
        summary = client.call("run_summary", {"run": FINISHED, "host": "gpubox"})
        assert summary["host"] == "gpubox" and summary["run"]["step"] == 40
        history = client.call("metric_history", {"run": "latest", "keys": ["reward"], "host": "gpubox"})
        assert history["run_id"] == FINISHED and history["series"][0]["count"] == 40
        rules = {w["rule"] for w in client.call("health", {"run": FINISHED, "host": "gpubox"})["warnings"]}
        assert {"kl_explosion", "mode_collapse"} <= rules
        ledger = client.call("checkpoints", {"run": FINISHED, "host": "gpubox"})
        assert {10, 20, 30, 40} <= {c["step"] for c in ledger["checkpoints"]}
        assert "host deadbox" in client.error("list_runs", {"host": "deadbox"})
        everywhere = client.call("list_runs")
        assert FINISHED in {r["run_id"] for r in everywhere["runs"] if r["host"] == "gpubox"}
        assert "deadbox" in {down["host"] for down in everywhere["hosts_down"]}


def test_rollback_run_of_a_run_on_a_host_names_the_command_and_hosts_json_is_valid(remote):  # noqa: F811
    folder = make_finished_run(remote.runs / "gpubox", STOPPED, status="stopped", max_steps=100)
    with mcp_client("--allow-actions", env=remote.env) as client:
        message = client.error("rollback_run", {"run": STOPPED, "host": "gpubox", "to": "20"})
    assert f"grpo-tui rollback {STOPPED} --host gpubox --to 20" in message and "nothing was done" in message
    assert "resume_from" not in (folder / "state.json").read_text()
    done = remote.cli("hosts", "--json")
    rows = {row["name"]: row for row in json.loads(done.stdout)}
    assert rows["gpubox"]["reachable"] is True and rows["deadbox"]["reachable"] is False, done.stdout
    check_answer("cli.hosts", list(rows.values()))
