"""Piped ``grpo-tui runs``: plain columns that cut nothing, as ``docker ps`` prints them; and the lines of a run's
events.jsonl that the list and ``watch --once`` skipped, named by both."""

from __future__ import annotations

import json

from grpo_tui.services.catalog.folders import run_info
from tests.helpers import cli
from tests.run_fixtures import make_finished_run
from tests.unit.test_summary_evals import blank_events, edit_summary, summarised
from trainer_core.contract.run.folder import RunFolder
from trainer_core.contract.run.line_check import SkippedLines
from trainer_core.contract.run.status import Status

BAD, GOOD = "20260101-000000-000-aaaaaa", "20260102-000000-000-bbbbbb"
LONG = "a-project-name-much-longer-than-any-terminal-column-would-leave-room-for-" * 2


def test_piped_runs_are_plain_columns_that_cut_nothing(tmp_path):
    runs = tmp_path / "runs"
    make_finished_run(runs, "20260101-000000-000-aaaaaa", steps=3, project=LONG)
    make_finished_run(runs, "20260102-000000-000-bbbbbb", steps=5, status=Status.STOPPED, with_warnings=False)
    out = cli("runs", "--runs-dir", str(runs), env={"COLUMNS": "80"})
    assert out.returncode == 0, out.stderr
    header, *rows = out.stdout.splitlines()
    assert header.split() == [
        "id",
        "status",
        "step",
        "reward",
        "held-out",
        "warnings",
        "started",
        "duration",
        "model",
        "project",
    ]
    assert rows[0].startswith("20260102-000000-000-bbbbbb  stopped") and rows[1].startswith(
        "20260101-000000-000-aaaaaa"
    )
    assert rows[1].endswith(LONG) and "…" not in out.stdout and "\x1b" not in out.stdout
    column = header.index("status")
    assert all(row[column - 2 : column] == "  " and row[column] != " " for row in rows)


def test_runs_and_watch_once_name_the_lines_a_run_skipped(tmp_path):
    runs = tmp_path / "runs"
    bad = make_finished_run(runs, BAD, steps=5, with_warnings=False)
    make_finished_run(runs, GOOD, steps=5, with_warnings=False)
    lines = (bad / "events.jsonl").read_bytes().splitlines(keepends=True)
    step_x = b'{"type": "metrics", "step": "x", "reward": 1}\n'
    (bad / "events.jsonl").write_bytes(b"".join([*lines[:3], b"not json\n", *lines[3:5], step_x, *lines[5:]]))
    with open(bad / "events.jsonl", "ab") as fh:  # and a torn line: a writer may still be finishing it
        fh.write(b'{"type": "metrics", "st')
    first = "events.jsonl line 4: not JSON"

    piped = cli("runs", "--runs-dir", str(runs))
    assert piped.returncode == 0, piped.stderr
    header, good, broken = piped.stdout.splitlines()
    assert header.split()[-1] == "skipped" and good.endswith("  0") and broken.endswith("  2 (events.jsonl)")
    listed = cli("runs", "--json", "--runs-dir", str(runs))
    rows = {row["run_id"]: row["skipped_lines"] for row in json.loads(listed.stdout)}
    assert rows == {BAD: {"events.jsonl": {"count": 2, "first": first, "checked_from": 0}}, GOOD: {}}
    watched = cli("watch", "--once", BAD, "--runs-dir", str(runs))
    assert watched.returncode == 0 and "Traceback" not in watched.stderr, watched.stderr
    assert watched.stdout.splitlines()[0] == f"2 lines of events.jsonl skipped, the rest shown; first: {first}"
    assert f"{BAD}  completed  step 5/5" in watched.stdout


def test_a_finished_run_is_listed_with_the_check_its_summary_stores(tmp_path):
    path = make_finished_run(tmp_path / "runs", BAD, steps=5, with_warnings=False)
    count = len((path / "events.jsonl").read_bytes().splitlines())
    with open(path / "events.jsonl", "ab") as fh:
        fh.write(b"[]\n")
    skipped = SkippedLines(1, f"events.jsonl line {count + 1}: a JSON list, not an object")
    assert summarised(path)["skipped_lines"] == {"events.jsonl": skipped.to_record()}
    blank_events(path)  # the summary still holds (events.jsonl has its size): the list reads it, not the events
    assert run_info(RunFolder(path)).skipped == {"events.jsonl": skipped}
    edit_summary(path, skipped_lines={"events.jsonl": {"count": "1"}})  # not a check: the events are read
    assert run_info(RunFolder(path)).skipped == {}
    edit_summary(path, skipped_lines=...)  # a summary written before summaries held the check: the same
    assert run_info(RunFolder(path)).skipped == {}
