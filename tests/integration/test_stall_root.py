"""A hung run is noticed with nobody watching: a detached run of the tiny model whose reward function hangs
after a few steps gets a ``stall`` warning from its own root process, with the run's --health thresholds,
which reaches a webhook on 127.0.0.1; with --stop-on stall the root stops it, and it ends as stopped."""

from __future__ import annotations

import json
import os
from pathlib import Path

from grpo_tui.api import RunHandle
from trainer_core.contract.alerts.targets import SETTINGS_ENV
from trainer_core.contract.run.events import HealthWarning, Metrics, StopRequested
from trainer_core.contract.run.folder import RunFolder
from trainer_core.contract.run.rules import HealthRule
from trainer_core.contract.run.status import Status

from ..helpers import ENVS, cli, events_of
from .test_notify import Receiver, wait_root_exited
from .test_supervisor import launch_args

HANG = dict(env_module=str(ENVS / "hanging_reward_env.py"), env_class="HangingReward")


def test_a_reward_function_that_hangs_is_a_stall_the_root_reports_and_stops(tiny_model, tmp_path):
    receiver = Receiver()
    try:
        launched = cli(
            *launch_args(
                tiny_model,
                tmp_path / "runs",
                "--max-steps",
                "200",
                "--rl-env-config",
                json.dumps({"hang_after": 40}),  # 8 scores a step: hangs in step 6
                "--health",
                "stall_factor=3",
                "--health",
                "stall_min_seconds=5",
                "--stop-on",
                "stall",
                "--save-steps",
                "1000",
                "--notify",
                receiver.url("/hook"),
                **HANG,
            ),
            env={SETTINGS_ENV: os.devnull},
        )
        assert launched.returncode == 0, launched.stderr
        handle = RunHandle(RunFolder(Path(json.loads(launched.stdout)["path"])))
        handle.wait(timeout=300)  # nobody watches: no app, no `runs`, no `watch`
        wait_root_exited(handle)
        assert handle.status() is Status.STOPPED
        events = events_of(handle.path)
        steps = [e.step for e in events if isinstance(e, Metrics)]
        assert steps and max(steps) == 5, steps
        stalls = [e for e in events if isinstance(e, HealthWarning) and e.rule == HealthRule.STALL]
        assert stalls and stalls[0].step == 5 and stalls[0].severity == "warn", stalls
        evidence = stalls[0].evidence
        assert evidence["limit_seconds"] >= 5 and evidence["seconds_since_last_step"] >= evidence["limit_seconds"]
        stops = [e for e in events if isinstance(e, StopRequested)]
        assert stops[0].reason == "auto-stop: stall at step 5"
        kinds = [
            (b["event"], b["rule"]) for b in receiver.bodies("/hook") if b["event"] != "warning" or b["rule"] == "stall"
        ]
        assert kinds[:2] == [("warning", "stall"), ("auto_stop", "stall")], kinds
        assert kinds[-1][0] == "run_end" and receiver.bodies("/hook")[-1]["status"] == "stopped"
    finally:
        receiver.server.shutdown()
