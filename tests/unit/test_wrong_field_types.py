"""A field of the wrong type in any event is a counted, named rejection in every reader, never a value.

For each field of each event type (and ``time``, and a metrics or summary event's values), Hypothesis writes a
finished four-step run and appends one line of that type with the field set to a JSON value its rule refuses
(``"reward": "NaN"``, ``"time": "soon"``, ``"step": true``, ``"message": ["m"]``, ...). Then the monitor's stream
(``RunStream``, with its fast path and without), the catalog (``list_runs``) and ``grpo-tui runs --json`` (run in
process) each count one skipped line that names the field, and show the run as it was: step 4 of 4, its last
reward, its warnings and evals, and every row value of the type the row says. A null is no wrong value: it is how
a NaN is written, and what TRL logs when every value of a metric was NaN.
"""

from __future__ import annotations

import contextlib
import io
import json
from dataclasses import fields

import orjson
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from grpo_tui.cli import main
from grpo_tui.services.catalog.folders import list_runs
from grpo_tui.services.records.run_row import RunInfo
from grpo_tui.services.records.wire import parse_run_rows
from grpo_tui.services.stream.folded import RunStream
from trainer_core.contract.run.event_log import EventWriter
from trainer_core.contract.run.events import TYPED, HealthWarning, Metrics, RunFinished, RunStarted, problem
from trainer_core.contract.run.folder import RunFolder
from trainer_core.contract.run.json_values import is_number
from trainer_core.contract.run.status import Status

SETTINGS = settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
RUN_ID = "20260101-000000-abcdef"
STEPS = 4
REWARD = 0.375  # exact in float32, as the stream keeps it

# a value of every JSON kind, and the strings a lax reader would take for a number
WRONG = st.recursive(
    st.booleans()
    | st.integers(min_value=-(1 << 70), max_value=1 << 70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
    | st.sampled_from(["NaN", "Infinity", "-1", "1e999", "soon", ""]),
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=4), inner, max_size=2),
    max_leaves=4,
)
# a line of each type that reads as that event, with the step after the run's last
BASE = {
    "metrics": {"step": STEPS + 1, "reward": 0.5},
    "summary": {"step": STEPS + 1, "train_runtime": 1.0},
    "warning": {"step": STEPS + 1, "rule": "stall", "severity": "warn", "message": "m"},
    "eval": {"step": STEPS + 1, "metrics": {"answer": {"mean": 0.5}}, "prompts": 2},
}
VALUES = ("step", "reward", "kl", "loss", "epoch", "train_runtime")  # a metrics or summary line's own


def cases() -> list[tuple[str, str]]:
    found = []
    for kind, cls in sorted(TYPED.items()):
        names = ["time"] + [f.name for f in fields(cls) if f.name not in ("time", "extra", "values")]
        names += list(VALUES) if kind in ("metrics", "summary") else []
        found += [(kind, name) for name in dict.fromkeys(names)]
    return found


def make_run(runs) -> RunFolder:
    folder = RunFolder(runs / RUN_ID)
    folder.path.mkdir()
    folder.config_file.write_text("model: m\nproject_name: p\nmax_steps: 4\n")
    with EventWriter(folder.events_file) as events:
        events.emit(RunStarted(time=1000.0, run_id=RUN_ID, max_steps=STEPS))
        for step in range(1, STEPS + 1):
            events.emit(Metrics(time=1000.0 + step, step=step, values={"reward": REWARD, "kl": 0.25}))
        events.emit(HealthWarning("stall", step=2, message="slow", time=1002.5))
        events.emit(RunFinished(time=1005.0, status=Status.COMPLETED, step=STEPS))
    folder.state_file.write_text(json.dumps({"status": "completed", "started": 1000.0, "ended": 1005.0}))
    return folder


def assert_row(row: RunInfo, field: str) -> None:
    """The run as it was, with one skipped line naming ``field``: nothing of the bad line in the row."""
    assert (row.step, row.total, row.last_reward, row.status) == (STEPS, STEPS, REWARD, Status.COMPLETED)
    assert row.warnings == 1 and row.last_warning == "stall" and row.held_out is None
    assert row.skipped is not None and row.skipped["events.jsonl"].count == 1
    assert row.skipped["events.jsonl"].first.startswith(f"events.jsonl line {STEPS + 4}: ")
    assert f"{field[:40]} must be" in row.skipped["events.jsonl"].first
    assert RunInfo.from_wire(orjson.loads(orjson.dumps(row.to_wire()))).to_wire() == {**row.to_wire(), "host": None}


@pytest.mark.parametrize(("kind", "field"), cases())
@SETTINGS
@given(value=WRONG)
def test_a_field_of_the_wrong_type_is_a_counted_rejection_in_every_reader(tmp_path_factory, kind, field, value):
    record = {"type": kind, "time": 1006.0, **BASE.get(kind, {"step": STEPS + 1}), field: value}
    assume(problem(dict(record)) is not None)  # a value the field's rule refuses (null never is one)
    runs = tmp_path_factory.mktemp("runs")
    folder = make_run(runs)
    with open(folder.events_file, "ab") as fh:
        fh.write(json.dumps(record).encode() + b"\n")  # json: an int past 64 bits too

    for fast in (True, False):  # the monitor: its fast path for metrics lines, and the reference reader
        stream = RunStream(folder, fast=fast)
        stream.poll()
        assert list(stream.steps) == list(range(1, STEPS + 1)) and stream.view().step == STEPS
        assert stream.skipped == 1 and stream.rejected == 1
        where = stream.skipped_where()
        assert where is not None and where.startswith(f"events.jsonl line {STEPS + 4}: {kind}: {field[:40]} must be")
        assert all(is_number(v) for series in stream.series.values() for v in series.values)
        assert list(stream.series["reward"].values) == [REWARD] * STEPS
        assert [w.step for w in stream.warnings] == [2]
        assert [e.type for e in stream.lifecycle] == ["run_started", "run_finished"]

    [row] = list_runs(runs)  # the catalog, as the app and grpo-tui runs list it
    assert_row(row, field)

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["runs", "--json", "--runs-dir", str(runs)])
    assert code == 0
    rows, problems = parse_run_rows(json.loads(out.getvalue()))  # what a caller over SSH checks it with
    assert problems == [] and [r.run_id for r in rows] == [RUN_ID]
    assert_row(rows[0], field)


def test_a_null_value_or_time_is_no_wrong_type(tmp_path):
    """TRL logs None for a metric whose values were all NaN, and a writer writes NaN as null: still a step."""
    folder = make_run(tmp_path)
    with open(folder.events_file, "ab") as fh:
        fh.write(orjson.dumps({"type": "metrics", "time": None, "step": STEPS + 1, "reward": None, "kl": None}) + b"\n")
    for fast in (True, False):
        stream = RunStream(folder, fast=fast)
        stream.poll()
        assert stream.view().step == STEPS + 1 and stream.skipped == 0
        assert list(stream.series["reward"].steps) == list(range(1, STEPS + 1))  # null is no point
    [row] = list_runs(tmp_path)
    assert row.step == STEPS + 1 and row.last_reward is None and row.skipped == {}


def test_the_finished_run_that_got_a_fifth_step_of_nonsense_shows_four(tmp_path):
    """``{"type":"metrics","step":5,"reward":"NaN","time":"soon"}`` appended to a finished 4-step run."""
    folder = make_run(tmp_path)
    with open(folder.events_file, "a") as fh:
        fh.write('{"type":"metrics","step":5,"reward":"NaN","time":"soon"}\n')
    for fast in (True, False):
        stream = RunStream(folder, fast=fast)
        stream.poll()
        assert stream.view().step == STEPS and stream.skipped == 1
        assert (
            stream.skipped_where() == "events.jsonl line 8: metrics: time must be a finite number or null; got 'soon'"
        )
    [row] = list_runs(tmp_path)
    assert (row.step, row.last_reward) == (STEPS, REWARD) and row.skipped and row.skipped["events.jsonl"].count == 1
