"""The folder stream (``events``, ``events --mirror``) and the mirror that applies it, without a network:
what the host writes must come out byte for byte, from any offset, once."""

from __future__ import annotations

import json
import os

import pytest
from orjson import loads

from grpo_tui.executors.hosts import Host
from grpo_tui.executors.mirror import Mirror
from grpo_tui.executors.ssh_connection import Connection
from grpo_tui.services.catalog.health import watcher_warnings
from grpo_tui.services.catalog.status import live_status
from grpo_tui.services.serving.event_feed import event_lines, mirror_lines
from tests.run_fixtures import make_finished_run
from trainer_core.contract.run.folder import RunFolder
from trainer_core.contract.run.status import Status


@pytest.fixture
def mirror(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))

    def make(run: RunFolder) -> Mirror:
        return Mirror(Connection(Host("box")), run.run_id, str(run.path))

    return make


def apply_all(mirror: Mirror, lines) -> list[dict]:
    messages = [loads(line) for line in lines]
    for message in messages:
        mirror._apply(message)
    return messages


def test_events_carry_offsets_that_resume_exactly(tmp_path):
    run = RunFolder(make_finished_run(tmp_path / "runs", steps=12))
    with open(run.events_file, "ab") as fh:
        fh.write(b'not json\n{"type": "metrics", "step": 99')  # a bad line, and a torn last one
    lines = [loads(line) for line in event_lines(run)]
    data = run.events_file.read_bytes()
    for line in lines:
        assert loads(data[line["offset"] : line["end"]]) == line["event"]
    assert lines[-1]["event"]["type"] == "run_finished" and all(x["event"].get("step") != 99 for x in lines)
    later = [loads(line) for line in event_lines(run, start=lines[5]["end"])]
    assert later == lines[6:]


def test_a_mirror_is_the_hosts_folder_byte_for_byte(tmp_path, mirror):
    run = RunFolder(make_finished_run(tmp_path / "runs", steps=30))
    run.log_file.write_text("loading\n½ step log\n")
    with open(run.samples_file, "w") as fh:
        fh.writelines(json.dumps({"step": i, "completion": "aaa"}) + "\n" for i in range(5))
    copy = mirror(run)
    messages = apply_all(copy, mirror_lines(run, {}))
    for name in ("events.jsonl", "config.yaml", "state.json", "trainer.log", "samples.jsonl"):
        assert (copy.folder.path / name).read_bytes() == (run.path / name).read_bytes(), name
    assert messages[0]["run"]["run_id"] == run.run_id and messages[-1] == {"end": "completed"}
    assert copy.ready.is_set() and copy.ended.is_set()
    assert live_status(copy.folder) is Status.COMPLETED
    assert (copy.folder.path.stat().st_mode & 0o777) == 0o700


def test_a_stream_resumed_from_the_copys_sizes_repeats_nothing(tmp_path, mirror):
    run = RunFolder(make_finished_run(tmp_path / "runs", steps=20))
    full = run.events_file.read_bytes()
    cut = full.index(b"\n", len(full) // 2) + 1
    run.events_file.write_bytes(full[:cut] + full[cut : cut + 7])  # the host is mid-line when the link drops
    copy = mirror(run)
    apply_all(copy, mirror_lines(run, {}))
    assert (copy.folder.path / "events.jsonl").read_bytes() == full[:cut]  # whole lines only
    run.events_file.write_bytes(full)
    offsets = copy._offsets()
    assert offsets[:2] == ["--from", str(cut)]
    again = apply_all(copy, mirror_lines(run, {"events.jsonl": cut}))
    sent = [m for m in again if m.get("append") == "events.jsonl"]
    assert sent[0]["offset"] == cut
    assert (copy.folder.path / "events.jsonl").read_bytes() == full


def test_a_long_log_is_copied_from_its_tail_at_the_hosts_offsets(tmp_path, mirror):
    run = RunFolder(make_finished_run(tmp_path / "runs", steps=3))
    lines = [f"line {i:07d}\n" for i in range(60000)]
    run.log_file.write_text("".join(lines))
    copy = mirror(run)
    apply_all(copy, mirror_lines(run, {}))
    local = (copy.folder.path / "trainer.log").read_bytes()
    # no hole before the tail: the copy starts at the host's offset of its first byte, and a later stream asks
    # from the host's size, so it appends where the host does
    assert copy._offsets()[-1] == str(run.log_file.stat().st_size) and len(local) <= 256 * 1024
    assert local.endswith(lines[-1].encode()) and local.startswith(b"line ")
    assert b"line 0000000" not in local  # the start was never sent


def test_a_live_mirror_reads_as_its_host_says(tmp_path, mirror):
    run = RunFolder(make_finished_run(tmp_path / "runs", steps=3))
    state = {**run.read_state(), "status": "running", "ended": None, "root_pid": 1, "root_start_time": 1.0}
    run.state_file.write_text(json.dumps(state))  # pid 1 is not this run
    assert live_status(run) is Status.LOST  # here: its process is gone
    copy = mirror(run)
    (copy.folder.path / "state.json").write_bytes(run.state_file.read_bytes())
    copy._apply({"status": "running", "alerts": [{"rule": "stall", "severity": "warn", "step": 3, "message": "slow"}]})
    assert live_status(copy.folder) is Status.RUNNING  # the host sees the process
    assert [w.rule for w in watcher_warnings(copy.folder, Status.RUNNING)] == ["stall"]
    copy._set_remote(connected=False, error="host box: unreachable")
    rules = [w.rule for w in watcher_warnings(copy.folder, Status.RUNNING)]
    assert rules == ["stall", "connection_lost"]
    assert os.path.exists(copy.folder.path / ".remote.json")


def test_a_mirror_of_an_unreachable_host_says_why_at_once_and_stops(monkeypatch):
    import shutil
    import socket
    import tempfile
    import time

    from grpo_tui.executors.hosts import HostError

    short = tempfile.mkdtemp(prefix="gm", dir="/tmp")  # control sockets need a short path
    monkeypatch.setenv("GRPO_TUI_SSH_DIR", f"{short}/ssh")
    monkeypatch.setenv("XDG_CACHE_HOME", f"{short}/cache")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # nothing listens there once it is closed
    copy = Mirror(Connection(Host("deadbox", ssh="127.0.0.1", ssh_options=(f"Port={port}",))), "run", "/runs/run")
    try:
        started = time.monotonic()
        with pytest.raises(HostError, match=r"host deadbox: unreachable .*Connection refused"):
            copy.start().wait_ready(60)
        assert time.monotonic() - started < 20
    finally:
        copy.stop()
        shutil.rmtree(short, ignore_errors=True)
    assert not copy._thread.is_alive()
