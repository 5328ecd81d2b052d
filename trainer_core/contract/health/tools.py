"""Rules for agentic runs, whose tools are called while the model generates (TRL's ``tools`` and
``environment_factory``):

- ``tool_failures``: ``tools/failure_frequency`` (failed calls / calls) held at ``tool_failure_high`` or more
  for a window while the model calls tools: the model calls them wrongly, or a tool is broken;
- ``tool_unused``: once the first ``tool_grace`` steps are over, ``tools/call_frequency`` (calls per episode)
  stays at 0 for a window: the model learned to answer without the tools (or never found them);
- ``turn_limit``: ``samples/turn_limit_share`` (episodes that ended on unanswered tool calls: at
  ``--max-tool-calls``, or with no room left under ``--rl-max-new-tokens``) held at
  ``turn_limit_high`` or more for a window: episodes are cut off before they finish.
"""

from __future__ import annotations

from statistics import fmean

from trainer_core.contract.health.core import RunFacts, Thresholds, Window
from trainer_core.contract.run.events import HealthWarning, warning
from trainer_core.contract.run.rules import HealthRule
from trainer_core.contract.run.severity import Severity

CALL_FREQUENCY = "tools/call_frequency"
FAILURE_FREQUENCY = "tools/failure_frequency"
TURN_LIMIT_SHARE = "samples/turn_limit_share"


def tool_failures(w: Window, t: Thresholds, facts: RunFacts, step: int, m: dict) -> HealthWarning | None:
    failures = w.recent_finite(FAILURE_FREQUENCY, t.window)
    calls = w.recent_finite(CALL_FREQUENCY, t.window)
    if failures is None or calls is None or min(calls) <= 0 or min(failures) < t.tool_failure_high:
        return None
    return warning(
        HealthRule.TOOL_FAILURES,
        Severity.WARN,
        step,
        f"{fmean(failures):.0%} of tool calls failed over the last {t.window} steps ({fmean(calls):.2g} calls per "
        "episode): the model calls the tools wrongly, or a tool is broken.",
        {FAILURE_FREQUENCY: failures, CALL_FREQUENCY: calls},
    )


def tool_unused(w: Window, t: Thresholds, facts: RunFacts, step: int, m: dict) -> HealthWarning | None:
    calls = w.recent_finite(CALL_FREQUENCY, t.window)
    if w.count <= t.tool_grace or calls is None or max(calls) > 0:
        return None
    earlier = [v for _, values in w.steps if isinstance(v := values.get(CALL_FREQUENCY), (int, float))]
    used = max(earlier, default=0) > 0
    what = "the model used them earlier and learned to answer without them" if used else "the model never calls them"
    return warning(
        HealthRule.TOOL_UNUSED,
        Severity.WARN,
        step,
        f"No tool was called in the last {t.window} steps: {what}.",
        {CALL_FREQUENCY: calls, "used_before": used},
    )


def turn_limit(w: Window, t: Thresholds, facts: RunFacts, step: int, m: dict) -> HealthWarning | None:
    shares = w.recent_finite(TURN_LIMIT_SHARE, t.window)
    if shares is None or min(shares) < t.turn_limit_high:
        return None
    return warning(
        HealthRule.TURN_LIMIT,
        Severity.WARN,
        step,
        f"{fmean(shares):.0%} of episodes ended on tool calls left unanswered (the tool-call or length limit) over "
        f"the last {t.window} steps: they are cut off before the model answers.",
        {TURN_LIMIT_SHARE: shares},
    )
