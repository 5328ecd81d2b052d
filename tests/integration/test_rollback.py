"""``grpo-tui rollback``: a finished run goes back to a checkpoint and on, detached, with changed settings and
the rewind recorded; a live run is stopped first. Real training of the tiny model through the CLI."""

from __future__ import annotations

import json

import pytest

from trainer_core.contract.run.events import Checkpoint, Rewound, RunStarted
from trainer_core.contract.run.folder import RunFolder
from trainer_core.contract.run.status import Status

from ..helpers import cli, events_of, only_run, pattern_args, wait_for
from .test_resume_set import FIRST_LR, copy_of, learning_rates, trained_run  # noqa: F401 (a fixture)


def rollback(folder: RunFolder, *flags: str):
    return cli("rollback", folder.run_id, "--runs-dir", str(folder.path.parent), *flags)


def ended(folder: RunFolder) -> Status | None:
    status = folder.status()
    return status if status is not None and status.is_final else None


def test_rollback_of_a_finished_run_goes_on_from_the_checkpoint_with_the_change(trained_run, tmp_path):  # noqa: F811
    folder = copy_of(trained_run, tmp_path / "runs")
    result = rollback(folder, "--to", "2", "--set", "lr=2e-5", "--reason", "kl spike after step 2", "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    launched = json.loads(result.stdout)
    assert launched["run_id"] == folder.run_id and launched["pid"] > 0
    assert "from checkpoints/checkpoint-2 to step 4; steps 3-4 are trained again" in result.stderr
    assert wait_for(lambda: ended(folder), 300, 0.5, what="the rolled-back run to end") is Status.COMPLETED

    events = events_of(folder.path)
    rewinds = [e for e in events if isinstance(e, Rewound)]
    assert [(e.from_step, e.to_step, e.checkpoint, str(e.by), e.reason) for e in rewinds] == [
        (4, 2, "checkpoint-2", "user", "kl spike after step 2")
    ]
    assert rewinds[0].changes == {"lr": {"from": FIRST_LR, "to": 2e-5}} and rewinds[0].revision == 1
    first, second = learning_rates(folder)
    assert sorted(second) == [3, 4] and second[3] == pytest.approx(first[3] * 2, rel=1e-6)
    assert folder.read_state()["revision"] == 1


def test_rollback_of_a_live_run_stops_it_first(tiny_model, runs_dir):
    flags = pattern_args(tiny_model, runs_dir, "--rl-max-new-tokens", "8", "--max-steps", "200", "--save-steps", "2")
    launched = cli("launch", *flags[1:])
    assert launched.returncode == 0, launched.stdout + launched.stderr
    folder = RunFolder(only_run(runs_dir))
    wait_for(
        lambda: any(isinstance(e, Checkpoint) and e.step == 2 for e in events_of(folder.path)),
        300,
        0.5,
        what="checkpoint-2 of the live run",
    )
    result = rollback(folder, "--to", "2", "--set", "max_steps=4", "--timeout", "120")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "stopped" in result.stderr and f"rolled back run {folder.run_id} to 2" in result.stdout
    assert wait_for(lambda: ended(folder), 300, 0.5, what="the rolled-back run to end") is Status.COMPLETED
    events = events_of(folder.path)
    rewind = next(e for e in events if isinstance(e, Rewound))
    assert rewind.to_step == 2 and rewind.from_step > 2
    assert rewind.changes == {"max_steps": {"from": 200, "to": 4}}
    starts = [e for e in events if isinstance(e, RunStarted)]
    assert len(starts) == 2 and starts[1].max_steps == 4
