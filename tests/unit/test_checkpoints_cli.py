"""``grpo-tui checkpoints RUN``: the checkpoint ledger through the real command line, as a table and as JSON."""

from __future__ import annotations

import json

from grpo_tui.safe_text import has_control
from tools.synthetic_runs import write_checkpoint
from trainer_core.contract.run.event_log import dumps
from trainer_core.contract.run.events import Eval

from ..helpers import cli
from ..run_fixtures import TASK_METRIC, make_eval_run, make_finished_run

HOSTILE = "[red]x[/] \x1b]52;c;aGk=\x07[link=https://evil.example]y[/link]"


def _rows(stdout: str) -> dict[str, list[str]]:
    """The table's rows by checkpoint name (the first column), each the cells after it."""
    lines = stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("checkpoint "))
    return {line.split()[0]: line.split()[1:] for line in lines[header + 1 :]}


def test_the_table_lists_steps_held_out_values_sizes_and_marks(runs_dir):
    make_eval_run(runs_dir)
    result = cli("checkpoints", "latest", "--runs-dir", str(runs_dir))
    assert result.returncode == 0, result.stderr
    assert f"best by held-out {TASK_METRIC}" in result.stdout
    header = next(line for line in result.stdout.splitlines() if line.startswith("checkpoint "))
    assert header.split() == [
        "checkpoint",
        "step",
        TASK_METRIC,
        f"{TASK_METRIC}/pass@4",
        "reward",
        "reward/pass@4",
        "size",
        "marks",
    ]
    rows = _rows(result.stdout)
    assert list(rows) == [f"checkpoint-{s}" for s in (10, 20, 30, 40, 50)] + ["final"]
    # the task metric peaks at step 20: that checkpoint is the best, not the last
    assert rows["checkpoint-20"][:2] == ["20", "0.700"] and rows["checkpoint-20"][-1] == "best"
    assert rows["checkpoint-50"][-1] == "last" and rows["final"][-1] == "final"
    assert rows["checkpoint-10"][-1] == "-"
    assert rows["checkpoint-10"][-3:-1] == ["1.0", "KiB"]  # sizes are human readable


def test_json_carries_every_entry_and_the_metric_of_best(runs_dir):
    make_eval_run(runs_dir)
    result = cli("checkpoints", "latest", "--runs-dir", str(runs_dir), "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["metric"] == TASK_METRIC
    entries = {e["name"]: e for e in data["checkpoints"]}
    assert entries["checkpoint-20"]["marks"] == ["best"]
    assert entries["checkpoint-20"]["metrics"][TASK_METRIC] == 0.7
    assert entries["final"]["marks"] == ["final"] and entries["final"]["step"] == 50
    assert all(isinstance(e["size"], int) and e["size"] > 0 for e in entries.values())


def test_metric_picks_the_best_and_an_unknown_one_is_a_clear_error(runs_dir):
    make_eval_run(runs_dir)
    by_reward = json.loads(
        cli("checkpoints", "latest", "--runs-dir", str(runs_dir), "--json", "--metric", "reward").stdout
    )
    assert by_reward["metric"] == "reward"
    assert [e["name"] for e in by_reward["checkpoints"] if "best" in e["marks"]] == ["checkpoint-50"]

    result = cli("checkpoints", "latest", "--runs-dir", str(runs_dir), "--metric", "accuracy")
    assert result.returncode == 2
    assert "--metric 'accuracy'" in result.stderr and TASK_METRIC in result.stderr
    assert "Traceback" not in result.stderr


def test_a_run_without_evals_lists_its_checkpoints_and_says_it_has_no_held_out_set(runs_dir):
    path = make_finished_run(runs_dir, steps=20, with_warnings=False)
    (path / "checkpoints" / "checkpoint-10").rmdir()
    write_checkpoint(path / "checkpoints", 10)
    result = cli("checkpoints", path.name, "--runs-dir", str(runs_dir))
    assert result.returncode == 0, result.stderr
    assert "has no held-out set" in result.stdout
    rows = _rows(result.stdout)
    assert rows["checkpoint-10"][0] == "10" and rows["checkpoint-10"][-1] == "last"
    assert json.loads(cli("checkpoints", path.name, "--runs-dir", str(runs_dir), "--json").stdout)["metric"] is None


def test_hostile_metric_names_are_shown_literally(runs_dir):
    path = make_finished_run(runs_dir, steps=20, with_warnings=False)
    evaluation = Eval(step=10, metrics={HOSTILE: {"mean": 0.5}}, task_metrics=[HOSTILE], prompts=4)
    (path / "checkpoints" / "checkpoint-10").rmdir()
    write_checkpoint(path / "checkpoints", 10, evaluation)
    with (path / "events.jsonl").open("a") as fh:
        fh.write(dumps(evaluation.to_record()) + "\n")
    result = cli("checkpoints", path.name, "--runs-dir", str(runs_dir))
    assert result.returncode == 0, result.stderr
    assert not has_control(result.stdout)
    assert "[red]x[/]" in result.stdout and "[link=https://evil.example]y[/link]" in result.stdout
    assert "0.500" in result.stdout
    data = json.loads(cli("checkpoints", path.name, "--runs-dir", str(runs_dir), "--json").stdout)
    assert data["metric"] == HOSTILE  # JSON keeps the name as it is (escaped, no raw control byte)


def test_a_missing_run_is_a_clear_error(runs_dir):
    make_eval_run(runs_dir)
    result = cli("checkpoints", "nope", "--runs-dir", str(runs_dir))
    assert result.returncode == 2
    assert result.stderr.startswith("error: no run 'nope'") and "Traceback" not in result.stderr


def test_help_names_the_command():
    result = cli("--help")
    assert "checkpoints" in result.stdout
    assert "--metric" in cli("checkpoints", "--help").stdout
