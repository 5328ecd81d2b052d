"""While a run logs steps, the monitor's reader sends what changed in as few messages as it can: the once-a-
second reads (state, samples, log) ride with the next charts instead of making a frame of their own, and the
charts answer each step within CHART_SECONDS."""

from __future__ import annotations

import os
import threading
import time
from queue import SimpleQueue

from grpo_tui.services.stream import reader as run_reader
from grpo_tui.services.stream.folded import ChartRequest
from trainer_core.contract.config.run_config import RunConfig
from trainer_core.contract.run.event_log import EventWriter
from trainer_core.contract.run.events import Metrics, RunStarted
from trainer_core.contract.run.folder import RunFolder
from trainer_core.contract.run.process import process_start_time
from trainer_core.contract.run.status import Status

RATE = 20  # steps a second
SECONDS = 3.0


def live_folder(runs_dir) -> RunFolder:
    folder = RunFolder.create(runs_dir)
    folder.save_config(
        RunConfig(
            model="tiny/model", rl_env_module="examples/pattern_env.py", rl_env_class="PatternEnv", max_steps=1000
        )
    )
    pid = os.getpid()
    folder.write_state(
        run_id=folder.run_id,
        status=Status.RUNNING,
        pid=pid,
        pid_start_time=process_start_time(pid),
        started=round(time.time(), 3),
        max_steps=1000,
    )
    with EventWriter(folder.events_file) as events:
        events.emit(RunStarted(run_id=folder.run_id, pid=pid, max_steps=1000))
    return folder


def test_slow_reads_ride_with_the_charts_while_steps_arrive(tmp_path):
    folder = live_folder(tmp_path)
    stop = threading.Event()
    written: dict[int, float] = {}

    def write() -> None:
        with EventWriter(folder.events_file) as events:
            step = 0
            while not stop.is_set():
                step += 1
                written[step] = time.monotonic()
                events.emit(Metrics(step=step, values={"reward": step / 100, "kl": 0.01}))
                time.sleep(1 / RATE)  # not a wait: the trainer's pace

    posts: list[tuple[float, run_reader.Post]] = []
    requests = SimpleQueue()
    requests.put(ChartRequest(1, (("reward", 100), ("kl", 100))))
    writer = threading.Thread(target=write)
    writer.start()
    deadline = time.monotonic() + SECONDS
    try:
        run_reader.follow(
            folder,
            {},
            requests,
            lambda post: posts.append((time.monotonic(), post)),
            lambda: time.monotonic() > deadline,
        )
    finally:
        stop.set()
        writer.join()
    slow = [post for _, post in posts if post.slow is not None]
    assert len(slow) >= SECONDS - 1, "state, samples and the log are read about once a second"
    assert all(post.charts is not None for post in slow), "every slow read came with charts"
    charted = [
        (t, post.charts["reward"].end_step) for t, post in posts if post.charts is not None and "reward" in post.charts
    ]
    assert all(post.charts is not None for _, post in posts[1:]), "no message without charts while steps arrive"
    for (
        step,
        at,
    ) in written.items():  # each step reached the charts soon after its write (CHART_SECONDS and a poll, here)
        shown = next((t for t, end in charted if end >= step), None)
        if shown is not None:
            assert shown - at < 1.0, step  # generous: the suite shares two cores
