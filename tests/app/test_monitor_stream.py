"""The monitor reads a run in a worker thread and draws from frozen snapshots: this holds while the run's
metric keys change under it at hundreds of steps a second (a key that first appears mid-run used to be able
to change a dict the UI thread was iterating), and a snapshot never changes after it was taken."""

from __future__ import annotations

import os
import threading
import time
from dataclasses import FrozenInstanceError

import pytest
from textual.markup import escape
from textual.worker import WorkerState

from grpo_tui.app import make_app
from grpo_tui.screens.monitor import MonitorScreen
from grpo_tui.services.stream.folded import ChartRequest, RunStream
from grpo_tui.widgets.metric_chart import MetricChart
from trainer_core.contract.config.run_config import RunConfig
from trainer_core.contract.run.event_log import EventWriter
from trainer_core.contract.run.events import HealthWarning, Metrics, RunStarted
from trainer_core.contract.run.folder import RunFolder
from trainer_core.contract.run.process import process_start_time
from trainer_core.contract.run.status import Status

from .conftest import header_text
from .conftest import wait_until as wait_for_state

TOTAL = 1200
OPEN_AT = 10  # steps on disk when the monitor opens; the rest arrive while it is open
NEW_KEYS_AT = 30  # rewards/format/mean and entropy first appear here
KL_UNTIL = 40  # kl is logged before this step only


def values_at(step: int) -> dict:
    values = {"reward": step / TOTAL, "reward_std": 0.5, "loss": 0.01, "num_tokens": float(step * 100)}
    if step < KL_UNTIL:
        values["kl"] = 0.01 * step
    if step >= NEW_KEYS_AT:
        values["rewards/format/mean"] = (step % 8) / 8  # eighths: exact in float32, so the title is known
        values["entropy"] = 2.0 - (step % 4) / 4
    for n in range(step // 200):  # and more reward functions keep appearing all along
        values[f"rewards/f{n}/mean"] = 0.5
    return values


def live_run(runs_dir) -> RunFolder:
    """A run folder whose state names this process, so it reads as running while the test writes to it."""
    folder = RunFolder.create(runs_dir)
    folder.save_config(
        RunConfig(
            model="tiny/model", rl_env_module="examples/pattern_env.py", rl_env_class="PatternEnv", max_steps=TOTAL
        )
    )
    pid = os.getpid()
    folder.write_state(
        run_id=folder.run_id,
        status=Status.RUNNING,
        pid=pid,
        pid_start_time=process_start_time(pid),
        started=round(time.time(), 3),
        max_steps=TOTAL,
    )
    with EventWriter(folder.events_file) as events:
        events.emit(RunStarted(run_id=folder.run_id, pid=pid, max_steps=TOTAL))
        for step in range(1, OPEN_AT + 1):
            events.emit(Metrics(step=step, values=values_at(step)))
    return folder


class Writer(threading.Thread):
    """The trainer's side: steps OPEN_AT+1..TOTAL, a few at a time, about 600 steps a second."""

    def __init__(self, folder: RunFolder):
        super().__init__(daemon=True)
        self.folder = folder
        self.stop = threading.Event()

    def run(self) -> None:
        with EventWriter(self.folder.events_file) as events:
            for step in range(OPEN_AT + 1, TOTAL + 1):
                if self.stop.is_set():
                    return
                events.emit(Metrics(step=step, values=values_at(step)))
                if step == NEW_KEYS_AT + 5:
                    events.emit(HealthWarning("kl_explosion", "warn", step, "KL is climbing.", "Lower --lr."))
                if step % 6 == 0:
                    time.sleep(0.01)  # not a wait: the trainer's pace


async def test_the_monitor_follows_a_run_whose_metric_keys_change_mid_run(tmp_path):
    folder = live_run(tmp_path / "runs")
    app = make_app(tmp_path / "runs", start="watch", watch=folder.path)
    writer = Writer(folder)
    seen = set()  # every worker of the screen, kept: a finished worker leaves the app's list

    async def wait_until(pilot, predicate, timeout=120.0):  # a loaded machine folds 1,200 steps slowly
        def noting_workers() -> bool:
            seen.update(w for w in app.workers if w.node is screen)
            return predicate()

        await wait_for_state(pilot, noting_workers, timeout)

    try:
        async with app.run_test(size=(120, 40)) as pilot:
            screen = app.screen
            assert isinstance(screen, MonitorScreen)
            await wait_until(pilot, lambda: f"step {OPEN_AT}/{TOTAL}" in header_text(screen))
            assert screen.status == Status.RUNNING and "RUNNING" in header_text(screen)
            writer.start()
            while writer.is_alive():  # not a wait: it keeps the UI busy while the keys change under the reader
                await pilot.press("m")
                await pilot.press("2", "1")
                await pilot.pause(0.05)
                seen.update(w for w in app.workers if w.node is screen)
            await wait_until(pilot, lambda: f"step {TOTAL}/{TOTAL}" in header_text(screen))
            await wait_until(
                pilot, lambda: screen.charts.get("reward") is not None and screen.charts["reward"].last_step == TOTAL
            )
            assert screen.charts["kl"].last_step == KL_UNTIL - 1
            assert screen._markers() == [NEW_KEYS_AT + 5]
            assert screen.extra_keys[:2] == ["loss", "entropy"] and "rewards/format/mean" in screen.extra_keys

            chart = screen.query_one("#chart-extra", MetricChart)
            for key, last in (("entropy", 2.0 - (TOTAL % 4) / 4), ("rewards/format/mean", (TOTAL % 8) / 8)):
                for _ in range(len(screen.extra_keys) + 1):
                    if chart.border_title.startswith(f"{key}  "):
                        break
                    asked = screen.charts.request.serial
                    await pilot.press("m")
                    await wait_until(pilot, lambda asked=asked: screen.charts.request.serial > asked)
                # a title's value changes at most every TITLE_SECONDS: the newest shows within twice that
                title = escape(f"{key}  [m: next]  {last:.4f}")  # the title is markup
                await wait_for_state(
                    pilot, lambda title=title: chart.border_title == title, 30, what=f"the title {title}"
                )

            errors = [(w.name, w.error) for w in seen if w.state is WorkerState.ERROR]
            assert not errors, errors
            tail = [w for w in seen if w.group == "tail"]
            assert len(tail) == 1 and tail[0].state is WorkerState.RUNNING  # a live run is followed to its end
        assert app.return_code in (None, 0)  # and run_test re-raises whatever made the app exit
    finally:
        writer.stop.set()
        writer.join(timeout=10)
    assert not writer.is_alive()


def test_a_snapshot_stays_as_taken_while_the_stream_folds_on(tmp_path):
    folder = RunFolder.create(tmp_path)
    with EventWriter(folder.events_file) as events:
        for step in range(1, 6):
            events.emit(Metrics(step=step, values={"reward": step / 8, "kl": 0.25}))
    stream = RunStream(folder)
    stream.poll()
    charts = stream.charts(ChartRequest(1, (("reward", 80), ("kl", 80), ("entropy", 80))))
    view = stream.view()
    reward = charts["reward"]
    taken = (reward.steps, reward.lows, reward.highs, reward.count, reward.last_value)
    assert reward.steps == (1, 2, 3, 4, 5) and reward.exact and reward.last_value == 5 / 8
    assert "entropy" not in charts and view.keys == ("reward", "kl") and view.step == 5

    with EventWriter(folder.events_file) as events:  # a new key, kl gone, a one-step spike, many more steps
        for step in range(6, 10_001):
            events.emit(Metrics(step=step, values={"reward": 9.0 if step == 5_432 else 0.5, "entropy": 1.0}))
    stream.poll()

    assert (reward.steps, reward.lows, reward.highs, reward.count, reward.last_value) == taken
    assert charts["reward"] is reward and set(charts.series) == {"reward", "kl"}
    assert view.keys == ("reward", "kl") and view.step == 5 and view.metrics_read == 5
    with pytest.raises(TypeError):
        charts.series["entropy"] = reward  # type: ignore[index]
    with pytest.raises(FrozenInstanceError):
        reward.count = 0  # type: ignore[misc]

    later = stream.charts(ChartRequest(2, (("reward", 50), ("kl", 50), ("entropy", 50))))
    assert later["reward"].count == 10_000 and 50 <= len(later["reward"].steps) < 100 and not later["reward"].exact
    assert max(later["reward"].highs) == 9.0 and later["reward"].last_step == 10_000  # the spike and the end kept
    assert later["kl"].count == 5 and later["kl"].last_step == 5 and later["entropy"].count == 9_995
    assert stream.view().keys == ("reward", "kl", "entropy")
