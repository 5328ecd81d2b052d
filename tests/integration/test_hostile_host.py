"""A compromised host: the real sshd of ``tests/sshd.py``, with a ``command:`` (``tests/standins/hostile_host.py``)
that answers ``runs --json`` and ``events --mirror`` with traversal ids, absolute paths, bad offsets and wrong
types. Nothing may be written outside the host's cache folder, its good row is still listed, the other
hosts go on, and the CLI says what was wrong in one line naming the host."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

from grpo_tui.executors.hosts import HostError, load_hosts
from grpo_tui.executors.mirror import Mirror
from grpo_tui.executors.ssh import RemoteError, SshExecutor, close_all, connection
from tests.remote_hosts import RemoteHosts, remote, sshd  # noqa: F401
from tests.run_fixtures import make_finished_run
from tests.standins.hostile_host import SCENARIOS
from trainer_core.contract.run.folder import FORMAT_VERSION

STANDIN = Path(__file__).resolve().parents[1] / "standins" / "hostile_host.py"
GOOD_ON_GPUBOX = "20260101-000000-000-aaaaaa"


def hostile_hosts(remote: RemoteHosts) -> tuple[Path, dict[str, str]]:  # noqa: F811
    """A hosts file with ``hostile`` (the stand-in) next to the real ``gpubox`` (with one finished run); the env."""
    hosts = yaml.safe_load(remote.hosts_file.read_text())
    hosts["hostile"] = {
        **hosts["gpubox"],
        "command": f"{sys.executable} {STANDIN}",
        "runs_dir": str(remote.dir / "hostile-runs"),
        "env": {"HOSTILE_SENTINEL": str(remote.dir / "sentinel"), "HOSTILE_RUN_FORMAT": str(FORMAT_VERSION)},
    }
    path = remote.dir / "hostile-hosts.yaml"
    path.write_text(yaml.safe_dump(hosts))
    if not (remote.runs / "gpubox" / GOOD_ON_GPUBOX).exists():
        make_finished_run(remote.runs / "gpubox", run_id=GOOD_ON_GPUBOX, steps=3)
    return path, {**remote.env, "GRPO_TUI_HOSTS": str(path)}


def tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def written_outside_the_cache(root: Path, before: set[str]) -> list[str]:
    """What appeared under ``root`` that is not in a host's cache folder or the SSH control folder."""
    allowed = ("cache/grpo-tui/hosts/hostile", "cache/grpo-tui/hosts/gpubox", "ssh")
    return sorted(
        p
        for p in tree(root) - before
        if not any(p == a or p.startswith(a + "/") for a in allowed)
        and p not in ("cache", "cache/grpo-tui", "cache/grpo-tui/hosts")
    )


@pytest.fixture(scope="module")
def hostile(remote):  # noqa: F811
    path, env = hostile_hosts(remote)
    yield remote, path, env
    close_all()


def test_the_cli_lists_the_good_rows_and_names_the_host_once(hostile):
    remote_hosts, _, env = hostile
    before = tree(remote_hosts.dir)
    listed = remote_hosts.cli("runs", "--host", "hostile", "--host", "gpubox", "--json", env=env)
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)
    assert sorted((r["host"], r["run_id"]) for r in rows) == [("gpubox", GOOD_ON_GPUBOX), ("hostile", "good-run")]
    lines = listed.stderr.splitlines()
    assert len(lines) == 1, listed.stderr
    assert lines[0].startswith(
        "error: host hostile: left out 8 of the 9 runs it listed, their rows are not valid: "
        "row 1: run_id: expected a run id"
    )
    assert "'../../../../x'" in lines[0]

    table = remote_hosts.cli("runs", "--host", "hostile", env=env)
    assert table.returncode == 0 and table.stderr.count("\n") == 1 and "good-run" in table.stdout
    assert "x" not in {line.split()[1] for line in table.stdout.splitlines()[1:]}

    assert written_outside_the_cache(remote_hosts.dir, before) == []
    assert not (remote_hosts.dir / "x").exists() and not (remote_hosts.dir / "sentinel").exists()


def test_watching_a_hostile_run_is_one_error_and_writes_nothing_outside_the_cache(hostile):
    remote_hosts, _, env = hostile
    before = tree(remote_hosts.dir)
    watched = remote_hosts.cli("watch", "good-run", "--host", "hostile", "--once", env=env)
    assert watched.returncode == 2 and watched.stderr.count("\n") == 1, watched.stderr
    assert watched.stderr.startswith(
        "error: host hostile: run good-run: its events stream sent a bad line (file: "
        "expected one of config.yaml, state.json"
    )
    escaped = remote_hosts.cli("watch", "../../../../x", "--host", "hostile", "--once", env=env)
    assert escaped.returncode == 2 and escaped.stderr.count("\n") == 1, escaped.stderr
    assert escaped.stderr.startswith("error: host hostile: left out 1 of the 1 runs it listed")
    assert written_outside_the_cache(remote_hosts.dir, before) == []
    assert not (remote_hosts.dir / "x").exists() and not (remote_hosts.dir / "cache" / "x").exists()
    copy = remote_hosts.dir / "cache" / "grpo-tui" / "hosts" / "hostile" / "good-run"
    assert sorted(p.name for p in copy.iterdir()) == [".remote.json"]  # nothing after the bad line was applied
    assert "its events stream sent a bad line" in json.loads((copy / ".remote.json").read_text())["error"]


def test_every_hostile_stream_line_through_ssh_stops_that_copy_alone(hostile, monkeypatch):
    remote_hosts, path, env = hostile
    for key in ("XDG_CACHE_HOME", "GRPO_TUI_SSH_DIR"):
        monkeypatch.setenv(key, env[key])
    hosts = load_hosts(path)
    conn = connection(hosts["hostile"])
    before = tree(remote_hosts.dir)
    for name in sorted(SCENARIOS):
        copy = Mirror(conn, name, f"{remote_hosts.dir}/hostile-runs/{name}")
        with pytest.raises(HostError, match=f"^host hostile: run {name}: its events stream sent a bad line"):
            copy.sync()
        assert copy.rejected.is_set() and not copy.ended.is_set()
    followed = Mirror(conn, "negative-offset", f"{remote_hosts.dir}/hostile-runs/negative-offset").start()
    followed._thread.join(30)
    assert not followed._thread.is_alive() and followed.reconnects == 0  # not asked again: the host lies
    assert "offset: expected a whole number" in followed.error and followed.ready.is_set()
    assert written_outside_the_cache(remote_hosts.dir, before) == []
    assert not (remote_hosts.dir / "x").exists() and not (remote_hosts.dir / "cache" / "x").exists()

    ex = SshExecutor(hosts["hostile"])
    listed = ex.list_runs()
    assert [r.run_id for r in listed.runs] == ["good-run"] and listed.error.startswith("host hostile: left out 8")
    with pytest.raises(RemoteError, match=r"^host hostile: `grpo-tui stop --json` sent a bad reply: left: expected"):
        ex.stop(listed.runs[0])
    gpubox = SshExecutor(hosts["gpubox"]).list_runs()  # the other host goes on
    assert [r.run_id for r in gpubox.runs] == [GOOD_ON_GPUBOX] and gpubox.error is None
