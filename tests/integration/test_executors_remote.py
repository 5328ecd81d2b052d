"""One interface, two places: the same run folder asked through this machine's executor and through a host's
(a real sshd on 127.0.0.1, tests/sshd.py, whose "remote" runs folder is on this disk) gives the same answers,
as the same types."""

from __future__ import annotations

import json
import socket

import pytest

from grpo_tui.executors.base import ExecutorError, judge_stop
from grpo_tui.executors.hosts import load_hosts
from grpo_tui.executors.local import LocalExecutor
from grpo_tui.executors.registry import ExecutorRegistry
from grpo_tui.executors.ssh import SshExecutor, close_all
from grpo_tui.executors.watched_run import WatchedRun
from grpo_tui.safe_text import has_control
from grpo_tui.services.machine.gpus import GPU
from tests.helpers import PATTERN_FLAGS, cli, pattern_args, wait_for
from tests.remote_hosts import remote, sshd  # noqa: F401
from tests.run_fixtures import make_finished_run
from trainer_core.contract.run.folder import RunFolder
from trainer_core.contract.run.status import Status

pytestmark = pytest.mark.slow

RUN_ID = "20260101-000000-execs0"


@pytest.fixture
def both(remote, monkeypatch):  # noqa: F811
    for key, value in remote.env.items():
        monkeypatch.setenv(key, value)
    runs = remote.runs / "gpubox"
    if not (runs / RUN_ID).exists():
        make_finished_run(runs, run_id=RUN_ID, steps=5, status=Status.STOPPED)
    registry = ExecutorRegistry(runs, load_hosts(remote.hosts_file))
    yield registry.local, registry.get("gpubox")
    close_all()


def test_a_run_reads_the_same_through_either_executor(both):
    local, host = both
    assert isinstance(local, LocalExecutor) and isinstance(host, SshExecutor)
    here, there = local.find(RUN_ID), host.find(RUN_ID)
    assert (here.host, there.host) == (None, "gpubox") and here.path == there.path
    assert {**here.to_wire(), "host": None} == {**there.to_wire(), "host": None}
    assert RUN_ID in [r.run_id for r in host.list_runs().runs] and host.list_runs().error is None
    assert local.info().run_format == host.info().run_format and host.info().runs_dir == str(here.path.parent)
    assert all(isinstance(g, GPU) for g in [*local.gpus(), *host.gpus()])
    with pytest.raises(ExecutorError, match=r"^host gpubox: "):
        host.find("nothing-like-it")


def test_stopping_an_ended_run_is_the_same_outcome_and_verdict_from_here_and_from_the_host(both):
    local, host = both
    run = local.find(RUN_ID)
    here, there = local.stop(run, timeout=5), host.stop(host.find(RUN_ID), timeout=5)
    assert here == there and not here.was_running and here.status is Status.STOPPED
    assert judge_stop(here) == judge_stop(there) and not judge_stop(there).failed


def test_a_stop_forwarded_to_a_host_records_who_asked_here_and_a_hostile_by_is_only_data(
    remote,  # noqa: F811
    monkeypatch,
    tiny_model,
):
    """The app's stop of a run on a host: ``stop --by "the app on THIS-MACHINE"`` there, recorded in the run's
    exit reason; a hostile ``--by`` (a shell word, an option, escapes, newlines, a great length) is kept as data."""
    for key, value in remote.env.items():
        monkeypatch.setenv(key, value)
    runs = remote.runs / "gpubox"
    registry = ExecutorRegistry(runs, load_hosts(remote.hosts_file))
    hostile = "x'; touch pwned #\x1b]52;c;Zm9v\x07\n--force $(id) \u202e" + "y" * 300
    try:
        host = registry.get("gpubox")
        for by in ("the app", hostile):
            out = cli("launch", "--json", "--model", tiny_model, *PATTERN_FLAGS, "--runs-dir", str(runs),
                      "--max-steps", "2000", "--save-steps", "1000")  # fmt: skip
            assert out.returncode == 0, out.stderr
            run_id = json.loads(out.stdout)["run_id"]
            wait_for(lambda: (host.find(run_id).step or 0) >= 1, timeout=120)  # noqa: B023
            outcome = host.stop(host.find(run_id), timeout=120, by=by)
            assert outcome.graceful and not judge_stop(outcome).failed, outcome.message
            reason = RunFolder(runs / run_id).read_state()["exit_reason"]
            if by == "the app":
                assert reason == f"stop file: grpo-tui stop (the app on {socket.gethostname()})"
            else:  # one word there, never a shell's or an option: the run stopped gracefully, nothing ran
                assert reason.startswith("stop file: grpo-tui stop (x'; touch pwned #]52;c;Zm9v --force $(id) yyy")
                assert not has_control(reason) and "\u202e" not in reason and len(reason) < 120
                assert not list(remote.runs.rglob("pwned"))
    finally:
        close_all()


def test_the_monitors_copy_of_a_remote_run_holds_its_events_and_the_hosts_gpus(both):
    local, host = both
    watched = WatchedRun.open(host, host.find(RUN_ID), timeout=60)
    try:
        original = local.mirror(local.find(RUN_ID)).folder
        assert watched.host == "gpubox" and watched.folder.path != original.path
        copy_events = (watched.folder.path / "events.jsonl").read_bytes()
        assert copy_events and copy_events == (original.path / "events.jsonl").read_bytes()
        assert watched.gpus() == [] or all(isinstance(g, GPU) for g in watched.gpus())
    finally:
        watched.close()
    here = WatchedRun.open(local, local.find(RUN_ID))
    assert here.folder.path == original.path and here.host == "local"


def test_logs_read_the_same_through_either_executor(both):
    local, host = both
    mine = "".join(local.logs(local.find(RUN_ID)))
    theirs = "".join(host.logs(host.find(RUN_ID)))
    assert mine and mine == theirs
    assert host.status(host.find(RUN_ID)) is local.status(local.find(RUN_ID)) is Status.STOPPED


def test_a_completed_run_on_a_host_is_extended_to_more_steps_through_its_executor(remote, monkeypatch, tiny_model):  # noqa: F811
    """What the runs screen's Extend does for a remote run: ``launch --resume RUN --max-steps N`` on the host."""
    for key, value in remote.env.items():
        monkeypatch.setenv(key, value)
    runs = remote.runs / "gpubox"
    done = cli(*pattern_args(tiny_model, runs, "--max-steps", "2", "--save-steps", "2"))
    assert done.returncode == 0, done.stdout + done.stderr
    registry = ExecutorRegistry(runs, load_hosts(remote.hosts_file))
    try:
        host = registry.get("gpubox")
        run_id = max(p.name for p in runs.iterdir() if p.is_dir())
        launched = host.resume(host.find(run_id), max_steps=4)
        assert launched.run_id == run_id
        wait_for(lambda: host.find(run_id).status is Status.COMPLETED and host.find(run_id).step == 4, timeout=240)
        assert host.find(run_id).total == 4
    finally:
        close_all()


def test_a_launch_on_a_host_sends_its_notify_urls_on_stdin_never_on_the_command_line(remote, monkeypatch, tiny_model):  # noqa: F811
    """A URL on the host's command line would show in its process list (ps) to every user there."""
    from trainer_core.contract.config.notify_urls import read_run_urls
    from trainer_core.contract.config.run_config import RunConfig

    from ..helpers import EXAMPLES

    for key, value in remote.env.items():
        monkeypatch.setenv(key, value)
    secret = "http://127.0.0.1:9/hooks/very-secret-token#json"
    runs = remote.runs / "gpubox"
    registry = ExecutorRegistry(runs, load_hosts(remote.hosts_file))
    try:
        host = registry.get("gpubox")
        commands: list[list[str]] = []
        real_run = host.conn.run

        def spying(args, **kwargs):
            commands.append(list(args))
            return real_run(args, **kwargs)

        monkeypatch.setattr(host.conn, "run", spying)
        config = RunConfig(
            model=tiny_model,
            rl_env_module=str(EXAMPLES / "pattern_env.py"),
            rl_env_class="PatternEnv",
            rl_num_generations=2,
            batch_size=2,
            rl_max_new_tokens=4,
            max_steps=1,
            notify=[secret],
        )
        launched = host.launch(config)
        assert [c for c in commands if "launch" in c], commands
        assert not any("very-secret-token" in word for command in commands for word in command), commands
        run = host.find(launched.run_id)
        assert read_run_urls(run.path) == [secret]
        assert "very-secret-token" not in (run.path / "config.yaml").read_text()
        wait_for(lambda: host.find(launched.run_id).status.is_final, timeout=240)
    finally:
        close_all()
