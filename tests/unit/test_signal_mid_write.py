"""Stop signals that land in the middle of a run-folder write: the trainer's handlers wait for the write to
end instead of waiting on the lock their own interrupted frame holds (the process used to hang for good on
two SIGTERMs close together), and never put a line into the middle of another. Each case is a real process
that signals itself from inside a real write of a run folder."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap

import pytest

from trainer_core.contract.run.event_log import read_events
from trainer_core.contract.run.events import Metrics, RunFinished, StopRequested
from trainer_core.contract.run.status import Status

from ..helpers import scaled

CHILD = textwrap.dedent(
    """
    import os, signal, sys
    from trainer_core.contract.config.run_config import RunConfig
    from trainer_core.contract.run.events import Metrics
    from trainer_core.contract.run.folder import RunFolder
    from trainer_core.contract.run.status import Status
    from trainer_core.training.run_context import RunContext

    folder = RunFolder.create(sys.argv[1], run_id="20260101-000000-sigsig")
    folder.initial_state()
    folder.write_state(status=Status.RUNNING)
    run = RunContext(RunConfig(model="m"), folder, echo=False)
    run.stopper.install()
    run.stopper.training_started(1)
    where, signals, sent = sys.argv[2], int(sys.argv[3]), []

    def signalling(write):  # while the write is under way (the lock held), once per write, `signals` in all
        def wrapped(*args):
            if len(sent) < signals:
                sent.append(1)
                os.kill(os.getpid(), signal.SIGTERM)
            return write(*args)
        return wrapped

    if where == "state":
        RunFolder._merge_state = signalling(RunFolder._merge_state)
        folder.write_state(note="the write the signal interrupts")
    else:
        run.writer._write_some = signalling(run.writer._write_some)
        run.emit(Metrics(step=1, values={"reward": 0.5}))
    print("survived", flush=True)
    """
)


def _run(tmp_path, where: str, signals: int) -> tuple[subprocess.CompletedProcess, list, dict]:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path), where, str(signals)],
        capture_output=True,
        text=True,
        timeout=scaled(60),
    )
    folder = tmp_path / "20260101-000000-sigsig"
    return done, read_events(folder / "events.jsonl"), json.loads((folder / "state.json").read_text())


def test_two_sigterms_during_a_state_merge_record_the_forced_end_and_exit(tmp_path):
    done, events, state = _run(tmp_path, "state", 2)
    assert done.returncode == 128 + signal.SIGTERM and "survived" not in done.stdout, done.stdout + done.stderr
    assert [type(e) for e in events] == [StopRequested, RunFinished], events
    assert events[-1].status is Status.STOPPED and "received twice" in events[-1].reason
    assert state["status"] == "stopped" and state["note"] == "the write the signal interrupts", state


def test_two_sigterms_during_an_event_line_come_after_the_line(tmp_path):
    done, events, state = _run(tmp_path, "events", 2)
    assert done.returncode == 128 + signal.SIGTERM, done.stdout + done.stderr
    assert [type(e) for e in events] == [Metrics, StopRequested, RunFinished], events
    assert state["status"] == "stopped", state


@pytest.mark.parametrize("where", ["state", "events"])
def test_one_sigterm_during_a_write_asks_for_a_stop_once_the_write_is_done(tmp_path, where):
    done, events, state = _run(tmp_path, where, 1)
    assert done.returncode == 0 and "survived" in done.stdout, done.stdout + done.stderr
    assert [type(e) for e in events] == ([StopRequested] if where == "state" else [Metrics, StopRequested]), events
    assert state["status"] == "stopping", state
    assert where != "state" or state["note"] == "the write the signal interrupts", state
