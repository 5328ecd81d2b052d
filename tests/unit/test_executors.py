"""The executor interface: the registry, this machine's executor on hand-written run folders, typed results that
are the remote wire's records, and the one judgement of a stop."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys

import psutil
import pytest

from grpo_tui.executors.base import ExecutorError, RunAt, judge_stop, place_args
from grpo_tui.executors.hosts import LOCAL, Host, HostError, load_hosts
from grpo_tui.executors.local import LocalCopy, LocalExecutor
from grpo_tui.executors.registry import EXECUTORS, ExecutorRegistry
from grpo_tui.executors.ssh import SshExecutor
from grpo_tui.services.catalog.folders import UnknownRunError, resolve_run
from grpo_tui.services.records.stop_outcome import StopOutcome
from grpo_tui.services.records.wire import EventLine, WireError, parse_event_line
from grpo_tui.services.serving.event_feed import event_lines
from tests.helpers import wait_for
from tests.run_fixtures import make_finished_run
from trainer_core.contract.run.folder import RunFolder
from trainer_core.contract.run.process import process_start_time
from trainer_core.contract.run.status import Status

# -- the registry --------------------------------------------------------------------------------------------


def test_the_registry_gives_this_machine_for_local_and_one_executor_per_host(tmp_path):
    registry = ExecutorRegistry(tmp_path, {"gpubox": Host("gpubox", runs_dir="/data/runs")})
    assert registry.get() is registry.get(LOCAL) is registry.get(None) is registry.local
    assert isinstance(registry.local, LocalExecutor) and registry.local.runs_dir == tmp_path
    box = registry.get("gpubox")
    assert isinstance(box, SshExecutor) and box is registry.get("gpubox")  # made once, reused by every screen
    assert box.runs_dir == "/data/runs" and box.where == "host gpubox" and box.host_name == "gpubox"
    assert place_args(box) == ["--runs-dir", "/data/runs", "--host", "gpubox"]  # a command line acting there
    plain = registry.get("alice@elsewhere")  # not in the file: a plain SSH destination, as --host takes it
    assert isinstance(plain, SshExecutor) and plain.host == Host("alice@elsewhere")
    with pytest.raises(HostError, match="give a host name"):
        registry.get("-oProxyCommand=x")


def test_a_host_names_its_kind_of_executor_and_an_unknown_one_is_refused(tmp_path, monkeypatch):
    path = tmp_path / "hosts.yaml"
    path.write_text("gpubox: {ssh: alice@gpu-7, executor: ssh}\nodd: {executor: k8s}\nplain: {}\n")
    os.chmod(path, 0o600)
    hosts = load_hosts(path)
    assert hosts["gpubox"].executor == "ssh" and hosts["plain"].executor == "ssh"
    assert repr(hosts["plain"]) == repr(Host("plain", ssh="plain"))  # the SSH connection's name does not change
    registry = ExecutorRegistry(tmp_path, hosts)
    assert isinstance(registry.get("gpubox"), SshExecutor)
    monkeypatch.setenv("GRPO_TUI_HOSTS", str(path))
    with pytest.raises(HostError, match=r"host 'odd': executor 'k8s' is not one this grpo-tui has; known: ssh"):
        registry.get("odd")
    assert list(EXECUTORS) == ["ssh"]


def test_the_hosts_file_is_read_when_a_host_is_first_asked_for(tmp_path, monkeypatch):
    monkeypatch.setenv("GRPO_TUI_HOSTS", str(tmp_path / "missing.yaml"))
    registry = ExecutorRegistry(tmp_path)
    assert registry.get(LOCAL) is registry.local and registry.hosts == {}


# -- this machine ---------------------------------------------------------------------------------------------


def test_the_local_executor_lists_finds_and_copies_runs_in_place(tmp_path):
    first = make_finished_run(tmp_path, run_id="20260101-000000-first0", steps=3)
    second = make_finished_run(tmp_path, run_id="20260101-000001-second", steps=4, status=Status.STOPPED)
    local = LocalExecutor(tmp_path)
    assert [r.run_id for r in local.list_runs().runs] == [second.name, first.name]
    assert local.list_runs().error is None
    assert [r.run_id for r in local.list_runs(["latest"]).runs] == [second.name]
    found = local.find("20260101-000000")
    assert found.run_id == first.name and found.host is None and found.path == first
    with pytest.raises(ExecutorError) as caught:
        local.find("nothing-like-it")
    with pytest.raises(UnknownRunError) as catalog:
        resolve_run(tmp_path, "nothing-like-it")
    assert str(caught.value) == str(catalog.value)  # the catalog's own words
    copy = local.mirror(found)
    assert isinstance(copy, LocalCopy) and copy.folder.path == first and copy.ready.is_set()
    assert copy.start() is copy and copy.wait_ready(0) and copy.sync() is None
    assert place_args(local) == ["--runs-dir", str(tmp_path)] and place_args(LocalExecutor()) == []
    assert local.name == LOCAL and local.host_name is None and local.where == "this machine" and local.folders_here


def test_the_local_executor_gives_a_runs_log_as_written_and_how_it_stands(tmp_path):
    run = make_finished_run(tmp_path, steps=2)
    (run / "trainer.log").write_text("step 1 \x1b[31mred\x1b[0m ✓\nhalf a line")
    local = LocalExecutor(tmp_path)
    found = local.find(run.name)
    assert (
        "".join(local.logs(found, follow=True)) == "step 1 \x1b[31mred\x1b[0m ✓\nhalf a line"
    )  # showing it is the CLI's
    assert local.status(found) is Status.COMPLETED


def test_the_local_info_is_what_info_json_prints(tmp_path, monkeypatch):
    monkeypatch.setenv("GRPO_TUI_FAKE_GPUS", "2")
    info = LocalExecutor(tmp_path).info()
    assert info.runs_dir == str(tmp_path.absolute()) and [g.index for g in info.gpus] == [0, 1]
    printed = subprocess.run(
        [sys.executable, "-m", "grpo_tui", "info", "--json", "--runs-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert json.loads(printed) == info.to_wire()


def test_stopping_an_ended_run_here_is_an_outcome_that_is_not_an_error(tmp_path):
    run = make_finished_run(tmp_path, steps=2)
    outcome = LocalExecutor(tmp_path).stop(RunAt(run.name, run))
    assert isinstance(outcome, StopOutcome) and not outcome.was_running and outcome.status is Status.COMPLETED
    assert outcome.message == f"run {run.name} is not running (status: completed); nothing to stop."
    verdict = judge_stop(outcome)
    assert not verdict.failed and verdict.severity == "information" and verdict.message == outcome.message


def test_a_recorded_process_that_is_not_the_runs_is_refused_and_judged_an_error(tmp_path):
    run = make_finished_run(tmp_path, steps=2)
    folder = RunFolder(run)
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])  # no run marker
    try:
        wait_for(lambda: "time.sleep" in " ".join(psutil.Process(stranger.pid).cmdline()), 30, what="the stranger")
        state = {
            **folder.read_state(),
            "status": "running",
            "ended": None,
            "summary": None,
            "root_pid": stranger.pid,
            "root_start_time": process_start_time(stranger.pid),
        }
        folder.state_file.write_text(json.dumps(state))  # planted: names a process that is not the run's
        outcome = LocalExecutor(tmp_path).stop(RunAt(run.name, run), force=True, timeout=1)
        assert stranger.poll() is None, "a process that is not the run's is never signalled"
        assert outcome.refused and f"Process {stranger.pid}" in outcome.refused[0]
        verdict = judge_stop(outcome)
        assert verdict.failed and verdict.severity == "error" and outcome.refused[0] in verdict.message
    finally:
        stranger.kill()
        stranger.wait()


def test_resuming_a_run_without_a_checkpoint_is_one_line(tmp_path):
    run = make_finished_run(tmp_path, steps=2, status=Status.STOPPED)
    for checkpoint in (run / "checkpoints").glob("*"):
        for path in sorted(checkpoint.rglob("*"), reverse=True):
            path.unlink() if path.is_file() else path.rmdir()
        checkpoint.rmdir()
    with pytest.raises(ExecutorError, match=f"run {run.name} has no checkpoint to resume from"):
        LocalExecutor(tmp_path).resume(RunAt(run.name, run))


# -- typed results: the same record from here and from a host ------------------------------------------------------


@pytest.mark.parametrize(
    "outcome",
    [
        StopOutcome.of("r1", was_running=True, graceful=True, status=Status.STOPPED),
        StopOutcome.of("r1", was_running=True, forced=[41, 42], left=[42], status=Status.STOPPED),
        StopOutcome.of("r1", was_running=False, status=Status.RUNNING, refused=["Process 7 was not signalled: ..."]),
        StopOutcome.of("r1", was_running=True, forced=[0], left=[0], status=Status.RUNNING),  # a Slurm job
    ],
)
def test_what_stop_json_prints_is_what_the_caller_parses(outcome):
    assert StopOutcome.from_wire(json.loads(json.dumps(outcome.to_wire()))) == outcome
    assert list(outcome.to_wire()) == [
        "run_id",
        "was_running",
        "graceful",
        "forced",
        "left",
        "refused",
        "status",
        "message",
    ]
    assert judge_stop(outcome).failed == outcome.failed == bool(outcome.left or outcome.refused)
    assert all(why in outcome.message for why in outcome.refused) and outcome.message.startswith("run r1")


def test_an_older_hosts_stop_reply_still_parses_and_a_bad_one_names_its_field():
    older = {
        "run_id": "r",
        "was_running": True,
        "graceful": False,
        "forced": [12],
        "left": [],
        "status": "stopped",
        "message": "run r forced to stop",
    }  # before `refused` existed
    reply = StopOutcome.from_wire(older)
    assert reply.forced == (12,) and reply.refused == () and not judge_stop(reply).failed
    for bad, where in (
        ({"forced": True, "message": "m"}, "forced"),
        ({"forced": [-1], "message": "m"}, r"forced\[0\]"),
        ({"refused": [3], "message": "m"}, r"refused\[0\]"),
    ):
        with pytest.raises(WireError, match=where):
            StopOutcome.from_wire(bad)


def test_event_lines_name_their_byte_offset_apart_from_the_mirror_streams_end_status(tmp_path):
    run = make_finished_run(tmp_path, steps=2)
    lines = list(event_lines(RunFolder(run)))
    parsed = [parse_event_line(line) for line in lines]
    assert parsed[0].offset == 0 and all(a.next_offset == b.offset for a, b in itertools.pairwise(parsed))
    assert parsed[-1].next_offset == (run / "events.jsonl").stat().st_size
    assert json.loads(lines[0]) == {"offset": 0, "end": parsed[0].next_offset, "event": parsed[0].event}
    assert EventLine(0, 5, {"type": "x"}).encode() == b'{"offset":0,"end":5,"event":{"type":"x"}}'
    with pytest.raises(WireError, match="end: expected a byte offset past offset 5"):
        parse_event_line(b'{"offset": 5, "end": 5, "event": {}}')
