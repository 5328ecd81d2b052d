"""A run's name, tags and notes through the real CLI (issue 44, points 12 and 14): ``--name``, ``--tag``
(repeatable) and ``--notes`` on train and launch, refused before anything is written when they are not bounded text;
kept by config.yaml and ``export --format grpo-tui``; sent by ``runs --json`` (a row without them, from an older
host, still parses); and the piped ``runs`` table's held-out column."""

from __future__ import annotations

import json

import pytest

from grpo_tui.services.records.run_row import RunInfo
from tests.helpers import EXAMPLES, cli
from tests.run_fixtures import make_eval_run, make_finished_run
from trainer_core.contract.config.run_config import RunConfig, load_text

NAMED, PLAIN, EVAL = "20260102-000000-000-bbbbbb", "20260101-000000-000-aaaaaa", "20260103-000000-000-cccccc"


def env_flags(model) -> list[str]:
    return [
        "--model",
        str(model),
        "--rl-env-module",
        str(EXAMPLES / "pattern_env.py"),
        "--rl-env-class",
        "PatternEnv",
    ]


@pytest.mark.parametrize("command", ["train", "launch"])
@pytest.mark.parametrize(
    ("flags", "field", "shown"),
    [
        (["--tag", "ok", "--tag", "no spaces!"], "tag", "'no spaces!'"),
        (["--tag", "x" * 41], "tag", "'" + "x" * 41 + "'"),
        (["--name", "n" * 101], "name", "101 characters"),
        (["--name", "a\x1bb"], "name", "'a\\x1bb'"),
        (["--notes", "y" * 2001], "notes", "2001 characters"),
    ],
)
def test_bad_labels_are_refused_before_anything_is_written(tmp_path, command, flags, field, shown):
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    runs = tmp_path / "runs"
    out = cli(command, *env_flags(model), *flags, "--runs-dir", str(runs), cwd=tmp_path)
    assert out.returncode == 2, out.stdout + out.stderr
    error = out.stderr.strip().splitlines()[-1]
    assert error.startswith(f"error: {field}") and shown in error, error
    assert "Traceback" not in out.stderr and not runs.exists()


def test_train_and_launch_offer_the_label_flags():
    for command in ("train", "launch"):
        text = cli(command, "--help", env={"COLUMNS": "200"}).stdout
        for flag in ("--name NAME", "--tag TAG", "--notes NOTES"):
            assert flag in text, (command, flag)


def test_labels_go_on_the_wire_and_round_trip_through_export(tmp_path):
    runs = tmp_path / "runs"
    make_finished_run(runs, NAMED, steps=4, name="lr sweep: [b]ig", tags=("sweep", "lr:1e-5"), with_warnings=False)
    make_finished_run(runs, PLAIN, steps=4, with_warnings=False)
    out = cli("runs", "--json", "--runs-dir", str(runs))
    assert out.returncode == 0, out.stderr
    rows = {row["run_id"]: row for row in json.loads(out.stdout)}
    assert rows[NAMED]["name"] == "lr sweep: [b]ig" and rows[NAMED]["tags"] == ["sweep", "lr:1e-5"]
    assert rows[PLAIN]["name"] is None and rows[PLAIN]["tags"] == [] and rows[PLAIN]["notes"] is None
    older = {k: v for k, v in rows[NAMED].items() if k not in ("name", "tags", "notes")}  # a host before labels
    parsed = RunInfo.from_wire(older)
    assert parsed.name is None and parsed.tags == () and parsed.run_id == NAMED
    assert RunInfo.from_wire(rows[NAMED]).tags == ("sweep", "lr:1e-5")

    exported = cli("export", NAMED, "--format", "grpo-tui", "--runs-dir", str(runs))
    assert exported.returncode == 0, exported.stderr
    again = RunConfig.from_dict(load_text(exported.stdout, "export"))
    assert again.name == "lr sweep: [b]ig" and again.tags == ["sweep", "lr:1e-5"]


def test_piped_runs_has_the_held_out_column(tmp_path):
    runs = tmp_path / "runs"
    make_eval_run(runs, EVAL, steps=50)
    make_finished_run(runs, PLAIN, steps=4, with_warnings=False)
    app_row = {row["run_id"]: row for row in json.loads(cli("runs", "--json", "--runs-dir", str(runs)).stdout)}
    best = app_row[EVAL]["eval"]["best"]["value"]
    out = cli("runs", "--runs-dir", str(runs), env={"COLUMNS": "80"})
    assert out.returncode == 0, out.stderr
    header, *lines = out.stdout.splitlines()
    columns = header.split()
    assert columns[columns.index("reward") + 1] == "held-out"
    cells = {line.split()[0]: line.split() for line in lines}
    at = columns.index("held-out")
    assert cells[EVAL][at] == f"{best:.3f}" and cells[PLAIN][at] == "-"


@pytest.mark.parametrize(
    ("kind", "name", "tags"),
    [
        ({}, "demo: write a's", ["demo", "pattern"]),
        ({"pathology": "kl"}, "demo: KL explodes at lr 1e-2", ["demo", "pathology", "kl"]),
        ({"agent": True}, "demo: book hotel rooms with tools", ["demo", "agent", "tools"]),
    ],
)
def test_each_demo_names_and_tags_its_run(tmp_path, kind, name, tags):
    from grpo_tui.cli.demo import demo_config

    config = demo_config(tmp_path, **kind)
    assert (config.name, config.tags) == (name, tags)
    assert [p for p in config.problems() if p.field in ("name", "tags", "notes")] == []
