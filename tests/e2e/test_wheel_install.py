"""Installed, not checked out: the built wheel runs the demo and the app from a folder far from the checkout.

Files found relative to the source tree work in a checkout and break once installed, so this test does what a
user does: build the wheel, install it into fresh virtualenvs, and run ``grpo-tui`` from a temporary folder.
It installs both kinds:

- **The light install** (``light``): ``pip install WHEEL`` with no extra, from the package index with the
  versions of constraints.txt, as a user installs it on a laptop. Its size and install time are printed in the
  test output (captured or not) and written to ``light-install.json`` beside it. It must hold no torch,
  transformers or TRL, name the ``[train]`` extra for every command that needs the trainer, and list, watch
  and stop a run on a host (the real sshd of ``tests/sshd.py``) whose ``command:`` is this checkout's full
  install.
- **The full install** (``installed``): the wheel in a fresh venv that finds the trainer's packages in the dev
  environment (installed by ``./dev``: the CPU torch first, then ``.[train,dev]`` with constraints.txt), so
  the demo trains without installing 1.4 GB again on every run.

How the full virtualenv reuses the dev environment's dependencies without seeing the checkout:

- The wheel is built from a copy of the tree (the files git tracks or does not ignore), so the build writes no
  ``build/`` or ``*.egg-info`` into the checkout and no stale ``build/lib`` file or virtualenv can slip into
  the wheel.
- The base interpreter makes the venv without pip; ``pip --python VENV_PYTHON install --no-deps --no-index``
  installs the wheel into it while it is still empty.
- Only then a ``.pth`` file in the venv's site-packages lists the dev venv's site-packages. A path line in a
  ``.pth`` file is appended to ``sys.path`` after the venv's own site-packages, and ``.pth`` files inside an
  appended folder are not executed, so the dev venv's editable-install hook (``__editable__*.pth``, which maps
  ``grpo_tui`` and ``trainer_core`` to the checkout) never runs while torch, textual and trl are found there.

The test checks that this holds: both packages import from the venv, no editable finder is loaded, and the
demo run's provenance names the installed ``pattern_env.py``. Skipped where tmux is not installed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import pytest

from grpo_tui.theming import theme_colors
from tools.tmux import Tmux
from trainer_core.contract.config.stack import TRAINING_STACK

from ..helpers import PATTERN_FLAGS, ROOT, scaled, wait_for
from ..remote_hosts import remote, sshd  # noqa: F401

FULL_INSTALL = os.environ.get("GRPO_TUI_WHEEL_FULL_INSTALL") == "1"
"""Set: the full install is ``pip install 'WHEEL[train]'`` from the index (1.4 GB, minutes) instead of the wheel
over the dev environment's packages."""
FULL_INSTALL_TIMEOUT = 900

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(scaled(300 + (FULL_INSTALL_TIMEOUT if FULL_INSTALL else 0))),
    pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (the app is opened in tmux)"),
]

NOT_SOURCE = shutil.ignore_patterns(
    ".git", ".venv", "venv", "build", "dist", "runs", "*.egg-info", "__pycache__", ".pytest_cache"
)
STEPS = 20


class Installed:
    """A fresh venv holding only the wheel, plus a working folder, runs folder and cache outside the checkout."""

    def __init__(self, base: Path):
        self.venv = base / "venv"
        self.work = base / "work"
        self.runs = base / "runs"
        self.cache = base / "cache"
        self.record: dict = {}
        """What installing it took (the light install: its size and times)."""
        self.work.mkdir()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "GRPO_TUI_", "VIRTUAL_ENV"))}
        self.env = {
            **env,
            "PATH": f"{self.venv / 'bin'}{os.pathsep}{env.get('PATH', '')}",
            "VIRTUAL_ENV": str(self.venv),
            "XDG_CACHE_HOME": str(self.cache),
            "GRPO_TUI_RUNS_DIR": str(self.runs),
            "HF_HUB_OFFLINE": "1",
            "PYTHONUNBUFFERED": "1",
        }

    def bin(self, name: str) -> str:
        return str(self.venv / "bin" / name)

    def run(self, *argv: str, timeout: float = 120, env_extra: dict | None = None) -> subprocess.CompletedProcess:
        """``argv`` in the working folder; ``timeout`` seconds times GRPO_TUI_TEST_TIME_SCALE."""
        env = {**self.env, **(env_extra or {})}
        return subprocess.run(
            argv,
            cwd=self.work,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=scaled(timeout),
        )

    def python(self, code: str) -> subprocess.CompletedProcess:
        return self.run(self.bin("python"), "-c", code)


def checked(result: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert result.returncode == 0, f"{result.args} exited {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result


def sgr(kind: int, colour: str) -> str:
    """The 24-bit SGR parameters tmux writes for ``colour`` (#RRGGBB) as foreground (38) or background (48)."""
    return f"{kind};2;" + ";".join(str(int(colour[i : i + 2], 16)) for i in (1, 3, 5))


def dev_site_packages() -> list[str]:
    paths = sysconfig.get_paths()
    return list(dict.fromkeys(paths[k] for k in ("purelib", "platlib")))


def copy_source(target: Path) -> None:
    """The files of the tree as git sees it (tracked, and untracked ones it does not ignore): no virtualenv,
    build output or cache of the checkout, whatever its name; outside a git checkout, the tree less NOT_SOURCE."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        timeout=60,
    )
    if listed.returncode:
        shutil.copytree(ROOT, target, symlinks=True, ignore=NOT_SOURCE)
        return
    for name in filter(None, listed.stdout.decode().split("\0")):
        path = ROOT / name
        if path.is_file() or path.is_symlink():  # a deleted file is still listed until it is committed
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target / name, follow_symlinks=False)


def base_python() -> str:
    return getattr(sys, "_base_executable", None) or sys.executable


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel, built from a copy of the tree (nothing written into the checkout); shared by both installs."""
    base = tmp_path_factory.mktemp("wheel")
    source, dist = base / "source", base / "dist"
    copy_source(source)
    checked(
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "wheel",
                "--no-deps",
                "--no-build-isolation",
                "--no-index",
                str(source),
                "-w",
                str(dist),
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
    )
    shutil.rmtree(source)
    return next(dist.glob("grpo_tui-*.whl"))


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> Installed:
    target = Installed(tmp_path_factory.mktemp("installed"))
    if FULL_INSTALL:
        install_full(target, wheel)
        return target
    checked(
        subprocess.run(
            [base_python(), "-m", "venv", "--without-pip", str(target.venv)],
            capture_output=True,
            text=True,
            timeout=120,
        )
    )
    checked(
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "--python",
                target.bin("python"),
                "install",
                "--no-deps",
                "--no-index",
                "--no-compile",
                str(wheel),
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
    )
    site = checked(target.python("import sysconfig; print(sysconfig.get_paths()['purelib'])")).stdout.strip()
    Path(site, "zz_dev_dependencies.pth").write_text("".join(f"{p}\n" for p in dev_site_packages()))
    return target


def make_venv(target: Installed) -> None:
    """A fresh venv with pip, as ``python -m venv`` makes it for a user."""
    checked(
        subprocess.run([base_python(), "-m", "venv", str(target.venv)], capture_output=True, text=True, timeout=120)
    )


def pip_install(target: Installed, *args: str, timeout: float) -> None:
    """``VENV/bin/python -m pip install -c constraints.txt ARGS`` from the package index, with pip's own cache."""
    env = {**target.env, "PIP_CACHE_DIR": os.environ.get("PIP_CACHE_DIR", str(Path.home() / ".cache" / "pip"))}
    checked(
        subprocess.run(
            [target.bin("python"), "-m", "pip", "install", "-c", str(ROOT / "constraints.txt"), *args],
            cwd=target.work,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    )


def install_full(target: Installed, wheel: Path) -> None:
    """``pip install 'WHEEL[train]'`` into a fresh venv as ./dev installs: the CPU torch first where there is no
    GPU (the version ./dev names), so the requirement does not pull the CUDA build."""
    make_venv(target)
    if shutil.which("nvidia-smi") is None:
        torch = re.search(r"pip install -q (torch==\S+)", (ROOT / "dev").read_text())
        assert torch, "./dev names no CPU torch to install first"
        pip_install(target, torch.group(1), timeout=FULL_INSTALL_TIMEOUT)
    pip_install(target, f"{wheel}[train]", timeout=FULL_INSTALL_TIMEOUT)


def test_the_packages_import_from_the_venv_not_the_checkout(installed):
    code = (
        "import json, sys, grpo_tui, trainer_core, grpo_tui.resources as r; print(json.dumps({"
        "'files': [grpo_tui.__file__, trainer_core.__file__, str(r.demo_config_file()), str(r.demo_env_file())],"
        "'editable': [m for m in sys.modules if m.startswith('__editable__')]}))"
    )
    seen = json.loads(checked(installed.python(code)).stdout)
    venv = installed.venv.resolve()
    for file in seen["files"]:
        assert Path(file).resolve().is_relative_to(venv), f"{file} is not inside the venv {venv}"
    assert seen["editable"] == []


def test_the_wheel_requires_no_plotting_widget_but_its_own(installed):
    """The charts (monitor and compare) are drawn by grpo-tui itself: a fresh install pulls no textual-plotext."""
    code = "import importlib.metadata as m, json; print(json.dumps(m.requires('grpo-tui')))"
    requires = json.loads(checked(installed.python(code)).stdout)
    assert requires and not [r for r in requires if "plotext" in r.lower()], requires


def test_help_and_the_tiny_model_command(installed):
    """The pre-trained build, into the cache the demo reads: the demo runs below find it there."""
    assert "demo" in checked(installed.run(installed.bin("grpo-tui"), "--help")).stdout
    model = installed.cache / "grpo-tui" / "tiny-model"
    # it pre-trains for a few seconds, after the imports of the training stack: beside other tests, minutes
    checked(installed.run(installed.bin("grpo-tui"), "tiny-model", str(model), timeout=240))
    config = json.loads((model / "config.json").read_text())
    assert config.get("model_type"), config
    assert list(model.glob("*.safetensors")) and list(model.glob("tokenizer*"))


@pytest.fixture(scope="module")
def demo_run(installed) -> tuple[subprocess.CompletedProcess, Path]:
    result = installed.run(installed.bin("grpo-tui"), "demo", "--max-steps", str(STEPS), timeout=240)
    runs = [p for p in installed.runs.iterdir() if p.is_dir()] if installed.runs.is_dir() else []
    return result, (runs[0] if len(runs) == 1 else installed.runs)


def test_the_demo_piped_prints_its_steps_and_completes(installed, demo_run):
    result, run = checked(demo_run[0]), demo_run[1]
    steps = [int(n) for n in re.findall(rf"^step (\d+)/{STEPS}\s+reward ", result.stdout, re.M)]
    assert steps and max(steps) == STEPS, result.stdout
    assert f"completed at step {STEPS}" in result.stdout, result.stdout
    assert "Traceback" not in result.stdout + result.stderr
    environment = json.loads((run / "provenance.json").read_text())["environment"]
    assert Path(environment["file"]).resolve().is_relative_to(installed.venv.resolve()), environment


@pytest.mark.timeout(scaled(900))  # the model's build (up to 600 s) comes first, and is not what is timed
def test_the_agent_demo_piped_completes_within_three_minutes_and_learns_the_task_it_never_trained_on(installed):
    """Its model is built first with `grpo-tui tiny-model --for-agent` into the cache the demo reads (it is not
    built again): what is timed is the demo itself. Training tool use that earns the reward and held-out bookings
    both rise at least twice (measured: 23% -> 82%, 5% -> 98%), and the run raises no warning but the one that
    says itself why (no KL term)."""
    from trainer_core.contract.health.sample_stats import TOOL_SUCCESS
    from trainer_core.contract.run.event_log import EventTail
    from trainer_core.contract.run.events import Eval, HealthWarning, Metrics

    model = installed.cache / "grpo-tui" / "tiny-model-agent"
    checked(installed.run(installed.bin("grpo-tui"), "tiny-model", str(model), "--for-agent", timeout=600))
    runs = installed.runs.parent / "agent-runs"
    started = time.monotonic()
    result = checked(installed.run(installed.bin("grpo-tui"), "demo", "--agent", "--runs-dir", str(runs), timeout=240))
    took = time.monotonic() - started
    assert took < 180, f"the agent demo took {took:.0f} s"
    assert "building the tiny demo model" not in result.stdout, result.stdout
    assert "completed at step 50" in result.stdout and "Traceback" not in result.stdout + result.stderr
    (run,) = [p for p in runs.iterdir() if p.is_dir()]
    events = EventTail(run / "events.jsonl").poll()
    success = [e.values[TOOL_SUCCESS] for e in events if isinstance(e, Metrics)]
    first, last = sum(success[:20]) / 20, sum(success[-20:]) / 20
    assert last >= 2 * first and last >= 0.5, (first, last)
    assert f"{first:.0%} in the first 20 steps, {last:.0%} in the last 20" in result.stdout
    evals = [e for e in events if isinstance(e, Eval)]
    assert [e.step for e in evals] == [0, 25, 50] and evals[0].base
    base, final = evals[0].value("booked_right"), evals[-1].value("booked_right")
    assert base is not None and final is not None and final >= 2 * base and final >= 0.5, (base, final)
    assert f"booked_right {base:.0%} at step 0, {final:.0%} at step 50" in result.stdout
    assert {e.rule for e in events if isinstance(e, HealthWarning)} <= {"kl_not_measured"}, result.stdout
    environment = json.loads((run / "provenance.json").read_text())["environment"]
    assert Path(environment["file"]).name == "hotel_agent_env.py"
    assert Path(environment["file"]).resolve().is_relative_to(installed.venv.resolve()), environment
    episodes = [json.loads(line) for line in (run / "samples.jsonl").read_text().splitlines()]
    assert any(t.get("tool") and "result" in t for e in episodes for t in e["turns"])


@pytest.fixture
def tmux(installed):
    server = Tmux(installed.env, width=120, height=40)
    try:
        yield server
    finally:
        server.kill()


def test_the_app_opens_on_the_demo_run_with_its_theme(installed, demo_run, tmux):
    run_id = demo_run[1].name
    tmux.start([installed.bin("grpo-tui"), "--runs-dir", str(installed.runs)], installed.work)

    def shown():
        text = tmux.screen()
        return (
            text
            if ("runs in" in text and run_id in text) or "Traceback" in text or tmux.exit_code() is not None
            else None
        )

    try:
        text = wait_for(shown, timeout=90, interval=0.25)
    except AssertionError:
        raise AssertionError(f"the runs screen with {run_id} did not show; the pane shows:\n{tmux.screen()}") from None
    assert "Traceback" not in text and tmux.exit_code() is None, text
    dark, coloured = theme_colors("grpo-dark"), tmux.screen(colours=True)
    assert sgr(38, dark["foreground"]) in coloured and sgr(48, dark["panel"]) in coloured, coloured

    tmux.send("q")
    code = tmux.wait_exit()
    wait_for(tmux.exited, timeout=10, interval=0.2)
    assert code == 0 and "Traceback" not in tmux.screen(), f"the app exited {code}:\n{tmux.screen()}"


# The light install: ``pip install grpo-tui`` (no extra) into a fresh virtualenv, from the package index, with the
# versions of constraints.txt. It watches, lists and stops runs on a host whose own grpo-tui has the trainer.

LIGHT_MAX_BYTES = 250 << 20  # what the app needs is ~100 MiB; torch alone is several times this
TRAINER = (*TRAINING_STACK, "tokenizers")
LIGHT_TIMEOUT = pytest.mark.timeout(scaled(600))
"""Whichever light test runs first installs it: a minute or two on a busy machine, before the test itself."""


def tree_size(path: Path) -> int:
    """Bytes of the files under ``path`` (what ``du --apparent-size`` counts), links not followed."""
    return sum(os.lstat(os.path.join(folder, name)).st_size for folder, _, names in os.walk(path) for name in names)


@pytest.fixture(scope="module")
def light(wheel, tmp_path_factory, request) -> Installed:
    """A user's light install: a venv with pip, then ``pip install WHEEL`` (pip's own cache, as a user has it).
    Its size and time go to the test output and to ``light-install.json`` beside it."""
    base = tmp_path_factory.mktemp("light")
    target = Installed(base)
    started = time.monotonic()
    make_venv(target)
    venv_made = time.monotonic()
    pip_install(target, str(wheel), timeout=300)
    done = time.monotonic()
    freeze = checked(target.run(target.bin("python"), "-m", "pip", "freeze", "--all")).stdout.split()
    record = {
        "bytes": tree_size(target.venv),
        "venv_seconds": round(venv_made - started, 1),
        "install_seconds": round(done - venv_made, 1),
        "packages": freeze,
    }
    (base / "light-install.json").write_text(json.dumps(record, indent=1))
    line = (
        f"light install (fresh venv + pip install grpo-tui): {record['bytes'] / 2**20:.0f} MiB, "
        f"{len(freeze)} packages; venv {record['venv_seconds']:.1f} s + pip install {record['install_seconds']:.1f} s "
        f"({base / 'light-install.json'})"
    )
    with request.config.pluginmanager.get_plugin("capturemanager").global_and_fixture_disabled():
        print(f"\n{line}")  # in the test output, captured or not
    target.record = record
    return target


@LIGHT_TIMEOUT
def test_the_light_install_has_no_trainer_and_says_so(light):
    code = (
        "import importlib.metadata as m, importlib.util as u, json, sys; print(json.dumps({"
        f"'found': [n for n in {TRAINER!r} if u.find_spec(n)],"
        "'dists': sorted(d.metadata['Name'].lower() for d in m.distributions())}))"
    )
    seen = json.loads(checked(light.python(code)).stdout)
    assert seen["found"] == [], seen
    assert not {"torch", "transformers", "trl"} & set(seen["dists"]), seen["dists"]
    assert light.record["bytes"] < LIGHT_MAX_BYTES, light.record
    info = json.loads(checked(light.run(light.bin("grpo-tui"), "info", "--json")).stdout)
    assert info["install"] == "light", info
    assert "install: light" in checked(light.run(light.bin("grpo-tui"), "info")).stdout


@LIGHT_TIMEOUT
def test_the_light_requirements_hold_no_trainer_package_and_the_train_extra_each(light):
    code = "import importlib.metadata as m, json; print(json.dumps(m.requires('grpo-tui')))"
    requires = json.loads(checked(light.python(code)).stdout)

    def names(extra: str | None) -> set[str]:
        marker = re.compile(rf"""extra\s*==\s*["']{extra}["']""") if extra else None
        chosen = [r for r in requires if (marker.search(r) if marker else "extra ==" not in r)]
        return {re.split(r"[^A-Za-z0-9_.-]", r, maxsplit=1)[0].lower() for r in chosen}

    assert names(None) and not names(None) & set(TRAINER), requires
    assert set(TRAINER) <= names("train"), requires


TRAINER_COMMANDS = [
    ["train", "--model", "m"],
    ["launch", "--model", "m"],
    ["inspect", "--model", "m"],
    ["merge", "latest", "--output", "merged"],
    ["eval", "latest"],
    ["tiny-model", "tm"],
    ["demo"],
]


@LIGHT_TIMEOUT
def test_a_command_that_needs_the_trainer_names_the_extra_in_one_line_and_exits_2(light):
    for argv in TRAINER_COMMANDS:
        done = light.run(light.bin("grpo-tui"), *argv)
        said = f"{argv}: exit {done.returncode}\n{done.stdout}{done.stderr}"
        assert done.returncode == 2 and done.stdout == "" and done.stderr.count("\n") == 1, said
        assert done.stderr.startswith(f"error: grpo-tui {argv[0]} needs the trainer"), said
        assert "pip install 'grpo-tui[train]'" in done.stderr, said
    assert sorted(p.name for p in light.work.iterdir()) == [] and not light.runs.exists()


@LIGHT_TIMEOUT
def test_the_light_install_sends_a_test_alert_by_mail_through_apprise(light):
    from ..integration.test_notify import SECRET, Mailbox

    mailbox = Mailbox()
    try:
        done = light.run(light.bin("grpo-tui"), "notify-test", env_extra={"GRPO_TUI_NOTIFY": mailbox.url()})
        said = done.stdout + done.stderr
        assert done.returncode == 0 and "mailto://***: delivered" in done.stdout and SECRET not in said, said
        assert len(mailbox.mails) == 1 and "Subject: grpo-tui: test alert" in mailbox.mails[0]
    finally:
        mailbox.server.stop()


@LIGHT_TIMEOUT
def test_the_light_install_lists_watches_and_stops_a_run_on_a_host(light, remote, tiny_model, tmp_path):  # noqa: F811
    """gpubox's ``command`` is the dev venv's grpo-tui (the full install); this side is the light venv, and so is
    lightbox's, which refuses to launch, naming the extra."""
    import yaml

    hosts = yaml.safe_load(remote.hosts_file.read_text())
    hosts_file = tmp_path / "hosts.yaml"
    # lightbox: the same machine through the same sshd, where grpo-tui is the light install
    lightbox = {**hosts["otherbox"], "ssh": "otherbox", "command": light.bin("grpo-tui")}
    hosts_file.write_text(yaml.safe_dump({"gpubox": hosts["gpubox"], "lightbox": lightbox}))
    hosts_file.chmod(0o600)
    env = {**light.env, **remote.env, "GRPO_TUI_HOSTS": str(hosts_file), "GRPO_TUI_RUNS_DIR": str(light.runs)}
    grpo_tui = light.bin("grpo-tui")

    def run(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [grpo_tui, *argv], cwd=light.work, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True
        )

    refused = run("launch", "--host", "lightbox", "--model", tiny_model, *PATTERN_FLAGS, "--json")
    assert refused.returncode == 2 and "pip install 'grpo-tui[train]'" in refused.stderr, refused
    assert "Traceback" not in refused.stderr and not (remote.runs / "otherbox").exists()

    launched = checked(
        run("launch", "--host", "gpubox", "--model", tiny_model, *PATTERN_FLAGS, "--max-steps", "2000", "--json")
    )
    run_id = json.loads(launched.stdout)["run_id"]
    folder = remote.run_folder(run_id)
    try:
        listed = json.loads(checked(run("runs", "--host", "gpubox", "--json")).stdout)
        assert [(r["run_id"], r["host"]) for r in listed] == [(run_id, "gpubox")], listed

        term = Tmux(env=env, width=120, height=36, session="light")
        try:
            term.start([grpo_tui], light.work)
            term.wait_screen(
                lambda s: run_id in s and "gpubox ✓ 1 runs" in s and "lightbox ✓" in s,
                timeout=90,
                what="the host's run",
            )
            term.send("Enter")
            screen = term.wait_screen(
                lambda s: "RUNNING" in s and shown_step(s) >= 2, timeout=120, what="the remote run RUNNING at step 2"
            )
            assert run_id in screen and "Traceback" not in screen
            term.send("s")
            term.wait_screen(lambda s: "Stop run" in s and "Yes (y)" in s, what="the stop confirmation")
            term.send("y")
            term.wait_screen(lambda s: "STOPPED" in s, timeout=180, what="STOPPED in the header")
            term.send("q")
            assert term.wait_exit() == 0, term.screen()
        finally:
            term.kill()
        assert json.loads((folder / "state.json").read_text())["status"] == "stopped"
        wait_for(lambda: not [p for p in remote.processes_of(folder) if p.is_running()], timeout=30)
    finally:
        run("stop", run_id, "--host", "gpubox", "--force")


def shown_step(text: str) -> int:
    return max((int(n) for n in re.findall(r"\bstep (\d+)/", text)), default=0)
