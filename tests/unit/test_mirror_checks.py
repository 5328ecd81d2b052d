"""What a host appends is checked before the copy holds it, and an offset is bounded by what the copy has.

A line of events.jsonl or samples.jsonl that is not one JSON object is masked in the copy (``#`` and spaces of
its length, so offsets stay the host's); the readers skip and count it, and every valid line is read. A tail-only
file's stream may start anywhere on the host, but the copy then starts there: no sparse file, whatever the
offset. Without a network: messages are applied as the stream would deliver them."""

from __future__ import annotations

import base64
import json
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grpo_tui.executors.hosts import Host
from grpo_tui.executors.mirror import Mirror
from grpo_tui.executors.ssh_connection import Connection
from grpo_tui.services.records.wire import MAX_OFFSET, WireError, checked_lines
from grpo_tui.services.stream.folded import RunStream
from grpo_tui.services.stream.reader import read_samples_checked
from tests.standins.hostile_host import SCENARIOS
from tests.unit.test_reader_properties import event_files, expected_steps
from trainer_core.contract.run.folder import FORMAT_VERSION, RunFolder


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


@pytest.fixture
def copy(tmp_path, monkeypatch) -> Mirror:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    mirror = Mirror(Connection(Host("box")), "good-run", "/runs/good-run")
    for message in (
        {"run": {"run_id": "good-run", "path": "/runs/good-run", "format_version": FORMAT_VERSION}},
        {"file": "config.yaml", "data": b64(b"model: tiny\n")},
        {"file": "state.json", "data": b64(b'{"status": "running"}')},
    ):
        mirror._apply(message)
    return mirror


def metrics(step: int) -> bytes:
    return json.dumps({"type": "metrics", "time": 1.0 + step, "step": step, "reward": step / 10}).encode() + b"\n"


BAD = [b"1\n", b'{"type": "metrics", "step": "x"}\n', b"\xff\xfe not utf-8\n", b"{not json\n", b"[1, 2]\n"]


def test_a_host_that_sends_bad_lines_has_them_masked_and_every_valid_step_shown(copy):
    data = b"".join(metrics(s) + BAD[s % len(BAD)] for s in range(1, 11))
    copy._apply({"append": "events.jsonl", "offset": 0, "data": b64(data)})
    local = (copy.folder.path / "events.jsonl").read_bytes()
    assert len(local) == len(data)  # the host's offsets: the next stream starts where the host's file does
    assert b"\xff" not in local and b"{not json" not in local and b"\n1\n" not in local
    assert copy.masked == 8  # each but the wrong-typed step, which is one JSON object: the reader rejects that
    first = len(metrics(1) + BAD[1] + metrics(2))  # the invalid UTF-8 after step 2
    assert copy.masked_where == f"events.jsonl at the host's byte {first}: not JSON"
    assert json.loads((copy.folder.path / ".remote.json").read_text())["masked_lines"] == 8
    stream = RunStream(copy.folder)
    stream.poll()
    assert list(stream.steps) == list(range(1, 11))  # every valid step reaches the series
    assert list(stream.series["reward"].steps) == list(range(1, 11))
    assert stream.skipped == 10 and stream.skipped_where() == (
        "events.jsonl line 2: metrics: step must be a whole number, 0 or more; got 'x'"
    )


def test_a_line_split_across_messages_is_written_once_whole_and_checked(copy):
    one = metrics(1)
    copy._apply({"append": "events.jsonl", "offset": 0, "data": b64(one[:10])})
    assert (copy.folder.path / "events.jsonl").read_bytes() == b""  # nothing of an unfinished line
    assert copy._offsets()[1] == "0"  # a new stream sends the line again from its start
    copy._apply({"append": "events.jsonl", "offset": 10, "data": b64(one[10:] + b"[tr")})
    assert (copy.folder.path / "events.jsonl").read_bytes() == one
    copy._apply({"append": "events.jsonl", "offset": len(one) + 3, "data": b64(b"uncated\n")})
    assert (copy.folder.path / "events.jsonl").read_bytes() == one + b"#" + b" " * 9 + b"\n"
    assert copy.masked == 1


def test_samples_from_a_host_are_checked_as_events_are(copy):
    good = json.dumps({"step": 1, "completion": "fine", "reward": 1.0}).encode() + b"\n"
    copy._apply({"append": "samples.jsonl", "offset": 0, "data": b64(b"1\n" + good + b"null\n")})
    samples = read_samples_checked(copy.folder)
    assert samples.samples == ({"step": 1, "completion": "fine", "reward": 1.0},)
    assert samples.skipped == 2 and samples.where == "samples.jsonl at byte 0: not JSON"


@pytest.mark.parametrize("name", ["samples.jsonl", "trainer.log"])
def test_a_huge_first_offset_leaves_no_sparse_file(copy, name):
    offset = MAX_OFFSET - 100  # just under 1 TiB, on a file the copy does not have yet
    copy._apply({"append": name, "offset": offset, "data": b64(b'{"step": 1}\n')})
    path = copy.folder.path / name
    assert path.stat().st_size == 12 and path.stat().st_blocks <= 8
    sizes = copy._offsets()
    assert str(offset + 12) in sizes  # the next stream asks from the host's offset
    copy._apply({"append": name, "offset": offset + 12, "data": b64(b'{"step": 2}\n')})
    assert path.read_bytes() == b'{"step": 1}\n{"step": 2}\n'
    with pytest.raises(WireError, match=r"where the copy's .* starts"):
        copy._apply({"append": name, "offset": 5, "data": b64(b"x\n")})
    with pytest.raises(WireError, match="offset"):  # past the copy's end, later in the stream
        copy._apply({"append": name, "offset": offset + 100, "data": b64(b"x\n")})
    assert path.stat().st_size == 24


def test_events_cannot_skip_ahead_even_on_a_new_copy(copy):
    with pytest.raises(WireError, match="expected at most 0"):
        copy._apply({"append": "events.jsonl", "offset": 1 << 39, "data": b64(metrics(1))})
    assert (copy.folder.path / "events.jsonl").stat().st_size == 0
    assert SCENARIOS["offset-past-end"]["append"] == "events.jsonl"  # the hostile host's case of the same rule


def test_a_new_copy_asks_the_tail_files_again_from_the_host(copy, tmp_path):
    copy._apply({"append": "trainer.log", "offset": 5000, "data": b64(b"tail\n")})
    again = Mirror(Connection(Host("box")), "good-run", "/runs/good-run")
    assert (again.folder.path / "trainer.log").stat().st_size == 0  # where its tail began is not known here
    assert again._offsets()[-1] == "0"


def test_a_reset_starts_a_tail_file_again_at_zero(copy):
    copy._apply({"append": "trainer.log", "offset": 5000, "data": b64(b"tail\n")})
    copy._apply({"reset": "trainer.log"})
    copy._apply({"append": "trainer.log", "offset": 0, "data": b64(b"new\n")})
    assert (copy.folder.path / "trainer.log").read_bytes() == b"new\n" and copy._offsets()[-1] == "4"


def test_checked_lines_keeps_lengths_and_blank_lines():
    data = b'{"a": 1}\n\n  \n1\n\xff\n'
    checked, bad = checked_lines(data)
    assert len(checked) == len(data) and checked.count(b"\n") == data.count(b"\n")
    assert checked == b'{"a": 1}\n\n  \n#\n#\n'
    assert bad == [(13, "a JSON int, not an object"), (15, "not JSON")]
    assert os.path.sep not in checked.decode()


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(event_files(), st.lists(st.integers(1, 400), max_size=6))
def test_any_lines_in_any_pieces_reach_the_copy_as_the_readers_would_read_them_on_the_host(
    tmp_path_factory, made, cuts
):
    lines, _ = made
    data = b"\n".join(lines) + b"\n"
    cache = tmp_path_factory.mktemp("cache")
    os.environ["XDG_CACHE_HOME"] = str(cache)
    try:
        copy = Mirror(Connection(Host("box")), "good-run", "/runs/good-run")
    finally:
        del os.environ["XDG_CACHE_HOME"]
    offset = 0
    for cut in [*sorted(set(cuts)), len(data)]:
        if offset < min(cut, len(data)):
            copy._apply({"append": "events.jsonl", "offset": offset, "data": b64(data[offset:cut])})
            offset = min(cut, len(data))
    local = (copy.folder.path / "events.jsonl").read_bytes()
    assert len(local) == len(data) and local.count(b"\n") == data.count(b"\n")
    host = tmp_path_factory.mktemp("host")
    (host / "events.jsonl").write_bytes(data)
    here, there = RunStream(copy.folder), RunStream(RunFolder(host))
    for _ in range(3):
        here.poll()
        there.poll()
    assert list(here.steps) == list(there.steps) == expected_steps(lines)[0]
    assert here.skipped == there.skipped
