"""``grpo-tui mcp`` on a live run of the tiny model: read while it trains, refused a stop without
``--allow-actions`` (the run goes on), then stopped through ``stop_run``, with the action in its events."""

from __future__ import annotations

import json
from pathlib import Path

from grpo_tui.api import RunHandle
from trainer_core.contract.run.events import EventType, Metrics, RunFinished, StopRequested
from trainer_core.contract.run.folder import RunFolder
from trainer_core.contract.run.status import Status

from ..helpers import PATTERN_FLAGS, cli, wait_for
from .test_mcp_stdio import check_answer, mcp_client


def steps(handle: RunHandle) -> list[int]:
    return [e.step for e in handle.events(EventType.METRICS) if isinstance(e, Metrics)]


def test_a_live_run_is_read_refused_a_stop_without_actions_then_stopped_by_stop_run(tiny_model, runs_dir: Path):
    launched = cli("launch", "--json", "--model", tiny_model, *PATTERN_FLAGS, "--max-steps", "2000",
                   "--save-steps", "1000", "--runs-dir", str(runs_dir))  # fmt: skip
    assert launched.returncode == 0, launched.stderr
    reply = json.loads(launched.stdout)
    check_answer("cli.launch", reply)
    handle = RunHandle(RunFolder(Path(reply["path"])))
    run_id = reply["run_id"]
    wait_for(lambda: len(steps(handle)) >= 3, timeout=180, what="three steps of the live run")

    with mcp_client("--runs-dir", str(runs_dir)) as client:
        summary = client.call("run_summary", {"run": "latest"})
        assert summary["run_id"] == run_id and summary["run"]["status"] == "running" and summary["run"]["total"] == 2000
        assert summary["steps_per_second"] and summary["eta_seconds"] and summary["eta_seconds"] > 0
        history = client.call("metric_history", {"run": run_id, "keys": ["reward"]})
        assert history["series"][0]["count"] >= 3
        assert [r["status"] for r in client.call("list_runs", {"status": "running"})["runs"]] == ["running"]
        refused = client.error("stop_run", {"run": run_id})
        assert "--allow-actions" in refused
        at_refusal = max(steps(handle))
        wait_for(lambda: max(steps(handle)) >= at_refusal + 2, timeout=120, what="the run going on after a refusal")
        assert handle.status() is Status.RUNNING and not handle.events(EventType.STOP_REQUESTED)

    with mcp_client("--runs-dir", str(runs_dir), "--allow-actions", client="overnight-agent") as client:
        assert "spell out" in client.error("stop_run", {"run": "latest"})
        assert handle.status() is Status.RUNNING
        answer = client.call("stop_run", {"run": run_id})
        assert answer["outcome"]["status"] == "stopped" and answer["outcome"]["graceful"] is True
        assert answer["requested_by"] == "mcp: overnight-agent"
        assert client.call("run_summary", {"run": run_id})["run"]["status"] == "stopped"

    asked = handle.events(EventType.STOP_REQUESTED)
    assert asked and all(
        isinstance(e, StopRequested) and "grpo-tui stop (mcp: overnight-agent)" in (e.reason or "") for e in asked
    )
    final = handle.events(EventType.RUN_FINISHED)[-1]
    assert isinstance(final, RunFinished) and final.status is Status.STOPPED
    assert "mcp: overnight-agent" in (final.reason or "")
