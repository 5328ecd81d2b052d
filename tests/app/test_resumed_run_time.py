"""A resumed or extended run's elapsed time and steps/s count training, not the pause between its legs (issue 44,
point 3: extended from 6 to 9 steps after a wait, its header said "0:01:17  0.11 steps/s")."""

from __future__ import annotations

from grpo_tui.app import make_app
from grpo_tui.screens.monitor import MonitorScreen
from grpo_tui.screens.runs import RunsScreen
from grpo_tui.services.catalog.status import run_duration
from tools.synthetic_runs import write_finished_run
from trainer_core.contract.config.run_config import RunConfig
from trainer_core.contract.run.events import Checkpoint, Metrics, RunFinished, RunStarted
from trainer_core.contract.run.legs import paused_seconds, pauses, per_second
from trainer_core.contract.run.status import Status

from ..run_fixtures import BASE_TIME
from .conftest import header_text, wait_until

T0 = BASE_TIME
PAUSE = 600.0  # ten minutes between the legs: the run did nothing


def leg(first: int, last: int, start: float, max_steps: int, resumed: bool) -> list:
    """One leg: its run_started, a step a second, a checkpoint, its run_finished half a second after the last step."""
    events: list = [
        RunStarted(
            run_id="20260101-000000-legs00",
            pid=999_999,
            host="synthetic",
            model="some/model",
            max_steps=max_steps,
            resumed_from=f"checkpoints/checkpoint-{first - 1}" if resumed else None,
            time=start,
        )
    ]
    for step in range(first, last + 1):
        values = {"reward": 0.1 * step, "num_tokens": 100.0 * step, "loss": 0.5}
        events.append(Metrics(step=step, values=values, time=start + (step - first + 1)))
    end = start + (last - first + 1) + 0.5
    events.append(Checkpoint(step=last, path=f"checkpoints/checkpoint-{last}", time=end - 0.25))
    events.append(RunFinished(status=Status.COMPLETED, step=last, time=end))
    return events


def extended_run(runs_dir):
    """Six steps in 6.5 s, a pause, then extended to nine: 3.5 s more. Trained: 10 s at one step a second."""
    first = leg(1, 6, T0, 6, resumed=False)
    second = leg(7, 9, T0 + 6.5 + PAUSE, 9, resumed=True)
    config = RunConfig(model="some/model", max_steps=9)
    return write_finished_run(
        runs_dir, "20260101-000000-legs00", config, [*first, *second], summary_config={"max_steps": 9}
    )


def test_the_pauses_between_legs_and_the_rate_within_them():
    events = [*leg(1, 6, T0, 6, False), *leg(7, 9, T0 + 6.5 + PAUSE, 9, True)]
    assert pauses(events) == PAUSE
    assert pauses(leg(1, 6, T0, 6, False)) == 0.0
    # a lost leg has no run_finished: its time counts as training, up to the next start
    lost = [e for e in leg(1, 6, T0, 6, False) if not isinstance(e, RunFinished)]
    assert pauses([*lost, *leg(7, 9, T0 + 6.5 + PAUSE, 9, True)]) == 0.0

    steps = [e.step for e in events if isinstance(e, Metrics)]
    times = [e.time for e in events if isinstance(e, Metrics) and e.time is not None]
    starts = [e.time for e in events if isinstance(e, RunStarted) and e.time is not None]
    assert per_second(steps, times, starts) == 1.0  # the interval across the pause is left out
    diluted = per_second(steps, times, [])  # as it was: the pause counted
    assert diluted is not None and diluted < 0.02
    rewound = [*steps[:6], 5, 6, 7]  # resumed from an older checkpoint: the step counter goes back
    assert per_second(rewound, times, starts) == 1.0


def test_a_running_resumed_leg_leaves_out_the_pause_before_it():
    """While the second leg runs, state.json alone says how long the run has trained."""
    first_end, resumed_at = T0 + 6.5, T0 + 6.5 + PAUSE
    state = {
        "status": "running",
        "started": T0,
        "ended": None,
        "resumed_at": resumed_at,
        "before_resume": {"status": "completed", "ended": first_end, "last_step": 6},
        "summary": {"ended": first_end, "paused": 0.0},
    }
    assert paused_seconds(state) == PAUSE
    assert run_duration(state, Status.RUNNING, now=resumed_at + 2.0) == 6.5 + 2.0
    # prepared but not yet restarted: resumed_at is still the earlier leg's (here none), so no pause yet
    assert paused_seconds({**state, "resumed_at": None}) == 0.0
    # a third leg: the summary of the second end already counted the first pause
    third = {**state, "summary": {"ended": first_end, "paused": 100.0}, "resumed_at": resumed_at}
    assert paused_seconds(third) == 100.0 + PAUSE


async def test_the_header_of_an_extended_run_counts_training_time(tmp_path):
    runs_dir = tmp_path / "runs"
    folder = extended_run(runs_dir)
    state = folder.read_state()
    assert state["summary"]["paused"] == PAUSE and state["summary"]["duration"] == 10.0
    app = make_app(runs_dir, start="watch", watch=folder.path)
    async with app.run_test(size=(120, 30)) as pilot:
        screen = app.screen
        assert isinstance(screen, MonitorScreen)
        await wait_until(pilot, lambda: screen.status == "completed" and screen.view.metrics_read == 9)
        await wait_until(pilot, lambda: "step 9/" in header_text(screen), what="the header at the last step")
        header = header_text(screen)
        assert "0:00:10" in header, header  # 6.5 s + 3.5 s of training, not the 10-minute pause
        assert "1.00 steps/s" in header, header
        assert "100 tok/s" in header, header


async def test_the_runs_list_counts_training_time_too(tmp_path):
    runs_dir = tmp_path / "runs"
    extended_run(runs_dir)
    app = make_app(runs_dir)
    async with app.run_test(size=(120, 30)) as pilot:
        screen = app.screen
        await wait_until(pilot, lambda: isinstance(app.screen, RunsScreen) and len(app.screen.runs) == 1)
        screen = app.screen
        assert isinstance(screen, RunsScreen) and screen.runs[0].duration == 10.0
