"""``grpo-tui mcp`` on the real KL-pathology demo run: its health read through the SDK's client, then resumed and
rolled back through ``resume_run`` and ``rollback_run``, each recorded in the run as asked by mcp and the client.

The demo run (``grpo-tui demo --pathology kl``) trains the pre-trained tiny model at lr 1e-2 until the
``kl_explosion`` rule stops it, with a checkpoint: one trained run serves every test here. The refusals (actions
off, ``latest``, a bad ``to`` or setting, a run on a host) need no training and use written runs.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from grpo_tui.api import RunHandle
from tests.run_fixtures import make_finished_run
from trainer_core.contract.run.events import EventType, HealthWarning, Rewound, RunFinished, RunStarted
from trainer_core.contract.run.folder import RunFolder
from trainer_core.contract.run.status import Status

from ..helpers import cli, only_run, wait_for
from .test_mcp_stdio import FINISHED, Client, check_answer, mcp_client

AGENT = "overnight-agent"


@pytest.fixture(scope="module")
def kl_demo(pretrained_tiny_model, tmp_path_factory) -> Path:
    """The KL-pathology demo's run, stopped by its ``kl_explosion`` rule (as test_isolation_and_commands runs it)."""
    home = tmp_path_factory.mktemp("kl-demo")
    cache = home / "cache" / "grpo-tui"
    cache.mkdir(parents=True)
    (cache / "tiny-model").symlink_to(pretrained_tiny_model)  # the demo's cached model: nothing to build
    runs = home / "runs"
    result = cli(
        "demo", "--pathology", "kl", "--max-steps", "300", "--runs-dir", str(runs),
        env={"XDG_CACHE_HOME": str(home / "cache")},
    )  # fmt: skip
    assert result.returncode == 3, result.stdout + result.stderr  # a stopped run's exit code
    return only_run(runs)


@pytest.fixture(scope="module")
def reader(kl_demo) -> Iterator[Client]:
    with mcp_client("--runs-dir", str(kl_demo.parent)) as client:
        yield client


def ended(handle: RunHandle) -> bool:
    return not handle.status().is_live and handle.status() is not Status.STARTING


def test_health_of_the_kl_pathology_demo_has_the_explosion_with_evidence_and_advice(kl_demo, reader):
    answer = reader.call("health", {"run": kl_demo.name})
    warned = next(
        e for e in RunHandle(RunFolder(kl_demo)).events(EventType.WARNING)
        if isinstance(e, HealthWarning) and e.rule == "kl_explosion"
    )  # fmt: skip
    kl = next(w for w in answer["warnings"] if w["rule"] == "kl_explosion")
    assert (kl["step"], kl["severity"], kl["message"]) == (warned.step, str(warned.severity), warned.message)
    assert kl["evidence"] and kl["evidence"] == warned.evidence, kl  # the numbers the rule judged
    assert kl["advice"] == warned.advice and "--lr" in kl["advice"]
    quiet = {q["rule"]: q["why"] for q in answer["quiet"]}
    assert "kl_explosion" not in quiet and quiet and all(why.strip() for why in quiet.values()), quiet
    summary = reader.call("run_summary", {"run": "latest"})
    assert summary["run"]["status"] == "stopped" and summary["run"]["warnings"] >= 1


def test_eval_json_of_the_demo_run_is_valid_by_the_published_schema(kl_demo, reader):
    stopped_at = RunHandle(RunFolder(kl_demo)).events(EventType.RUN_FINISHED)[-1]
    done = cli("eval", kl_demo.name, "--runs-dir", str(kl_demo.parent), "--checkpoint", "base",
               "--checkpoint", str(stopped_at.step), "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    scores = json.loads(done.stdout)
    check_answer("cli.eval", scores)
    assert [m["step"] for m in scores["models"]] == [0, stopped_at.step] and scores["metric"] == "wrote_target"
    evals = reader.call("evals", {"run": kl_demo.name})  # the held-out evals the run logged, by the same schema
    assert any(m["metric"] == "wrote_target" and m["base"] for m in evals["metrics"]), evals


def test_resume_run_then_rollback_run_on_the_demo_run_are_recorded_as_asked_by_mcp(kl_demo, reader):
    handle = RunHandle(RunFolder(kl_demo))
    run_id = kl_demo.name
    stopped_at = handle.events(EventType.RUN_FINISHED)[-1]
    assert isinstance(stopped_at, RunFinished)
    with mcp_client("--runs-dir", str(kl_demo.parent), "--allow-actions", client=AGENT) as client:
        assert "spell out" in client.error("resume_run", {"run": "latest"})
        resumed = client.call("resume_run", {"run": run_id, "max_steps": stopped_at.step + 2})
        assert resumed["resumed_run_id"] == run_id and resumed["requested_by"] == f"mcp: {AGENT}"
        record = json.loads((kl_demo / "state.json").read_text()).get("resume_change")
        assert record is None or (record["by"] == "mcp" and AGENT in record["reason"])  # None once the leg began
        wait_for(lambda: ended(handle), timeout=240, what="the resumed leg's end")
        legs = [e for e in handle.events(EventType.RUN_STARTED) if isinstance(e, RunStarted)]
        assert len(legs) == 2 and legs[-1].resumed_from == f"checkpoints/checkpoint-{stopped_at.step}"
        assert legs[-1].restart == 1
        assert legs[-1].by == "mcp" and legs[-1].reason == f"resume_run asked by mcp: {AGENT}"

        ledger = client.call("checkpoints", {"run": run_id})["checkpoints"]
        reached = handle.events(EventType.RUN_FINISHED)[-1]
        assert isinstance(reached, RunFinished) and reached.step > stopped_at.step
        back_to = min(c["step"] for c in ledger if c["name"].startswith("checkpoint-") and "torn" not in c["marks"])
        sets = {"lr": 1e-4, "max_steps": back_to + 1}
        answer = client.call(
            "rollback_run", {"run": run_id, "to": str(back_to), "set": sets, "reason": "KL exploded at lr 1e-2"}
        )
        assert (answer["to_step"], answer["from_step"], answer["max_steps"]) == (back_to, reached.step, back_to + 1)
        assert answer["checkpoint"] == f"checkpoint-{back_to}" and answer["stopped"] is None
        assert answer["requested_by"] == f"mcp: {AGENT}" and answer["revision"] == 1
        assert answer["untrusted"]["changes"]["lr"] == {"from": 0.01, "to": 0.0001}
        wait_for(lambda: handle.events(EventType.REWOUND), timeout=120, what="the rollback's rewound event")
        wait_for(lambda: ended(handle), timeout=240, what="the rolled-back leg's end")

    rewound = handle.events(EventType.REWOUND)
    assert len(rewound) == 1 and isinstance(rewound[0], Rewound)
    event = rewound[0]
    assert (event.from_step, event.to_step, event.checkpoint) == (reached.step, back_to, f"checkpoint-{back_to}")
    assert event.by == "mcp" and event.reason == f"KL exploded at lr 1e-2 (rollback_run asked by mcp: {AGENT})"
    assert event.changes["lr"] == {"from": 0.01, "to": 0.0001} and event.revision == 1
    last = handle.events(EventType.RUN_FINISHED)[-1]
    assert isinstance(last, RunFinished) and last.step == back_to + 1  # completed, or stopped there by the KL rule


def test_rollback_run_is_refused_with_actions_off_for_latest_and_for_bad_input_before_anything_changes(tmp_path):
    runs = tmp_path / "runs"
    folder = make_finished_run(runs, FINISHED, status=Status.STOPPED, max_steps=100)
    before = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
    with mcp_client("--runs-dir", str(runs)) as client:
        message = client.error("rollback_run", {"run": FINISHED, "to": "20"})
        assert "--allow-actions" in message and "nothing was done" in message
    with mcp_client("--runs-dir", str(runs), "--allow-actions") as client:
        assert "spell out the run's id" in client.error("rollback_run", {"run": "latest", "to": "20"})
        assert "spell out the whole id" in client.error("rollback_run", {"run": FINISHED[:-2], "to": "20"})
        bad = client.error("rollback_run", {"run": FINISHED, "to": "20", "set": {"model": "other"}})
        assert "may not change model" in bad and "nothing was done" in bad and "--set" not in bad
        long = client.error("rollback_run", {"run": FINISHED, "to": "20", "reason": "x" * 600})
        assert "reason" in long and "500" in long
        assert "no complete checkpoint at step 99" in client.error("rollback_run", {"run": FINISHED, "to": "99"})
        assert "got 'soon'" in client.error("rollback_run", {"run": FINISHED, "to": "soon"})
    assert {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()} == before
