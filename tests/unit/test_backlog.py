"""A long backlog is folded by a child process: the stream it hands back is the one the reader would have
built, the reader goes on from where the child stopped (nothing read twice, nothing missed), and a child
that fails or is stopped leaves the reader to read the file itself."""

from __future__ import annotations

import threading

from grpo_tui.services.stream.backlog import Backlog
from grpo_tui.services.stream.folded import RunStream
from trainer_core.contract.run.event_log import EventWriter
from trainer_core.contract.run.events import HealthWarning, Metrics, RunStarted
from trainer_core.contract.run.folder import RunFolder


def write_run(runs_dir, steps: int) -> RunFolder:
    folder = RunFolder.create(runs_dir)
    with EventWriter(folder.events_file) as events:
        events.emit(RunStarted(run_id=folder.run_id, pid=1, max_steps=steps))
        for step in range(1, steps + 1):
            values = {"reward": step / steps, "kl": 0.001 * step, "loss": 0.5, "epoch": 0.1}
            if step > steps // 2:
                values["rewards/format/mean"] = 0.25  # a key that appears mid-run
            if step % 97 == 0:
                values["kl"] = None  # a NaN the trainer logged as null
            events.emit(Metrics(step=step, values=values))
            if step == 300:
                events.emit(HealthWarning("kl_explosion", "warn", step, "KL is climbing.", "Lower --lr."))
    with open(folder.events_file, "a") as fh:
        fh.write('{garbage\n\n{"type":"metrics","step":')  # a bad line, a blank one and a torn tail
    return folder


def state(stream: RunStream) -> dict:
    return {
        "offset": stream.tail.offset,
        "bad": stream.tail.bad_lines,
        "read": stream.metrics_read,
        "steps": list(stream.steps),
        "last": stream.last_metrics,
        "series": {k: (list(s.steps), list(s.values)) for k, s in stream.series.items()},
        "times": list(stream.times.values),
        "warnings": stream.warnings,
        "lifecycle": stream.lifecycle,
    }


def test_the_child_hands_back_the_stream_the_reader_would_build(tmp_path):
    folder = write_run(tmp_path, 1000)
    here = RunStream(folder)
    here.poll()
    backlog = Backlog(folder, min_bytes=1)
    assert backlog.proc is not None
    child = backlog.stream()
    assert backlog.in_child and backlog.proc is None
    assert state(child) == state(here)
    assert len(child.series["kl"]) == 1000 - 1000 // 97 and child.warnings[0].step == 300
    # the torn tail is finished later: the adopted stream reads it, and only it
    with open(folder.events_file, "a") as fh:
        fh.write('1001,"reward":1.0,"kl":0.1,"loss":0.5,"epoch":0.1,"rewards/format/mean":0.25}\n')
    assert child.poll().steps == 1 and list(child.series["reward"].steps)[-2:] == [1000, 1001]


def test_steps_written_while_the_child_reads_are_read_once(tmp_path):
    folder = write_run(tmp_path, 20)
    folder.events_file.write_bytes(folder.events_file.read_bytes().rsplit(b"\n", 1)[0] + b"\n")  # no torn tail
    writer_done = threading.Event()

    def write_more():
        with EventWriter(folder.events_file) as events:
            for step in range(21, 3001):
                events.emit(
                    Metrics(
                        step=step,
                        values={"reward": 0.5, "kl": 0.01, "loss": 0.5, "epoch": 0.1, "rewards/format/mean": 0.25},
                    )
                )
        writer_done.set()

    writer = threading.Thread(target=write_more)
    backlog = Backlog(folder, min_bytes=1)
    writer.start()
    stream = backlog.stream()
    writer.join()
    stream.poll()
    assert backlog.in_child and list(stream.steps) == list(range(1, 3001))
    assert list(stream.series["reward"].steps) == list(range(1, 3001))


def test_a_short_backlog_is_read_here(tmp_path):
    folder = write_run(tmp_path, 50)
    backlog = Backlog(folder)
    assert backlog.proc is None
    stream = backlog.stream()
    assert not backlog.in_child and stream.metrics_read == 0  # not read yet: the reader polls it
    assert stream.poll().steps == 50


def test_a_stopped_child_leaves_the_reading_to_the_reader(tmp_path):
    folder = write_run(tmp_path, 400)
    backlog = Backlog(folder, min_bytes=1)
    proc = backlog.proc
    backlog.close()  # the screen closed while the child read
    stream = backlog.stream()
    assert proc.returncode is not None and proc.returncode != 0
    assert not backlog.in_child and stream.metrics_read == 0
    assert stream.poll().steps == 400


def test_a_child_that_fails_leaves_the_reading_to_the_reader(tmp_path):
    folder = write_run(tmp_path, 30)
    kept = folder.events_file.rename(folder.path / "kept.jsonl")
    folder.events_file.mkdir()  # the child's read raises IsADirectoryError and it exits 1
    backlog = Backlog(folder, min_bytes=1)
    proc = backlog.proc
    stream = backlog.stream()
    assert proc.returncode == 1 and not backlog.in_child
    folder.events_file.rmdir()
    kept.rename(folder.events_file)
    assert stream.poll().steps == 30 and stream.series["reward"].values[-1] == 1.0
