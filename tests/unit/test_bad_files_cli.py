"""Every file of a run folder, broken, through every command that reads run folders, as users run them (the
real ``grpo-tui`` in a child process): a command either goes on (exit 0, the rest of the run read) or names the
bad file and exits non-zero; never a traceback.

The commands run side by side (each is a child process that mostly waits on its own start-up)."""

from __future__ import annotations

import json
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.helpers import cli
from tests.run_fixtures import make_eval_run

RUN = "20260101-000000-e7a1ed"
DEEP = b"[" * 100_000 + b"\n"  # nested past any recursive parser's depth
BROKEN = {
    # file: (bytes, appended or replacing)
    "events.jsonl": (b'1\n{"type": "metrics", "step": "x", "reward": 1}\n\xff\xfe\n[]\n' + DEEP, "append"),
    "samples.jsonl": (b'1\n\xff\n[]\n{"step": "x", "completion": 5, "reward": "high"}\n' + DEEP, "append"),
    "state.json": (b"[]", "replace"),
    "stop_request": (b"[]", "replace"),
    "config.yaml": (b"\xff\xfe not yaml", "replace"),
    "notify.json": (DEEP, "replace"),
    "checkpoints/checkpoint-10/trainer_state.json": (DEEP, "replace"),
    "checkpoints/checkpoint-20/grpo_tui_eval.json": (b'{"metrics": [1, 2], "step": "x"}', "replace"),
    "checkpoints/torn/checkpoint-30/grpo_tui_torn.json": (b"\xff{", "replace"),
}
COMMANDS = [
    ["runs"],
    ["runs", "--json"],
    ["watch", "--once", RUN],
    ["stop", RUN],
    ["logs", RUN],
    ["export", RUN],
    ["info"],
    ["checkpoints", RUN],
    ["checkpoints", RUN, "--json"],
    ["events", RUN],
]
READS_CONFIG_FIRST = [["merge", RUN, "--output", "merged"], ["eval", RUN]]  # before their torch-side child starts


@pytest.fixture(scope="module")
def good_run(tmp_path_factory) -> Path:
    runs = tmp_path_factory.mktemp("good")
    make_eval_run(runs, RUN)
    return runs


def broken_copy(good_run: Path, tmp_path: Path, name: str) -> Path:
    runs = tmp_path / "runs"
    shutil.copytree(good_run, runs)
    path = runs / RUN / name
    path.parent.mkdir(parents=True, exist_ok=True)
    data, how = BROKEN[name]
    with open(path, "ab" if how == "append" else "wb") as fh:
        fh.write(data)
    return runs


def check(proc, name: str, args: list[str]) -> None:
    said = f"grpo-tui {' '.join(args)} with a broken {name}: exit {proc.returncode}\n{proc.stderr[-1500:]}"
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout, said
    if proc.returncode != 0:
        assert proc.stderr.strip().startswith("error:") or Path(name).name in proc.stderr, said


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_a_broken_file_is_named_or_read_around_by_every_command(good_run, tmp_path, name):
    runs = broken_copy(good_run, tmp_path, name)
    calls = [[*args, "--runs-dir", str(runs)] for args in COMMANDS]
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda args: cli(*args, cwd=tmp_path, timeout=120), calls))
    for args, proc in zip(calls, results, strict=True):
        check(proc, name, args)
    listed = json.loads(results[1].stdout)
    assert [row["run_id"] for row in listed] == [RUN]  # the run still lists, whatever is broken in it


def test_a_broken_config_is_named_before_merge_or_eval_start_their_work(good_run, tmp_path):
    runs = broken_copy(good_run, tmp_path, "config.yaml")
    for args in READS_CONFIG_FIRST:
        proc = cli(*args, "--runs-dir", str(runs), cwd=tmp_path, timeout=120)
        check(proc, "config.yaml", args)
        assert proc.returncode == 2 and "config.yaml: it is not UTF-8 text" in proc.stderr, proc.stderr
    (runs / RUN / "config.yaml").write_text("- a list\n- not a mapping\n")
    proc = cli("export", RUN, "--runs-dir", str(runs), cwd=tmp_path)
    assert proc.returncode == 2 and "config.yaml" in proc.stderr and "Traceback" not in proc.stderr


def test_a_broken_config_file_given_to_inspect_is_named(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_bytes(b"- [1, 2\n")
    proc = cli("inspect", "--config", str(bad), "--runs-dir", str(tmp_path / "runs"), cwd=tmp_path)
    assert proc.returncode == 2 and "bad.yaml" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_brackets_in_state_json_and_stop_request_through_stop_and_watch(good_run, tmp_path):
    """The issue's repro: ``echo '[]' > RUN/state.json`` (and into stop_request), then stop and watch."""
    runs = tmp_path / "runs"
    shutil.copytree(good_run, runs)
    (runs / RUN / "state.json").write_text("[]\n")
    (runs / RUN / "stop_request").write_text("[]\n")
    for args in (["stop", RUN], ["watch", "--once", RUN], ["watch", RUN]):
        proc = cli(*args, "--runs-dir", str(runs), cwd=tmp_path, timeout=120)
        assert "Traceback" not in proc.stderr, proc.stderr
        assert proc.returncode == 0 or "state.json" in proc.stderr, (proc.returncode, proc.stderr)
