"""Property tests of the readers of a run folder: whatever bytes a line holds, nothing raises, and every valid
record is still read. Driven through the monitor's stream (``RunStream``, over ``EventTail``), the samples
reader, the state reader and the catalog (the runs list), with arbitrary JSON, every event type with each field
of a wrong kind, invalid UTF-8, huge numbers, NaN and Infinity spelled as strings or bare, a torn last line,
and (once each, not per example) a 10 MB line and one past the reader's limit. The end check of ``grpo-tui runs``
and ``watch --once`` (``line_check.check_end``) skips the lines the monitor skips."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from orjson import loads

from grpo_tui.services.catalog.folders import list_runs
from grpo_tui.services.stream.folded import RunStream
from grpo_tui.services.stream.reader import read_samples_checked
from trainer_core.contract.run.event_log import MAX_LINE_BYTES, EventTail
from trainer_core.contract.run.events import TYPED, Metrics, decode
from trainer_core.contract.run.folder import RunFolder
from trainer_core.contract.run.line_check import CHECK_BYTES, check_end
from trainer_core.contract.run.state import read_state

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))

JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(1 << 63), max_value=(1 << 64) - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
    | st.sampled_from(["NaN", "Infinity", "-Infinity", "nan", "1e999", "x", ""]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
FIELDS = sorted({f.name for cls in TYPED.values() for f in fields(cls)} | {"type", "time", "step", "reward"})


@st.composite
def wrong_field(draw) -> bytes:
    """A record of a known event type with one field (any of any type's, or its own) set to anything. Not a rewind:
    a valid one abandons steps by the format's rule (tests/unit/test_rewinds.py judges its fields)."""
    kind = draw(st.sampled_from(sorted(set(TYPED) - {"rewound"})))
    record = {"type": kind, "time": 1.0, "step": 3, "message": "m", "rule": "stall", "severity": "warn"}
    record[draw(st.sampled_from(FIELDS))] = draw(JSON)
    return json.dumps(record).encode()


RAW = st.sampled_from(
    [
        b"1",
        b"[]",
        b"null",
        b'"text"',
        b"\xff\xfe\x80",
        b'{"type": "metrics", "step": 1e999}',
        b'{"type": "metrics", "step": NaN, "reward": Infinity}',
        b'{"type": "metrics", "step": 99999999999999999999999}',
        b'{"type": "metrics", "step": -1}',
        b'{"type": "metrics", "step": "x", "reward": 1}',
        b'{"type": "health_warning", "step": "x", "rule": "stall", "severity": "warn"}',
        b'{"type": "metrics", "step": 2, "reward": "NaN", "kl": "Infinity", "loss": 1e308}',
        b'{"type": "eval", "step": 1, "metrics": {"acc": "high"}}',
        b"{" * 5000,
        b"[" * 100_000,
        b"   ",
        b"",
    ]
)
HOSTILE = st.one_of(RAW, wrong_field(), JSON.map(lambda v: json.dumps(v).encode()), st.binary(max_size=40))


def metrics_line(step: int) -> bytes:
    return json.dumps({"type": "metrics", "time": 1000.0 + step, "step": step, "reward": step / 7, "kl": 0.1}).encode()


@st.composite
def event_files(draw) -> tuple[list[bytes], list[int]]:
    """Lines of valid metrics (steps 1, 2, …) with hostile lines between them, and the valid steps."""
    lines, steps = [], []
    for step in range(1, draw(st.integers(1, 12)) + 1):
        lines += [h.replace(b"\n", b" ") for h in draw(st.lists(HOSTILE, max_size=3))]
        lines.append(metrics_line(step))
        steps.append(step)
    return lines, steps


def expected_steps(lines: list[bytes]) -> tuple[list[int], list[int]]:
    """The steps of the lines the readers' JSON (orjson) reads as metrics events (an arbitrary object may happen
    to be one), and those of them with a reward that is a number. A step past a signed 64-bit integer is none."""
    steps, rewarded = [], []
    for line in lines:
        try:
            record = loads(line)
        except ValueError:
            continue
        if not isinstance(record, dict):
            continue
        reward = record.get("reward")
        event = decode(record)
        if isinstance(event, Metrics) and event.step < 1 << 63:
            steps.append(event.step)
            if isinstance(reward, (int, float)) and not isinstance(reward, bool):
                rewarded.append(event.step)
    return steps, rewarded


@SETTINGS
@given(event_files(), st.binary(max_size=30), st.integers(1, 4096))
def test_the_stream_reads_every_valid_step_around_any_line(tmp_path_factory, made, torn, chunk):
    lines, steps = made
    folder = RunFolder(tmp_path_factory.mktemp("run"))
    folder.events_file.write_bytes(b"\n".join(lines) + b"\n" + torn.replace(b"\n", b""))  # a torn last line
    stream = RunStream(folder, chunk_bytes=chunk)
    for _ in range(len(lines) + 2):  # a small chunk may need several polls
        stream.poll()
    want, rewarded = expected_steps(lines)
    assert set(steps) <= set(want)
    assert list(stream.steps) == want  # every valid metrics line reached the series, in order
    charted = list(stream.series["reward"].steps)  # a reward of true or false may be charted as 1 or 0
    assert [s for s in charted if s in rewarded] == rewarded and len(charted) <= len(want)
    view = stream.view()
    assert view.step == want[-1]
    if stream.skipped:
        assert view.skipped_where is not None and view.skipped_where.startswith("events.jsonl line ")
    with open(folder.events_file, "ab") as fh:  # the torn line ends: the stream goes on after it
        fh.write(b"\n" + metrics_line(1000) + b"\n")
    stream.poll()
    assert stream.steps[-1] == 1000


@SETTINGS
@given(event_files(), st.binary(max_size=30))
def test_the_end_check_of_runs_and_watch_skips_the_lines_the_monitor_skips(tmp_path_factory, made, torn):
    lines, _ = made
    folder = RunFolder(tmp_path_factory.mktemp("run"))
    folder.events_file.write_bytes(b"\n".join(lines) + b"\n" + torn.replace(b"\n", b""))  # a torn last line
    stream = RunStream(folder)
    stream.poll()
    too_far = sum(1 for line in lines if _too_far(line))  # a step the monitor cannot chart, and only it skips
    skipped = check_end(folder.events_file)
    count = skipped.count if skipped else 0
    if folder.events_file.stat().st_size > CHECK_BYTES:  # (a line of 100,000 brackets) only the end is checked
        assert count <= stream.skipped and (skipped is None or skipped.checked_from > 0)
        return
    assert count == stream.skipped - too_far
    if skipped and not too_far:
        assert skipped.first == stream.skipped_where() and skipped.checked_from == 0


def _too_far(line: bytes) -> bool:
    try:
        record = loads(line)
    except ValueError:
        return False
    return (
        isinstance(record, dict)
        and record.get("type") == "metrics"
        and type(record.get("step")) is int
        and record["step"] >= 1 << 63
    )


@SETTINGS
@given(st.lists(HOSTILE, max_size=8), st.lists(st.integers(0, 100), max_size=5))
def test_samples_keep_every_object_line(tmp_path_factory, hostile, good):
    folder = RunFolder(tmp_path_factory.mktemp("run"))
    samples = [{"step": s, "completion": f"c{s}", "reward": 1.0} for s in good]
    lines = [h.replace(b"\n", b" ") for h in hostile] + [json.dumps(s).encode() for s in samples]
    folder.samples_file.write_bytes(b"\n".join(lines) + b"\n")
    read = read_samples_checked(folder)
    assert list(read.samples)[-len(samples) :] == samples or not samples


@SETTINGS
@given(st.one_of(HOSTILE, st.binary(max_size=200)), st.sampled_from(["state.json", "stop_request"]))
def test_state_and_stop_request_of_any_bytes_read_without_raising(tmp_path_factory, data, name):
    path = tmp_path_factory.mktemp("run") / name
    path.write_bytes(data)
    state = read_state(path)
    assert isinstance(dict(state), dict)


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    st.dictionaries(
        st.sampled_from(["events.jsonl", "samples.jsonl", "state.json", "config.yaml", "notify.json", "stop_request"]),
        st.lists(HOSTILE, min_size=1, max_size=4),
        min_size=1,
    )
)
def test_the_runs_list_lists_a_run_whatever_its_files_hold(tmp_path_factory, files):
    runs = tmp_path_factory.mktemp("runs")
    good = RunFolder(runs / "20260101-000000-900d00")
    good.path.mkdir()
    good.state_file.write_text(json.dumps({"status": "completed", "started": 1.0, "ended": 2.0}))
    good.events_file.write_bytes(metrics_line(1) + b"\n")
    bad = runs / "20260101-000001-bad000"
    bad.mkdir()
    for name, lines in files.items():
        (bad / name).write_bytes(b"\n".join(lines) + b"\n")
    if not (bad / "state.json").exists():
        (bad / "state.json").write_text("[]")
    listed = {row.run_id: row for row in list_runs(runs)}
    assert set(listed) == {good.run_id, bad.name}
    assert listed[good.run_id].step == 1


def test_a_10_mb_line_is_read_and_the_stream_goes_on(tmp_path):
    folder = RunFolder(tmp_path)
    big = json.dumps({"type": "metrics", "time": 1.0, "step": 2, "reward": 0.5, "x" * 10_000_000: 1}).encode()
    folder.events_file.write_bytes(metrics_line(1) + b"\n" + big + b"\n" + metrics_line(3) + b"\n")
    stream = RunStream(folder)  # chunks of 2 MB: the big line is read to its end, not waited on forever
    for _ in range(4):
        stream.poll()
    assert list(stream.steps) == [1, 2, 3] and stream.skipped == 0


def test_a_line_past_the_limit_is_skipped_and_named(tmp_path):
    path = tmp_path / "events.jsonl"
    with open(path, "wb") as fh:
        fh.write(metrics_line(1) + b"\n")
        fh.write(b'{"type": "metrics", "step": 2, "x": "' + b"y" * (MAX_LINE_BYTES + 10) + b'"}\n')
        fh.write(metrics_line(3) + b"\n")
    tail = EventTail(path)
    steps = []
    for _ in range(4):
        steps += [r["step"] for r in tail.poll_records(2 * 1024 * 1024)]
    assert steps == [1, 3] and tail.bad_lines == 1
    assert tail.first_bad == (2, f"longer than {MAX_LINE_BYTES} bytes")


def test_an_unfinished_long_line_is_waited_for(tmp_path):
    path = tmp_path / "events.jsonl"
    path.write_bytes(metrics_line(1) + b"\n" + b'{"type": "metrics", "step": 2, "x": "' + b"y" * 3_000_000)
    tail = EventTail(path)
    assert [r["step"] for r in tail.poll_records(1 << 20)] == [1]
    assert tail.poll_records(1 << 20) == []
    with open(path, "ab") as fh:
        fh.write(b'"}\n')
    assert [r["step"] for r in tail.poll_records(1 << 20)] == [2]
    assert Path(path).stat().st_size == tail.offset
