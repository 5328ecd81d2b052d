"""The remote wire (``grpo_tui.services.records.wire``) and the mirror that applies it, without a network:
what a host sends is checked as it is parsed, and nothing it sends can write outside the host's cache folder."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grpo_tui.executors.hosts import Host, HostError
from grpo_tui.executors.mirror import Mirror, mirror_path
from grpo_tui.executors.ssh_connection import Connection
from grpo_tui.services.catalog.status import live_status, remote_view
from grpo_tui.services.records.gpu import GPU
from grpo_tui.services.records.host_info import HostInfo
from grpo_tui.services.records.run_row import RunInfo
from grpo_tui.services.records.stop_outcome import StopOutcome
from grpo_tui.services.records.wire import (
    MAX_OFFSET,
    Append,
    End,
    GpuReport,
    Heartbeat,
    Reset,
    RunHeader,
    StatusReport,
    WholeFile,
    WireError,
    parse_launch_check,
    parse_launch_reply,
    parse_mirror_line,
    parse_mirror_message,
    parse_run_id,
    parse_run_rows,
)
from grpo_tui.services.serving.event_feed import mirror_lines
from tests.run_fixtures import make_finished_run
from tests.standins.hostile_host import SCENARIOS, rows
from trainer_core.contract.run.events import HealthWarning
from trainer_core.contract.run.folder import FORMAT_VERSION, RunFolder
from trainer_core.contract.run.line_check import SkippedLines
from trainer_core.contract.run.severity import Severity
from trainer_core.contract.run.status import Status


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "grpo-tui" / "hosts" / "box"


def mirror_of(run_id: str = "good-run") -> Mirror:
    return Mirror(Connection(Host("box")), run_id, f"/runs/{run_id}")


def start(copy: Mirror) -> None:
    for message in (
        {"run": {"run_id": copy.run_id, "path": "/runs/x", "format_version": FORMAT_VERSION}},
        {"file": "config.yaml", "data": b64(b"model: tiny\n")},
        {"file": "state.json", "data": b64(b'{"status": "running"}')},
        {"append": "events.jsonl", "offset": 0, "data": b64(b'{"type": "run_started"}\n')},
    ):
        copy._apply(message)


# -- the parsers ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("run_id", ["20260101-000000-123-abcdef", "my_run.2", "a", "A-b_c.d", "x" * 128])
def test_run_ids_that_are_one_safe_folder_name(run_id):
    assert parse_run_id(run_id) == run_id


@pytest.mark.parametrize(
    "run_id",
    [
        "",
        ".",
        "..",
        "../x",
        "../../../../x",
        "/tmp/x",
        "a/b",
        ".hidden",
        "-rf",
        "a\0b",
        "a b",
        "x" * 129,
        7,
        None,
        ["a"],
        "é",
        "a\nb",
    ],
)
def test_run_ids_that_could_leave_a_folder_or_pose_as_a_flag_are_refused(run_id):
    with pytest.raises(WireError, match=r"run_id: expected a run id .*got"):
        parse_run_id(run_id)


def test_a_hostile_runs_reply_keeps_its_good_row_and_names_every_bad_one():
    good, problems = parse_run_rows(rows("/runs"))
    assert [r.run_id for r in good] == ["good-run"]
    assert good[0].status is Status.RUNNING and good[0].step == 3 and good[0].last_reward == 0.5
    assert len(problems) == 8 and all(p.startswith("row ") for p in problems)
    text = "\n".join(problems)
    for expected in (
        "row 1: run_id: expected a run id",
        "'../../../../x'",
        "row 3: step: expected a whole number",
        "row 4: run_id",
        "row 5: expected a JSON object, got 'not a row'",
        "alerts[0].rule",
        "row 7: total",
        "row 9: run_id: 'good-run' is listed twice",
    ):
        assert expected in text
    with pytest.raises(WireError, match="expected a JSON list of runs"):
        parse_run_rows({"run_id": "x"})


@pytest.mark.parametrize(
    "field, value",
    [
        ("step", True),
        ("step", 1.5),
        ("step", -1),
        ("warnings", "3"),
        ("last_reward", "0.5"),
        ("last_reward", [1]),
        ("started", -1.0),
        ("duration", {}),
        ("status", "exploded"),
        ("status", None),
        ("project", 5),
        ("model", ["x"]),
        ("path", ""),
        ("path", "-x"),
        ("path", None),
        ("alerts", "stall"),
        ("alerts", [1]),
        ("exit_reason", "x" * 70000),
        ("skipped_lines", 2),
        ("skipped_lines", {"events.jsonl": 2}),
        ("skipped_lines", {"events.jsonl": {"count": 0, "first": "x"}}),
        ("skipped_lines", {"events.jsonl": {"count": "2", "first": "x"}}),
        ("skipped_lines", {"events.jsonl": {"count": 2, "first": None}}),
        ("skipped_lines", {"events.jsonl": {"count": 2, "first": "x", "checked_from": -1}}),
    ],
)
def test_a_row_with_a_field_of_the_wrong_kind_is_named(field, value):
    row = {**rows("/runs")[7], field: value}
    with pytest.raises(WireError) as failed:
        RunInfo.from_wire(row)
    assert str(failed.value).startswith(f"{field}")
    assert len(str(failed.value)) < 300  # the value is shown cut short


def test_a_rows_skipped_lines_arrive_as_the_host_counted_them():
    first = "events.jsonl line 3: not JSON"
    sent = {"events.jsonl": {"count": 2, "first": first, "checked_from": 0}, "notes.txt": {"count": "x"}}
    row = RunInfo.from_wire({**rows("/runs")[7], "skipped_lines": sent})
    assert row.skipped == {"events.jsonl": SkippedLines(2, first, 0)}  # a name that is no run file is left out
    assert row.to_wire()["skipped_lines"] == {"events.jsonl": sent["events.jsonl"]}
    assert RunInfo.from_wire({**rows("/runs")[7], "skipped_lines": {}}).skipped == {}
    assert RunInfo.from_wire(rows("/runs")[7]).skipped is None  # a host older than the check: not checked, not 0


def test_the_other_replies_are_checked():
    info = HostInfo.from_wire(
        {
            "version": "1.0",
            "run_format": 1,
            "runs_dir": "/r",
            "gpus": [{"index": 0, "name": "H200", "memory_total": 10, "memory_used": 1, "utilization": 5}],
        }
    )
    assert info.gpus == (GPU(0, "H200", 10, 1, 5),) and info.to_wire()["gpus"][0]["name"] == "H200"
    for bad, where in (
        ({"run_format": "1"}, "run_format"),
        ({"run_format": 1, "gpus": {}}, "gpus"),
        ({"run_format": 1, "gpus": [{"index": "0"}]}, "gpus[0].index"),
        ({"run_format": 1, "version": 2}, "version"),
        ([], "expected a JSON object"),
    ):
        with pytest.raises(WireError, match=where.replace("[", r"\[")):
            HostInfo.from_wire(bad)
    assert parse_launch_reply({"run_id": "r1", "path": "/runs/r1", "pid": 12}).run_id == "r1"
    with pytest.raises(WireError, match="run_id"):
        parse_launch_reply({"run_id": "../r1", "path": "/runs/r1"})
    check = parse_launch_check({"ok": False, "problems": [{"field": "model", "message": "missing"}]})
    assert check.problems[0].field == "model" and not check.ok
    with pytest.raises(WireError, match="at least one problem"):
        parse_launch_check({"ok": False, "problems": []})
    with pytest.raises(WireError, match="ok: expected true or false"):
        parse_launch_check({"ok": "yes"})
    stop = StopOutcome.from_wire({"run_id": "r", "left": [], "status": "stopped", "message": "stopped gracefully"})
    assert stop.to_wire()["left"] == [] and stop.status is Status.STOPPED
    for bad in ({"left": "none", "message": "m"}, {"left": [True], "message": "m"}, {"left": [], "message": 5}):
        with pytest.raises(WireError):
            StopOutcome.from_wire(bad)


def test_every_mirror_message_survives_its_own_encoding():
    warning = HealthWarning("stall", Severity.CRITICAL, 4, "no step", "check", {"seconds": 600})
    for message in (
        RunHeader("r1", "/runs/r1", 1),
        Append("events.jsonl", 12, b"\x00\xffdata\n"),
        WholeFile("config.yaml", b"a: 1\n"),
        WholeFile("state.json", b"{}"),
        StatusReport(Status.RUNNING, (warning,)),
        GpuReport((GPU(0, "g", 1, 0, 0),)),
        Reset("trainer.log"),
        End(Status.FAILED),
        Heartbeat(),
    ):
        assert parse_mirror_line(message.encode()) == message
    assert parse_mirror_message({"a newer kind": 1}) is None  # a newer host's message: skipped, not an error


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_each_hostile_stream_line_is_refused_with_its_field(name):
    message = SCENARIOS[name]
    line = (message if isinstance(message, str) else json.dumps(message)).encode()
    if name in ("other-run", "offset-past-end"):  # well-formed: the mirror refuses it (another run, a gap)
        assert isinstance(parse_mirror_line(line), (RunHeader, Append))
        return
    with pytest.raises(WireError):
        parse_mirror_line(line)


def test_offsets_and_data_are_bounded():
    for offset in (-1, True, 1.0, "0", None, MAX_OFFSET + 1):
        with pytest.raises(WireError, match="offset"):
            parse_mirror_message({"append": "events.jsonl", "offset": offset, "data": ""})
    with pytest.raises(WireError, match="offset"):
        parse_mirror_message({"append": "events.jsonl", "offset": MAX_OFFSET, "data": b64(b"x")})
    for data in ("YWJj\n", "YWJ", "@@@@", 5, None):
        with pytest.raises(WireError, match="data"):
            parse_mirror_message({"file": "config.yaml", "data": data})
    with pytest.raises(WireError, match="not several"):
        parse_mirror_message({"append": "events.jsonl", "offset": 0, "data": "", "end": "completed"})


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
        lambda inner: (
            st.lists(inner, max_size=4)
            | st.dictionaries(
                st.sampled_from(
                    [
                        "append",
                        "file",
                        "status",
                        "gpus",
                        "reset",
                        "end",
                        "run",
                        "offset",
                        "data",
                        "alerts",
                        "run_id",
                        "path",
                        "step",
                        "x",
                    ]
                ),
                inner,
                max_size=5,
            )
        ),
        max_leaves=12,
    )
)
def test_anything_a_host_sends_parses_or_is_a_wire_error(value):
    for parse in (parse_mirror_message, parse_run_rows, HostInfo.from_wire, StopOutcome.from_wire, parse_launch_check):
        try:
            parse(value)
        except WireError:
            pass


# -- the mirror -----------------------------------------------------------------------------------------


def test_a_copy_is_only_ever_a_folder_inside_its_hosts_cache(cache):
    assert mirror_path("box", "good-run") == cache / "good-run"
    for run_id in ("../../../../x", "/tmp/x", "..", "a/b"):
        with pytest.raises(HostError, match="host box: run_id: expected a run id"):
            mirror_path("box", run_id)
    for host in ("..", "a/b", "../../x"):
        with pytest.raises(HostError, match="cannot be a folder of the mirror cache"):
            mirror_path(host, "good-run")


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_a_hostile_line_stops_the_copy_and_writes_nothing_outside_it(cache, tmp_path, name):
    copy = mirror_of(name)
    start(copy)
    before = tree(tmp_path)
    message = SCENARIOS[name]
    with pytest.raises(WireError):
        copy._apply(message.encode() if isinstance(message, str) else message)
    assert tree(tmp_path) == before
    assert not (tmp_path / "x").exists() and not (tmp_path / "cache" / "x").exists()
    assert (copy.folder.path / "events.jsonl").read_bytes() == b'{"type": "run_started"}\n'


def test_appends_go_only_where_the_copy_ends(cache):
    copy = mirror_of()
    start(copy)
    size = (copy.folder.path / "events.jsonl").stat().st_size
    copy._apply({"append": "events.jsonl", "offset": size, "data": b64(b"more\n")})
    copy._apply({"append": "events.jsonl", "offset": size, "data": b64(b"more\n")})  # again: same bytes, same place
    with pytest.raises(WireError, match=rf"offset: expected at most {size + 5}, the end of the copy's events.jsonl"):
        copy._apply({"append": "events.jsonl", "offset": size + 6, "data": b64(b"gap\n")})
    copy._apply({"append": "trainer.log", "offset": 1000, "data": b64(b"tail\n")})  # a tail-only file may skip once
    with pytest.raises(WireError, match=r"trainer.log"):
        copy._apply({"append": "trainer.log", "offset": 5000, "data": b64(b"again\n")})
    # the copy starts where the host's tail did: no hole, and the next stream asks from the host's offset
    assert (copy.folder.path / "trainer.log").read_bytes() == b"tail\n"
    assert copy._offsets()[-1] == "1005"


def test_a_link_planted_in_the_copy_is_not_followed(cache, tmp_path):
    copy = mirror_of()
    outside = tmp_path / "outside.log"
    outside.write_bytes(b"")
    os.symlink(outside, copy.folder.path / "trainer.log")
    with pytest.raises(WireError, match="leads out of the copy"):
        copy._apply({"append": "trainer.log", "offset": 0, "data": b64(b"x\n")})
    assert outside.read_bytes() == b""


def test_a_real_stream_still_applies_and_the_hosts_view_is_checked(tmp_path, cache):
    run = RunFolder(make_finished_run(tmp_path / "runs", run_id="good-run", steps=5))
    copy = Mirror(Connection(Host("box")), run.run_id, str(run.path))
    for line in mirror_lines(run, {}):
        copy._apply(line)
    assert (copy.folder.path / "events.jsonl").read_bytes() == run.events_file.read_bytes()
    assert live_status(copy.folder) is Status.COMPLETED and copy.ended.is_set()
    copy._apply({"status": "running", "alerts": [{"rule": "stall", "severity": "warn", "step": 3, "message": "slow"}]})
    assert remote_view(copy.folder)["alerts"][0]["rule"] == "stall"
    with pytest.raises(WireError, match=r"gpus\[0\].memory_total"):
        copy._apply({"gpus": [{"index": 0, "name": "g", "memory_total": -1, "memory_used": 0, "utilization": 0}]})
    assert remote_view(copy.folder)["gpus"] == []
