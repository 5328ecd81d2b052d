"""Every reader shows a rewound run's live history: the summary, ``runs`` and ``runs --json``, ``watch --once``, the
monitor's stream and chart data, the ledger and ``checkpoints``, the health rules. A run without a rewind (format
version 2) reads as before, and a torn last line breaks none of them.

The run (tests/rewind_fixtures.py) logged steps 1-38, went back to checkpoint-20 and logged 21-28 again, each with
its reward raised by 5: a reader that mixed the legs would show step 38, a reward under 2, a kl_explosion warning
or the eval of step 30.
"""

from __future__ import annotations

import json

import pytest

from grpo_tui.screens.compare import HELD_OUT
from grpo_tui.screens.compare import _charts as compare_charts
from grpo_tui.services.catalog.folders import held_out_evals, run_info, warning_summary
from grpo_tui.services.stream.folded import ChartRequest, RunStream
from tests.helpers import cli
from tests.rewind_fixtures import FIRST_LEG, LAST_STEP, LEG2_KL, TO_STEP, make_rewound_run, rewind
from tests.run_fixtures import make_eval_run, make_finished_run
from trainer_core.contract.health.monitor import HealthMonitor
from trainer_core.contract.health.seeding import seed, seed_from_file
from trainer_core.contract.run.event_log import dumps, scan_events
from trainer_core.contract.run.events import EventType, HealthWarning, Metrics, Rewound
from trainer_core.contract.run.folder import RunFolder
from trainer_core.contract.run.ledger import KeepBest, kept, read_ledger, resolve_checkpoint
from trainer_core.contract.run.summary import summarize

LIVE_STEPS = list(range(1, LAST_STEP + 1))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The rewound run twice: with the summary its end stores, and without (read from its events)."""
    base = tmp_path_factory.mktemp("runs")
    summarised = make_rewound_run(base, "20260105-000000-5e1f01", with_summary=True)
    plain = make_rewound_run(base, "20260105-000000-5e1f00")
    return base, summarised, plain


def test_the_summary_is_of_the_live_history(runs):
    _, _, plain = runs
    folder = RunFolder(plain)
    summary = summarize(folder, "completed")
    assert summary["step"] == LAST_STEP and summary["reward"] > 5
    assert summary["warnings"] == 0 and summary["last_warning"] is None  # the kl_explosion was abandoned
    assert summary["eval"]["latest"]["step"] == LAST_STEP
    assert summary["eval"]["best"]["step"] == TO_STEP  # not the abandoned eval of step 30
    assert summary["rewinds"] == 1


def test_runs_json_and_the_table_show_the_live_history_and_mark_the_rewind(runs):
    base, summarised, plain = runs
    result = cli("runs", "--json", "--runs-dir", str(base))
    assert result.returncode == 0, result.stderr
    rows = {row["run_id"]: row for row in json.loads(result.stdout)}
    assert set(rows) == {summarised.name, plain.name}
    for row in rows.values():  # from the stored summary and from the events alike
        assert (row["step"], row["warnings"], row["rewinds"]) == (LAST_STEP, 0, 1)
        assert row["last_reward"] > 5
        assert row["eval"]["latest"]["step"] == LAST_STEP and row["eval"]["best"]["step"] == TO_STEP
    table = cli("runs", "--runs-dir", str(base)).stdout
    assert table.count(f"{LAST_STEP}/") == 2 and table.count("↺1") == 2, table


def test_the_catalog_follows_a_live_run_into_a_rewind(tmp_path):
    """The runs list's cached scans read only what was appended: a rewind appended later drops the warning and
    the eval it abandoned."""
    path = make_rewound_run(tmp_path)
    events = path / "events.jsonl"
    lines = events.read_text().splitlines(keepends=True)
    cut = next(i for i, line in enumerate(lines) if '"type":"rewound"' in line)
    events.write_text("".join(lines[:cut]))
    assert warning_summary(events) == (1, "kl_explosion")
    assert max(held_out_evals(events)) == 30
    with events.open("a") as fh:
        fh.write("".join(lines[cut:]))
    assert warning_summary(events) == (0, None)
    assert sorted(held_out_evals(events)) == [0, 10, 20, LAST_STEP]
    info = run_info(RunFolder(path))
    assert (info.step, info.warnings, info.rewinds) == (LAST_STEP, 0, 1)


def test_watch_once_shows_the_live_history_and_names_the_rewind(runs):
    _, _, plain = runs
    result = cli("watch", "--once", str(plain), env={"COLUMNS": "160"})
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert f"step {LAST_STEP}/" in out
    assert "rewound 1x: step 38 -> checkpoint-20 (step 20) by rule kl_explosion; rl_kl_coef 0.1 -> 0.2" in out
    assert "drifting fast" not in out and "\nwarnings" not in out  # no warning table: it was abandoned
    assert f"{LEG2_KL:.4f}" in out  # the new leg's kl, not the first leg's 2.5
    assert "latest @28" in out and "best @20" in out


@pytest.mark.parametrize("fast", [True, False], ids=["fast path", "reference path"])
def test_the_stream_keeps_the_live_series_and_the_abandoned_stretch_apart(runs, fast):
    _, _, plain = runs
    stream = RunStream(RunFolder(plain), fast=fast)
    stream.poll()
    reward = stream.series["reward"]
    assert list(reward.steps[: len(reward)]) == LIVE_STEPS
    assert reward.values[-1] > 5 and reward.values[TO_STEP - 1] < 2
    assert list(stream.times.steps[: len(stream.times)]) == LIVE_STEPS
    assert [w.rule for w in stream.abandoned_warnings] == ["kl_explosion"] and stream.warnings == []
    assert stream.view().step == LAST_STEP
    charts = stream.charts(ChartRequest(1, (("kl", 40), ("reward", 40))))
    assert charts.rewinds == (TO_STEP,)
    kl = charts["kl"]
    assert (kl.steps[0], kl.end_step, kl.count) == (1, LAST_STEP, LAST_STEP)
    assert max(kl.highs) < 0.05  # the live KL: the explosion is not in it
    (stretch,) = charts.abandoned["kl"]
    assert (stretch.steps[0], stretch.end_step) == (TO_STEP + 1, FIRST_LEG)
    assert max(stretch.highs) == pytest.approx(2.5)
    # more steps after the rewind go on from the live series
    with plain.joinpath("events.jsonl").open("a") as fh:
        for step in (LAST_STEP + 1, LAST_STEP + 2):
            fh.write(dumps(Metrics(time=2e9 + step, step=step, values={"reward": 6.0, "kl": 0.02}).to_record()) + "\n")
    try:
        stream.poll()
        assert list(stream.series["reward"].steps)[-3:] == [LAST_STEP, LAST_STEP + 1, LAST_STEP + 2]
        assert stream.charts(ChartRequest(2, (("kl", 40),)))["kl"].end_step == LAST_STEP + 2
    finally:
        text = plain.joinpath("events.jsonl").read_text().splitlines(keepends=True)
        plain.joinpath("events.jsonl").write_text("".join(text[:-2]))


def test_warnings_pending_for_a_viewer_are_dropped_by_a_rewind_read_later(tmp_path):
    """The reader gathers the updates of several polls before it posts: a warning of one poll that a rewind of a
    later poll abandons is not posted."""
    path = make_rewound_run(tmp_path)
    events = path / "events.jsonl"
    lines = events.read_text().splitlines(keepends=True)
    cut = next(i for i, line in enumerate(lines) if '"type":"rewound"' in line)
    events.write_text("".join(lines[:cut]))
    stream = RunStream(RunFolder(path))
    pending = stream.poll()
    assert [w.rule for w in pending.warnings] == ["kl_explosion"]
    with events.open("a") as fh:
        fh.write("".join(lines[cut:]))
    pending.add(stream.poll())
    assert pending.warnings == [] and [type(e).__name__ for e in pending.lifecycle].count("Rewound") == 1
    assert stream.view(pending).warnings == ()


def test_the_compare_screen_charts_the_live_history(runs):
    _, summarised, plain = runs
    streams = [RunStream(RunFolder(path)) for path in (summarised, plain)]
    for stream in streams:
        stream.poll()
    evals = [held_out_evals(path / "events.jsonl") for path in (summarised, plain)]
    request = ChartRequest(1, (("reward", 40), (HELD_OUT + "answer_is_sentence", 40)))
    for window in (None, 10):
        for data in compare_charts(streams, ChartRequest(1, request.widths, window), evals):
            assert data["reward"].end_step == LAST_STEP and data["reward"].last_value > 5
            if window is None:
                assert data[HELD_OUT + "answer_is_sentence"].steps == (0, 10, 20, LAST_STEP)


def test_a_torn_last_line_after_a_rewind_waits_and_breaks_no_reader(tmp_path):
    path = make_rewound_run(tmp_path)
    events = path / "events.jsonl"
    lines = events.read_text().splitlines(keepends=True)
    cut = next(i for i, line in enumerate(lines) if '"type":"rewound"' in line)
    whole = lines[cut]
    events.write_text("".join(lines[:cut]) + whole[: len(whole) // 2])  # the rewind half written
    stream = RunStream(RunFolder(path))
    stream.poll()
    assert stream.rewinds == [] and list(stream.series["reward"].steps)[-1] == FIRST_LEG
    assert summarize(RunFolder(path), "stopped")["warnings"] == 1
    with events.open("a") as fh:
        fh.write(whole[len(whole) // 2 :] + "".join(lines[cut + 1 :]))
    stream.poll()
    assert stream.rewinds == [rewind()] and list(stream.series["reward"].steps)[-1] == LAST_STEP
    assert stream.skipped == 0


def test_the_ledger_keeps_the_abandoned_checkpoints_marked_and_one_may_be_best(runs):
    _, _, plain = runs
    entries = {e.name: e for e in read_ledger(plain)}
    assert entries["checkpoint-30"].marks == ("abandoned", "best")
    assert entries["checkpoint-30"].value("answer_is_sentence") == pytest.approx(0.7)  # its eval is kept
    assert entries["checkpoint-20"].marks == ("last",)  # the newest of the live history
    assert entries["final"].step == LAST_STEP and entries["final"].value("answer_is_sentence") == 0.35
    assert resolve_checkpoint(plain, "best").name == "checkpoint-30"
    assert resolve_checkpoint(plain, "last").name == "checkpoint-20"
    # --keep-best keeps the abandoned best; the newest kept by save_total_limit are the live ones
    listed = list(entries.values())
    assert kept(listed, 1, KeepBest("answer_is_sentence", 1)) == {"checkpoint-20", "checkpoint-30"}
    assert kept(listed, 2, None) == {"checkpoint-10", "checkpoint-20"}
    result = cli("checkpoints", str(plain))
    assert result.returncode == 0, result.stderr
    row = next(line for line in result.stdout.splitlines() if line.startswith("checkpoint-30"))
    assert row.rstrip().endswith("abandoned, best")


def test_the_health_monitor_of_a_new_leg_starts_from_the_live_history(runs):
    _, _, plain = runs
    seeded = seed_from_file(HealthMonitor(), plain / "events.jsonl", TO_STEP)
    assert seeded.history[-1][0] == TO_STEP  # the live history up to the checkpoint
    # fed every line before the rewind, abandoned ones too: the kl_explosion fired and stays silent on a new one
    events, _ = scan_events(plain / "events.jsonl", (EventType.METRICS, EventType.REWOUND))
    before = events[: next(i for i, e in enumerate(events) if isinstance(e, Rewound))]
    mixed = HealthMonitor()
    fired_on_abandoned = [w for e in before if isinstance(e, Metrics) for w in mixed.feed(e.step, e.values)]
    assert "kl_explosion" in [w.rule for w in fired_on_abandoned]

    def explode(monitor: HealthMonitor) -> list[HealthWarning]:
        out = []
        for step in range(TO_STEP + 1, TO_STEP + 6):
            out += monitor.feed(step, {"kl": 2.0 + step, "reward": 0.5, "reward_std": 0.3, "entropy": 1.0})
        return out

    assert "kl_explosion" in [w.rule for w in explode(seeded)]  # fires again after the rewind
    assert "kl_explosion" not in [w.rule for w in explode(mixed)]  # what a monitor fed both legs would miss
    assert not seed(HealthMonitor(), [], TO_STEP).history  # nothing on record: a fresh monitor


def test_a_run_without_a_rewind_reads_as_before(tmp_path):
    path = make_finished_run(tmp_path, steps=25, status="stopped")
    summary = summarize(RunFolder(path), "stopped")
    assert (summary["step"], summary["warnings"], summary["rewinds"]) == (25, 2, 0)
    stream = RunStream(RunFolder(path))
    stream.poll()
    assert list(stream.series["reward"].steps) == list(range(1, 26)) and stream.abandoned == []
    charts = stream.charts(ChartRequest(1, (("reward", 40),)))
    assert charts.rewinds == () and dict(charts.abandoned) == {}
    assert run_info(RunFolder(path)).rewinds == 0
    evals = make_eval_run(tmp_path, steps=30)
    assert [(e.name, e.marks) for e in read_ledger(evals)] == [
        ("checkpoint-10", ("best",)),
        ("checkpoint-20", ()),
        ("checkpoint-30", ("last",)),
        ("final", ("final",)),
    ]
