"""The demo's piped summary (cli/demo.py): a run that a health rule stopped says so beside its held-out scores, and
that the score of the policy it stopped is no success; a run stopped by a person, or completed, says nothing more.
The KL demo itself is run in tests/integration/test_isolation_and_commands.py."""

from __future__ import annotations

import pytest

from grpo_tui.cli.demo import heldout_summary
from trainer_core.contract.run.event_log import EventWriter
from trainer_core.contract.run.events import Eval, RunFinished, StopRequested, warning
from trainer_core.contract.run.rules import HealthRule
from trainer_core.contract.run.severity import Severity
from trainer_core.contract.run.status import Status


def write_run(path, status: Status, reason: str | None, rule: HealthRule | None = None):
    path.mkdir()
    metric = {"wrote_target": {"mean": 0.08}}
    with EventWriter(path / "events.jsonl") as w:
        w.emit(Eval(step=0, metrics=metric, task_metrics=["wrote_target"], prompts=16, generations=4, base=True))
        if rule is not None:
            w.emit(warning(rule, Severity.CRITICAL, 3, "it went wrong.", {}))
        if reason is not None:
            w.emit(StopRequested(reason=reason, step=3))
        w.emit(Eval(step=4, metrics={"wrote_target": {"mean": 1.0}}, task_metrics=["wrote_target"], prompts=16))
        w.emit(RunFinished(status=status, reason=reason, step=4))
    return path


@pytest.mark.parametrize(
    ("rule", "what"),
    [(HealthRule.KL_EXPLOSION, "a diverged policy"), (HealthRule.STALL, "a policy the stall rule judged broken")],
)
def test_a_run_a_rule_stopped_is_no_success_whatever_it_scores(tmp_path, rule, what):
    run = write_run(tmp_path / "run", Status.STOPPED, f"auto-stop: {rule} at step 3", rule)
    heldout, note = heldout_summary(run).splitlines()
    assert heldout == "held-out (16 prompts x 4): wrote_target 8% at step 0, 100% at step 4"
    assert note.startswith(f"not a success: the {rule} rule stopped this run at step 3 (--stop-on {rule}), which ")
    assert "warned: it went wrong." in note and f"held-out score is that of {what}" in note
    assert "grpo-tui watch run" in note and rule.advice in note


@pytest.mark.parametrize(("status", "reason"), [(Status.STOPPED, "SIGTERM received"), (Status.COMPLETED, None)])
def test_any_other_run_keeps_its_one_line(tmp_path, status, reason):
    run = write_run(tmp_path / "run", status, reason)
    assert heldout_summary(run) == "held-out (16 prompts x 4): wrote_target 8% at step 0, 100% at step 4"
