"""An inspection that crashed or scored nothing is a failure in the app's gate, never a pass: the gate says why,
shows the end of the inspection's log as literal text, and offers no launch with it (issue 44, point 1)."""

from __future__ import annotations

import json
import sys
from typing import Any

from textual.widgets import Button

from grpo_tui.app import make_app
from grpo_tui.screens.inspect import InspectScreen
from grpo_tui.services.lifecycle import inspections
from trainer_core.contract.config.run_config import RunConfig

from ..helpers import EXAMPLES
from .conftest import screen_text, wait_until

SIZE = (120, 40)
PATTERN: dict[str, Any] = {"rl_env_module": str(EXAMPLES / "pattern_env.py"), "rl_env_class": "PatternEnv"}


async def ended_gate(pilot, config: RunConfig, runs_dir, timeout: float = 120) -> InspectScreen:
    """Open the gate on ``config`` (as the form's launch does) and wait for its inspection to end."""
    gate = InspectScreen(config, runs_dir, samples=4)
    pilot.app.push_screen(gate)
    await wait_until(
        pilot, lambda: gate.finished or gate.failure is not None, timeout, interval=0.2, what="the inspection's end"
    )
    await pilot.pause()
    return gate


def assert_no_launch_offered(app, gate: InspectScreen) -> str:
    shown = screen_text(app)
    assert "No problems found" not in shown
    assert "scored of" not in shown  # no score table for nothing scored
    assert "Launch" not in shown  # neither the button nor the footer's key
    launch = gate.query_one("#launch", Button)
    assert not launch.display and launch.disabled
    return shown


async def test_a_crashed_inspection_shows_its_log_and_offers_no_launch(tmp_path):
    model = tmp_path / "broken-model"  # a folder whose config.json transformers cannot read: the child crashes
    model.mkdir()
    (model / "config.json").write_text("{not json")
    runs_dir = tmp_path / "runs"
    app = make_app(runs_dir)
    async with app.run_test(size=SIZE) as pilot:
        gate = await ended_gate(pilot, RunConfig(model=str(model), **PATTERN), runs_dir)
        assert gate.failure == "the inspection wrote no report (exit code 1)"
        assert not gate.finished and gate.inspection is not None
        shown = assert_no_launch_offered(app, gate)
        status = str(gate.query_one("#status").render())
        assert status.startswith(f"inspection {gate.inspection.id} failed: the inspection wrote no report")
        assert "finished; read it" not in status
        assert "The inspection failed: the inspection wrote no report (exit code 1)" in shown
        assert "Traceback" in shown or "File " in shown  # the end of the log: the traceback
        assert "is not a valid JSON file" in " ".join(shown.split())

        await pilot.press("ctrl+l")
        await pilot.pause(0.2)
        assert app.screen is gate  # no launch with it
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.screen is not gate, 10, what="the gate closed")
        # and it is never offered again as this config's inspection
        assert inspections.find_for(RunConfig(model=str(model), **PATTERN), runs_dir) is None


SCORED_NOTHING = """
import json, sys
from pathlib import Path
out = Path(sys.argv[1])
print("[bold]scoring[/] 4 completions", flush=True)
records = [
    {"prompt_index": i // 2, "prompt": "Write a", "completion": "aaa", "columns": {}, "score": None,
     "error": "KeyError: 'london'", "kind": "exception"}
    for i in range(4)
]
(out / "inspection.jsonl").write_text("".join(json.dumps(r) + "\\n" for r in records))
summary = {"samples": 4, "scored": 0, "errors": 4, "num_generations": 2, "mean": None, "std": None, "min": None,
    "max": None, "success_rate": None, "histogram": [0] * 10, "groups": 0, "zero_spread_groups": 0,
    "group_spreads": [], "config_key": KEY,
    "flags": [{"flag": "exception", "severity": "critical", "message": "scoring raised on 4 completion(s)"}]}
(out / "summary.json").write_text(json.dumps(summary))
print("scored 0 of 4 [/]", flush=True)
"""


async def test_an_inspection_that_scored_nothing_is_a_failure(tmp_path, monkeypatch):
    """Every score raised: the report exists but scored nothing, so it is shown as the failure it is."""
    from trainer_core.contract.config.inspection_key import config_key

    config = RunConfig(model="some/model", **PATTERN)
    script = SCORED_NOTHING.replace("KEY", json.dumps(config_key(config)))
    monkeypatch.setattr(
        inspections, "command", lambda inspection, samples: [sys.executable, "-c", script, str(inspection.path)]
    )
    runs_dir = tmp_path / "runs"
    app = make_app(runs_dir)
    async with app.run_test(size=SIZE) as pilot:
        gate = await ended_gate(pilot, config, runs_dir, timeout=30)
        assert gate.failure == "the inspection scored nothing: 4 of 4 completion(s) failed to score"
        shown = assert_no_launch_offered(app, gate)
        assert "CRITICAL exception: scoring raised on 4 completion(s)" in shown
        assert "KeyError: 'london'" in shown  # the samples say what each score raised
        assert "[bold]scoring[/] 4 completions" in shown and "scored 0 of 4 [/]" in shown  # the log, literally
    assert inspections.find_for(config, runs_dir) is None
