"""Piped ``grpo-tui runs``: plain columns that cut nothing, as ``docker ps`` prints them."""

from __future__ import annotations

from tests.helpers import cli
from tests.run_fixtures import make_finished_run
from trainer_core.contract.run.status import Status

LONG = "a-project-name-much-longer-than-any-terminal-column-would-leave-room-for-" * 2


def test_piped_runs_are_plain_columns_that_cut_nothing(tmp_path):
    runs = tmp_path / "runs"
    make_finished_run(runs, "20260101-000000-000-aaaaaa", steps=3, project=LONG)
    make_finished_run(runs, "20260102-000000-000-bbbbbb", steps=5, status=Status.STOPPED, with_warnings=False)
    out = cli("runs", "--runs-dir", str(runs), env={"COLUMNS": "80"})
    assert out.returncode == 0, out.stderr
    header, *rows = out.stdout.splitlines()
    assert header.split() == ["id", "status", "step", "reward", "warnings", "started", "duration", "model", "project"]
    assert rows[0].startswith("20260102-000000-000-bbbbbb  stopped") and rows[1].startswith(
        "20260101-000000-000-aaaaaa"
    )
    assert rows[1].endswith(LONG) and "…" not in out.stdout and "\x1b" not in out.stdout
    column = header.index("status")
    assert all(row[column - 2 : column] == "  " and row[column] != " " for row in rows)
