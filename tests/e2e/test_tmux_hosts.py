"""End to end in a real terminal: the app lists the runs of two SSH hosts (a real sshd) and opens one."""

from __future__ import annotations

import json
import os
import shutil
import sys

import pytest

from tools.tmux import Tmux

from ..helpers import ROOT, scaled, wait_for
from ..remote_hosts import remote, sshd  # noqa: F401

pytestmark = [pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed"), pytest.mark.slow]


def test_two_hosts_runs_in_one_list_and_a_remote_monitor(remote, tiny_model, tmp_path):  # noqa: F811
    import yaml

    first = remote.launch(tiny_model, "--max-steps", "8", "--project-name", "on-gpubox")
    second = remote.launch(tiny_model, "--max-steps", "8", "--project-name", "on-otherbox", host="otherbox")
    for run_id, host in ((first, "gpubox"), (second, "otherbox")):
        state = remote.run_folder(run_id, host) / "state.json"
        wait_for(lambda state=state: json.loads(state.read_text()).get("status") == "completed", 120)
    hosts = yaml.safe_load(remote.hosts_file.read_text())
    hosts_file = tmp_path / "hosts.yaml"
    hosts_file.write_text(yaml.safe_dump({name: hosts[name] for name in ("gpubox", "otherbox", "deadbox")}))
    hosts_file.chmod(0o600)

    term = Tmux(
        env={**os.environ, **remote.env, "GRPO_TUI_HOSTS": str(hosts_file)}, width=140, height=36, session="hosts"
    )
    try:
        term.start([sys.executable, "-m", "grpo_tui", "--runs-dir", str(tmp_path / "local")], cwd=ROOT)
        screen = term.wait_screen(
            lambda s: (
                first in s
                and second in s
                and "deadbox ✗" in s
                and "unreachable" in s
                and "gpubox ✓ 1 runs" in s
                and "otherbox ✓ 1 runs" in s
            ),
            timeout=scaled(90),
            what="both hosts' runs, their counts and the dead host's error",
        )
        rows = {run_id: line for run_id in (first, second) for line in screen.splitlines() if run_id in line}
        assert "gpubox" in rows[first] and "otherbox" in rows[second]
        # the newest run (otherbox's) is the first row; the cursor stays on the run it was on as rows arrive
        term.send("Up")
        term.send("Up")
        term.send("Enter")
        # the monitor of a host's run opens once its config and state came over ssh, each through a grpo-tui started
        # there: on a loaded machine that alone takes minutes
        shown = term.wait_screen(
            lambda s: "step 8/8" in s and "COMPLETED" in s, timeout=scaled(240), what="the remote monitor"
        )
        assert second in shown
        term.send("q")
        assert term.wait_exit() == 0
    finally:
        term.kill()


def test_watch_host_opens_the_remote_runs_monitor_in_a_terminal(remote, tiny_model):  # noqa: F811
    run_id = remote.launch(tiny_model, "--max-steps", "6", "--project-name", "watched-from-afar")
    state = remote.run_folder(run_id) / "state.json"
    wait_for(lambda: json.loads(state.read_text()).get("status") == "completed", 120)
    term = Tmux(env={**os.environ, **remote.env}, width=120, height=32, session="watch-host")
    try:
        term.start([sys.executable, "-m", "grpo_tui", "watch", run_id, "--host", "gpubox"], cwd=ROOT)
        shown = term.wait_screen(
            lambda s: "step 6/6" in s and "COMPLETED" in s, timeout=scaled(240), what="the remote monitor"
        )
        assert run_id in shown
        term.send("q")
        assert term.wait_exit() == 0
    finally:
        term.kill()
