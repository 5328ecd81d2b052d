"""Untrusted text through the plain CLI printers: no exception, shown literally, no control character out.

Every printer is rendered by a Rich console with colour off, so any ESC in the output came from the data.
The Textual paths have their own property test (tests/app/test_untrusted_text_app.py).
"""

from __future__ import annotations

import io
import os
from contextlib import redirect_stderr

import orjson
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from rich.console import Console

from grpo_tui.cli import main
from grpo_tui.cli.logs import print_log
from grpo_tui.cli.runs import format_table, plain_table
from grpo_tui.inspect_report import report
from grpo_tui.safe_text import clean, from_ansi, json_bytes, literal
from grpo_tui.services.lifecycle.foreground import EventPrinter
from grpo_tui.services.stream.live_view import Snapshot, render
from grpo_tui.services.stream.log_follow import log_chunks
from trainer_core.contract.run.events import (
    Checkpoint,
    Error,
    HealthWarning,
    Metrics,
    RunFinished,
    RunStarted,
    StopRequested,
)
from trainer_core.contract.run.folder import RunFolder
from trainer_core.contract.run.severity import Severity
from trainer_core.contract.run.status import Status

from ..hostile_text import assert_no_control, hostile, hostile_run_info

PROPERTY = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)


def plain_console() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, color_system=None, force_terminal=False, width=200, soft_wrap=True), out


@PROPERTY
@given(hostile)
def test_clean_keeps_newlines_and_tabs_and_replaces_every_other_control(text):
    shown = clean(text)
    assert_no_control(shown, "clean")
    assert shown.count("\n") == text.count("\n") and shown.count("\t") == text.count("\t")
    if not any(0x80 <= ord(ch) < 0xA0 for ch in text):
        assert len(shown) == len(text)  # one placeholder per character
    assert literal(text).plain == shown  # never parsed as markup: brackets stay as they are


@PROPERTY
@given(hostile)
def test_ansi_keeps_colour_as_style_and_drops_links(text):
    parsed = from_ansi(text + "\x1b[31mred\x1b[0m")
    assert_no_control(parsed.plain, "from_ansi")
    assert parsed.plain.endswith("red") and any(span.style for span in parsed.spans)
    assert all(getattr(span.style, "link", None) is None for span in parsed.spans)


@PROPERTY
@given(hostile, hostile)
def test_runs_tables_show_hostile_fields_literally(text, host):
    assert_no_control(plain_table([hostile_run_info(text, host)], hosts=True), "runs (piped)")
    console, out = plain_console()
    console.print(format_table([hostile_run_info(text, host)], hosts=True))
    assert_no_control(out.getvalue(), "runs (table)")
    rows = orjson.loads(json_bytes(orjson.dumps([hostile_run_info(text).to_wire()])))
    assert rows[0]["project"] == text  # --json keeps the value; only its encoding changed
    assert_no_control(json_bytes(orjson.dumps([hostile_run_info(text).to_wire()])).decode(), "runs --json")


@PROPERTY
@given(hostile)
def test_event_printer_and_the_live_view_show_hostile_events_literally(tmp_path_factory, text):
    folder = RunFolder.create(tmp_path_factory.mktemp("runs"), "20260101-000000-aaaaaa")
    warning = HealthWarning(rule=text, severity=Severity.CRITICAL, step=2, message=text, advice=text)
    error = Error(kind=text, message=text, traceback=text, step=2)
    events = [
        RunStarted(run_id=text, pid=1, resumed_from=text),
        Metrics(step=1, values={"reward": 0.5, text: 1.0}),
        Checkpoint(step=2, path=text),
        warning,
        StopRequested(reason=text, step=2),
        error,
        RunFinished(status=Status.FAILED, reason=text, step=2),
    ]
    console, out = plain_console()
    printer = EventPrinter(console, folder)
    for event in events:
        printer.show(event)
    assert_no_control(out.getvalue(), "train / piped watch lines")
    snap = Snapshot(
        run_id=text,
        status=Status.FAILED,
        project=text,
        model=text,
        step=2,
        total=3,
        metrics={"reward": 0.5, f"rewards/{text}/mean": 0.1, "loss": text},
        warnings=[warning],
        error=error,
        stop_reason=text,
        finished=RunFinished(status=Status.FAILED, reason=text, step=2),
        exit_reason=text,
    )
    console, out = plain_console()
    console.print(render(snap))
    assert_no_control(out.getvalue(), "watch --once")


@PROPERTY
@given(hostile)
def test_logs_print_a_hostile_log_without_its_escapes(tmp_path_factory, text):
    folder = RunFolder.create(tmp_path_factory.mktemp("runs"), "20260101-000000-aaaaaa")
    folder.log_file.write_bytes(f"before {text}\n\x1b[32mgreen\x1b[0m line\n{text}".encode())
    out = io.StringIO()
    print_log(log_chunks(folder), out)
    assert_no_control(out.getvalue(), "logs")
    assert "green line\n" in out.getvalue()
    raw = io.StringIO()
    print_log(log_chunks(folder), raw, raw=True)
    assert raw.getvalue() == folder.log_file.read_bytes().decode()  # --raw: the documented pass-through


@PROPERTY
@given(hostile)
def test_inspection_report_shows_hostile_samples_literally(text):
    summary = {
        "flags": [{"severity": "warn", "flag": text, "message": text}],
        "scored": 1,
        "samples": 2,
        "histogram": [1] * 10,
    }
    records = [
        {"prompt_index": 0, "score": None, "error": text, "prompt": text, "completion": text, "columns": {text: text}},
        {"prompt_index": 1, "score": 0.5, "prompt": text, "completion": text},
    ]
    console, out = plain_console()
    console.print(report(summary, records))
    assert_no_control(out.getvalue(), "inspect report")


@settings(max_examples=25, deadline=None)
@given(hostile.filter(lambda s: "\x00" not in s and s.strip() and not s.startswith("-")))
@example("~[")  # a user that does not exist: Path.expanduser raised, and the command died with a traceback
def test_a_cli_error_about_a_hostile_run_reference_is_printed_literally(text):
    err = io.StringIO()
    with redirect_stderr(err):
        code = main(["--runs-dir", os.devnull + "-none", "logs", text])
    assert code == 2
    assert_no_control(err.getvalue().rstrip("\n"), "error line")


def test_events_lines_escape_c1_and_del_and_stay_the_same_json():
    value = {"message": "a\x9b31m b\x7f c\x1b[2J d\u00e9"}
    encoded = json_bytes(orjson.dumps(value))
    assert orjson.loads(encoded) == value and b"\xc2\x9b" not in encoded and b"\x7f" not in encoded
    assert b"\\u009b" in encoded and b"\xc3\xa9" in encoded  # é is not a control: left as it is


@settings(max_examples=30, deadline=None)
@given(st.text())
def test_json_bytes_never_changes_the_value(text):
    assert orjson.loads(json_bytes(orjson.dumps({"t": text}))) == {"t": text}
