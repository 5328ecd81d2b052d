"""``grpo-tui stop`` on a run that has ended says so, and only so: nothing is announced that will not happen."""

from __future__ import annotations

from tools.synthetic_runs import write_finished_run
from trainer_core.contract.config.run_config import RunConfig
from trainer_core.contract.run.events import Metrics, RunFinished, RunStarted
from trainer_core.contract.run.status import Status

from ..helpers import cli


def test_stop_of_a_completed_run_announces_no_checkpoint_and_says_it_is_not_running(tmp_path):
    runs = tmp_path / "runs"
    events = [
        RunStarted(run_id="20260101-000000-aaaaaa", pid=4242, time=1000.0, max_steps=2),
        Metrics(step=1, values={"reward": 0.5}, time=1001.0),
        Metrics(step=2, values={"reward": 0.6}, time=1002.0),
        RunFinished(status=Status.COMPLETED, reason="max_steps reached", step=2, time=1003.0),
    ]
    folder = write_finished_run(runs, "20260101-000000-aaaaaa", RunConfig(model="m"), events)
    result = cli("stop", folder.run_id, "--runs-dir", str(runs))
    assert result.returncode == 0, result.stderr
    assert "is not running (status: completed)" in result.stdout, result.stdout
    assert "finishing the current step" not in result.stdout and "saving a checkpoint" not in result.stdout
