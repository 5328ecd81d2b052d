"""Hosts: the hosts file, the remote command line (run through a real sh), ssh's errors, --host forwarding."""

from __future__ import annotations

import subprocess

import pytest

from grpo_tui.cli.remote import config_on_stdin, sub_argv
from grpo_tui.executors.hosts import Host, HostError, find_host, load_hosts
from grpo_tui.executors.ssh_connection import Connection, connect_error, control_dir, remote_command

HOSTILE = ["a b", "x; touch {m}", "$(touch {m})", "`touch {m}`", "it's", '"q"', "$HOME", "*", "-rf", "\\", "", "ü \t"]


def write(tmp_path, text: str):
    path = tmp_path / "hosts.yaml"
    path.write_text(text)
    path.chmod(0o600)  # a hosts file others can write is refused
    return path


def test_a_hosts_file_gives_every_setting_and_defaults(tmp_path):
    hosts = load_hosts(
        write(
            tmp_path,
            """
gpubox:
  ssh: alice@gpu-7.lab
  ssh_config: ~/.ssh/lab.conf
  ssh_options: [Port=2222]
  command: /opt/venv/bin/grpo-tui
  runs_dir: /data/runs
  env: {HF_HOME: /data/hf, N: 3}
plain:
""",
        )
    )
    assert list(hosts) == ["gpubox", "plain"]
    box = hosts["gpubox"]
    assert box.destination == "alice@gpu-7.lab" and box.ssh_config.endswith("/.ssh/lab.conf")
    assert (
        box.ssh_options == ("Port=2222",) and box.command == "/opt/venv/bin/grpo-tui" and box.runs_dir == "/data/runs"
    )
    assert box.env == (("HF_HOME", "/data/hf"), ("N", "3"))
    assert hosts["plain"] == Host("plain", ssh="plain")
    assert find_host("bob@elsewhere", hosts) == Host("bob@elsewhere")
    assert load_hosts(tmp_path / "missing.yaml") == {}


@pytest.mark.parametrize(
    "text, message",
    [
        ("box: {ssh_opts: [Port=1]}", "unknown key 'ssh_opts'; did you mean 'ssh_options'?"),
        ("local: {}", "'local' names this machine"),
        ("box: {env: {'1BAD': x}}", "'1BAD' is not a variable name"),
        ("box: {ssh: -oProxyCommand=x}", "starts with '-'"),
        ("box: {ssh_options: Port=1}", "ssh_options must be a list of 'Option=value' strings"),
        ("[a, b]", "must be a mapping of host names"),
        ("box: {command: ''}", "command must be a non-empty string"),
    ],
)
def test_a_bad_hosts_file_is_named_with_the_fix(tmp_path, text, message):
    with pytest.raises(HostError, match=None) as caught:
        load_hosts(write(tmp_path, text))
    assert message in str(caught.value) and str(tmp_path / "hosts.yaml") in str(caught.value)


def test_every_word_reaches_the_remote_program_as_data(tmp_path):
    marker = tmp_path / "owned"
    words = [w.format(m=marker) for w in HOSTILE]
    host = Host("box", command="printf '%s\\0'", env=(("V", f"$(touch {marker})"),))
    line = remote_command(host, words)
    out = subprocess.run(["sh", "-c", line], capture_output=True, cwd=tmp_path, check=True).stdout
    assert out.decode().split("\0")[:-1] == words
    shown = subprocess.run(
        ["sh", "-c", remote_command(Host("box", command="printenv", env=host.env), ["V"])],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    ).stdout
    assert shown == f"$(touch {marker})\n"
    assert not marker.exists() and list(tmp_path.iterdir()) == []


def test_a_command_in_the_home_folder_stays_expandable():
    assert remote_command(Host("box", command="~/venv/bin/grpo-tui"), ["runs"]) == '"$HOME"/venv/bin/grpo-tui runs'
    assert remote_command(Host("box", command="/opt/py -m grpo_tui"), ["a b"]) == "/opt/py -m grpo_tui 'a b'"


def test_the_ssh_argv_refuses_unknown_keys_before_the_users_options(monkeypatch):
    import shutil
    import tempfile
    from pathlib import Path

    tmp_path = Path(tempfile.mkdtemp(prefix="gu", dir="/tmp"))  # a socket path must stay short
    monkeypatch.setenv("GRPO_TUI_SSH_DIR", str(tmp_path / "ssh"))
    conn = Connection(Host("box", ssh="alice@gpu", ssh_config="/cfg", ssh_options=("StrictHostKeyChecking=no",)))
    argv = conn.command_argv(["runs", "--json"])
    assert argv[:3] == ["ssh", "-F", "/cfg"]
    options = [argv[i + 1] for i, word in enumerate(argv) if word == "-o"]
    assert options.index("StrictHostKeyChecking=yes") < options.index("StrictHostKeyChecking=no")  # ssh keeps the first
    assert argv[-3:] == ["--", "alice@gpu", "grpo-tui runs --json"]
    assert (tmp_path / "ssh").stat().st_mode & 0o777 == 0o700
    (tmp_path / "ssh").chmod(0o755)
    try:
        with pytest.raises(HostError, match="must be yours and private"):
            control_dir()
        monkeypatch.setenv("GRPO_TUI_SSH_DIR", "/tmp/" + "x" * 60)
        with pytest.raises(HostError, match="too long for SSH control sockets"):
            control_dir()
    finally:
        shutil.rmtree(tmp_path)


@pytest.mark.parametrize(
    "stderr, expected",
    [
        (
            "No ED25519 host key is known for [127.0.0.1]:2222 and you have requested strict checking.\r\n"
            "Host key verification failed.\r\n",
            "its SSH host key is not in your known_hosts",
        ),
        ("@@@ WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED! @@@\nHost key verification failed.\n", "has CHANGED"),
        ("alice@gpu: Permission denied (publickey).\n", "SSH authentication failed"),
        ("ssh: connect to host gpu port 22: Connection refused\n", "unreachable"),
        ("ssh: Could not resolve hostname gpu: Name or service not known\n", "unreachable"),
        ("something new\n", "ssh failed (something new)"),
    ],
)
def test_ssh_failures_become_one_line_naming_the_host_and_the_fix(stderr, expected):
    error = str(connect_error(Connection(Host("box", ssh="alice@gpu")), stderr))
    assert error.startswith("host box: ") and expected in error and "\n" not in error
    assert "ssh alice@gpu" in error


def test_forwarding_keeps_every_word_but_the_host(tmp_path):
    argv = [
        "--runs-dir",
        "r",
        "launch",
        "--host",
        "gpubox",
        "--project-name",
        "a; b",
        "--host=x",
        "--all-hosts",
        "--lr",
        "0.1",
    ]
    assert sub_argv(argv, "launch") == ["--project-name", "a; b", "--lr", "0.1"]
    config = tmp_path / "c.yaml"
    config.write_bytes(b"model: here\n")
    words, data = config_on_stdin(["--config", str(config), "--max-steps", "3"])
    assert words == ["--config", "-", "--max-steps", "3"] and data == b"model: here\n"
    words, data = config_on_stdin([f"--config={config}"])
    assert words == ["--config", "-"] and data == b"model: here\n"
