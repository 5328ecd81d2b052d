"""An app that crashes says so: exit code 1, a notice on stderr that names a private file holding the
traceback, and none of the run's data on the terminal (Textual's own report prints every frame's locals)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap

import pytest
from textual.worker import WorkerFailed

from grpo_tui.app import GrpoApp
from tests.helpers import ROOT, cli
from tests.run_fixtures import make_finished_run

SECRET = "SECRET-SAMPLE-TEXT-4417"

# the real `grpo-tui watch RUN`, headless, with the Completions table raising on the samples it is given
DRIVER = textwrap.dedent(
    """
    import sys
    from textual.app import App
    import grpo_tui.cli.watch as watch
    from grpo_tui.cli import main
    from grpo_tui.widgets.completions import CompletionsTable

    def set_samples(self, samples):
        held = [s.get("completion") for s in samples]  # a local holding the samples' text
        raise ValueError(f"cannot show {held}")

    CompletionsTable.set_samples = set_samples
    run = App.run
    App.run = lambda self, **kw: run(self, headless=True, **kw)
    watch.interactive = lambda: True
    sys.exit(main(sys.argv[1:]))
    """
)


def test_a_crash_exits_non_zero_and_names_the_file_with_its_traceback(tmp_path):
    runs = tmp_path / "runs"
    run = make_finished_run(runs, "20260101-000000-c4a5h1", steps=12)
    with open(run / "samples.jsonl", "a") as fh:
        fh.write(json.dumps({"step": 12, "prompt": "p", "completion": SECRET, "reward": 1.0}) + "\n")
    state = tmp_path / "state"
    script = tmp_path / "driver.py"
    script.write_text(DRIVER)
    proc = subprocess.run(
        [sys.executable, str(script), "watch", run.name, "--runs-dir", str(runs)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "XDG_STATE_HOME": str(state), "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert proc.returncode == 1, (proc.returncode, proc.stderr[-2000:])
    crashes = list((state / "grpo-tui" / "crashes").glob("crash-*.txt"))
    assert len(crashes) == 1, proc.stderr[-2000:]
    report = crashes[0]
    assert str(report) in proc.stderr.replace("\n", "")
    assert "ValueError" in proc.stderr and "set_samples" in proc.stderr
    assert SECRET not in proc.stderr and SECRET not in proc.stdout
    assert "Traceback" not in proc.stderr  # no traceback on the terminal, and no locals
    text = report.read_text()
    assert text.startswith("Traceback") and "raise ValueError" in text and "set_samples" in text
    assert stat.S_IMODE(report.stat().st_mode) == 0o600
    assert stat.S_IMODE(report.parent.stat().st_mode) == 0o700


def test_a_user_error_is_still_a_message_not_a_crash_report(tmp_path):
    proc = cli("watch", "no-such-run", "--runs-dir", str(tmp_path), env={"XDG_STATE_HOME": str(tmp_path / "s")})
    assert proc.returncode == 2 and "error:" in proc.stderr and "Traceback" not in proc.stderr
    assert not (tmp_path / "s").exists()


async def test_a_worker_that_raises_is_reported_with_its_own_traceback(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))

    class Crashing(GrpoApp):
        def on_mount(self) -> None:
            super().on_mount()
            self.run_worker(self.boom, thread=True)

        def boom(self) -> None:
            text = SECRET
            raise KeyError(text)

    app = Crashing(tmp_path / "runs")
    with pytest.raises(WorkerFailed):
        async with app.run_test() as pilot:
            await pilot.pause(1.0)
    assert app.return_code == 1
    [report] = (tmp_path / "state" / "grpo-tui" / "crashes").glob("crash-*.txt")
    text = report.read_text()
    assert "in boom" in text and "raise KeyError(text)" in text and text.strip().endswith(f"KeyError: '{SECRET}'")
    notice = str(app._exit_renderables[0]) if app._exit_renderables else ""
    assert not notice or (SECRET not in notice and "KeyError" in notice and str(report) in notice)
