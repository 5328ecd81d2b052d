"""The monitor's fast path for metrics lines (``services/stream/metrics_lines.py``) folds any events file exactly as the
reference path does (each line parsed by orjson and judged by ``decode``): the same series with the same values
and steps, the same times, last metrics event, lifecycle events and warnings, and the same lines skipped, counted
and named. Hypothesis writes metrics lines with values of every kind (numbers orjson refuses, invalid UTF-8, true,
null, text, lists, duplicate keys, escaped keys, new keys mid-run, a second value on the line) among hostile and
lifecycle lines, appends the file in pieces and reads it in chunks of any size."""

from __future__ import annotations

import json
import pickle

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grpo_tui.services.stream import metrics_lines
from grpo_tui.services.stream.folded import RunStream
from trainer_core.contract.run.folder import RunFolder

from .test_reader_properties import HOSTILE, JSON

KEYS = ["reward", "kl", "loss", "entropy", "rewards/f/mean", "rewards/é/mean", "rewards/f/std", "epoch", "note"]
# what orjson refuses and a lax decoder would take (a number past a double, a lone surrogate, invalid UTF-8), and
# values no series takes
RAW_VALUES = [
    b"9" * 400,
    b"-" + b"9" * 310,
    b"1e400",
    b'"\\ud800"',
    b'"\xff"',
    b"NaN",
    b"-0",
    b"true",
    b'[1, {"a": 2}]',
]
STEPS = [b"-1", b"1.0", b'"3"', b"true", b"null", b"9223372036854775808", b"9223372036854775807"]
TIMES = [b"1000.5", b"1000", b"null", b'"t"', b"true"]
LIFECYCLE = [
    {"type": "warning", "rule": "stall", "severity": "warn", "step": 3, "message": "m"},
    {"type": "checkpoint", "step": 4, "path": "checkpoints/checkpoint-4"},
    {"type": "eval", "step": 2, "metrics": {"answer": {"mean": 0.5}}},
    {"type": "run_started", "run_id": "r", "pid": 1},
    {"type": "something_new", "step": 1},
]


def key_value(draw, key: str) -> bytes:
    value = draw(st.one_of(st.sampled_from(RAW_VALUES), JSON.map(lambda v: json.dumps(v).encode())))
    return json.dumps(key).encode() + b": " + value


def number(draw) -> bytes:
    return json.dumps(draw(st.floats(allow_nan=False, allow_infinity=False) | st.integers(-5, 5))).encode()


@st.composite
def event_lines(draw) -> list[bytes]:
    """A run's lines: most are metrics lines of the run's keys with numbers, as a trainer writes them; some are
    metrics lines with one thing odd; some are other events or hostile lines."""
    keys = draw(st.lists(st.sampled_from(KEYS), unique=True, min_size=1, max_size=len(KEYS)))
    lines = []
    for step in range(draw(st.integers(1, 40))):
        kind = draw(st.integers(0, 11))
        if kind < 9:
            parts = [b'"type": "metrics"', b'"step": %d' % step, b'"time": %d.5' % (1000 + step)]
            parts += [json.dumps(key).encode() + b": " + number(draw) for key in keys]
            if kind >= 6:
                odd_line(draw, parts)
            line = b"{" + draw(st.sampled_from([b", ", b","])).join(parts) + b"}"
            if kind >= 6 and not draw(st.integers(0, 5)):
                line += draw(st.sampled_from([b"\r", b" ", b"\x0c", b" {}", b'{"type": "metrics"}']))
            lines.append(line)
        elif kind == 9:
            lines.append(json.dumps(draw(st.sampled_from(LIFECYCLE))).encode())
        else:
            lines.append(draw(HOSTILE).replace(b"\n", b" "))
    return lines


def odd_line(draw, parts: list[bytes]) -> None:
    """One change to a metrics line's parts: a value of any kind, a key new or repeated, a step or a time of the
    wrong kind, a field left out, an escaped key, or the keys in another order."""
    change = draw(st.integers(0, 9))
    if change == 0 and len(parts) > 3:
        parts[draw(st.integers(3, len(parts) - 1))] = key_value(draw, draw(st.sampled_from(KEYS)))
    elif change == 1:
        parts.append(key_value(draw, draw(st.text(max_size=5) | st.sampled_from(KEYS))))
    elif change == 2:
        parts[1] = b'"step": ' + draw(st.sampled_from(STEPS))
    elif change == 3:
        parts[2] = b'"time": ' + draw(st.sampled_from(TIMES))
    elif change == 4:
        del parts[draw(st.integers(1, len(parts) - 1))]
    elif change == 5:
        parts.append(b'"rew\\u0061rd": 0.25')
    elif change >= 7 and len(parts) > 3:  # a value orjson refuses, under a key of the run's
        at = draw(st.integers(3, len(parts) - 1))
        parts[at] = parts[at].partition(b": ")[0] + b": " + draw(st.sampled_from(RAW_VALUES[:5]))
    else:
        draw(st.randoms()).shuffle(parts)


def folded(stream: RunStream) -> tuple:
    """Everything a viewer gets of the stream, and the reader's counts."""
    last = stream.last_metrics
    series = {key: (list(s.values), list(s.steps)) for key, s in stream.series.items()}
    return (
        list(stream.steps),
        list(stream.series),
        series,
        (list(stream.times.values), list(stream.times.steps)),
        (last, last.values if last else None),
        (stream.metrics_read, stream.skipped, stream.skipped_where(), stream.tail.bad_lines, stream.rejected),
        [repr(e) for e in stream.lifecycle],
        [repr(w) for w in stream.warnings],
        (stream.tail.offset, stream.tail.lines),
    )


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(event_lines(), st.binary(max_size=12), st.data())
def test_the_fast_path_folds_any_file_as_the_reference_path_does(tmp_path_factory, lines, torn, data):
    folder = RunFolder(tmp_path_factory.mktemp("run"))
    content = b"\n".join(lines) + b"\n" + torn.replace(b"\n", b"")
    cuts = [*sorted(data.draw(st.lists(st.integers(0, len(content)), max_size=3))), len(content)]
    chunk = data.draw(st.sampled_from([64, 700, 4096, 2 * 1024 * 1024]))
    fast, reference = RunStream(folder, chunk_bytes=chunk), RunStream(folder, chunk_bytes=chunk, fast=False)
    for cut in cuts:  # the file grows in pieces, torn lines included, as a writer appends it
        folder.events_file.write_bytes(content[:cut])
        for stream in (fast, reference):
            for _ in range(len(lines) + 3):
                stream.poll()
    assert folded(fast) == folded(reference)
    again = pickle.loads(pickle.dumps(fast))  # as the backlog child hands it over
    with open(folder.events_file, "ab") as fh:
        fh.write(b'\n{"type": "metrics", "step": 99, "reward": 0.5, "loss": 1}\n')
    for stream in (again, reference):
        stream.poll()
    assert folded(again)[:-1] == folded(reference)[:-1] and again.steps[-1] == 99


def test_past_the_key_limit_every_line_goes_the_reference_way(tmp_path, monkeypatch):
    monkeypatch.setattr(metrics_lines, "MAX_KEYS", 8)
    folder = RunFolder(tmp_path)
    lines = [json.dumps({"type": "metrics", "step": s, "reward": s / 10, f"key{s}": 1}) for s in range(30)]
    folder.events_file.write_text("\n".join(lines) + "\n")
    fast, reference = RunStream(folder), RunStream(folder, fast=False)
    fast.poll()
    reference.poll()
    assert folded(fast) == folded(reference) and list(fast.series["reward"].steps) == list(range(30))
    assert fast._fast is not None and fast._fast.decode is None
