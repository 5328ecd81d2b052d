"""``grpo-tui mcp`` reads a run on a host over the test sshd, through the same SSH executor and mirror as the app,
and answers a tool error naming the host when one is down."""

from __future__ import annotations

from tests.remote_hosts import remote, sshd  # noqa: F401
from tests.run_fixtures import make_finished_run

from .test_mcp_stdio import FINISHED, mcp_client


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
