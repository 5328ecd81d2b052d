"""`grpo-tui serve` in a real browser: headless Chromium (Debian's ``chromium``, driven by playwright) opens
the printed URL (the runs dir's path full of shell syntax), starts the app from textual-serve's landing card, sees the runs list, opens a run that is
training, sees its reward chart follow new steps, is refused a stop (read-only), and saves a screenshot.

xterm.js draws the terminal on a canvas, so what the app shows is read from the page's websocket frames (the
app's output, escape sequences stripped). The server runs in its own process group, stopped (TERM, then
KILL) at the end, and nothing of it may be left.
"""

from __future__ import annotations

import codecs
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from trainer_core.contract.config.ports import free_port
from trainer_core.contract.run.event_log import EventWriter
from trainer_core.contract.run.events import Metrics
from trainer_core.contract.run.folder import RunFolder

from ..app.test_monitor_stream import OPEN_AT, live_run, values_at  # a run that reads as running: this process
from ..helpers import scaled, wait_for

CHROMIUM = Path("/usr/bin/chromium")
pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason="Debian's chromium is not installed at /usr/bin/chromium: `apt-get install chromium` (./dev test does)",
)

ESCAPES = re.compile(r"\x1b(?:\[[0-9;?<>=]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[()][0-9A-Za-z]|[=>78cM])")
HOSTILE = "runs $(touch pwned) `touch pwned2` 'q' \"d\" ;x& |y"  # one word for the app, however sh reads it
WAIT = 90.0  # a loaded machine starts an app slowly


def reward_title(step: int) -> str:
    """The reward chart's title once ``step`` is the last step shown."""
    return re.escape(f"reward  {values_at(step)['reward']:.4f}")


def write_steps(folder: RunFolder, first: int, last: int) -> None:
    with EventWriter(folder.events_file) as events:
        for step in range(first, last + 1):
            events.emit(Metrics(step=step, values=values_at(step)))


class Frames:
    """What the app wrote to the page, as text without escape sequences."""

    def __init__(self):
        self.parts: list[str] = []
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")

    def add(self, payload: str | bytes) -> None:
        self.parts.append(self.decoder.decode(payload) if isinstance(payload, bytes) else payload)

    def text(self) -> str:
        return ESCAPES.sub("", "".join(self.parts))


def shown(page, frames: Frames, pattern: str, what: str) -> re.Match:
    """Wait until the page shows ``pattern``; the page's own timer lets time pass, so its frames keep coming."""
    return wait_for(
        lambda: re.search(pattern, frames.text()),
        WAIT,
        0.2,
        what=f"the page to show {what}",
        show=lambda: f"it showed: {frames.text()[-600:]!r}",
        pause=lambda seconds: page.wait_for_timeout(seconds * 1000),
    )


def start_server(runs_dir: Path, log: Path) -> tuple[subprocess.Popen, str]:
    with log.open("wb") as out:
        server = subprocess.Popen(
            [sys.executable, "-m", "grpo_tui", "serve", "--port", str(free_port()), "--runs-dir", str(runs_dir)],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=log.parent,
            start_new_session=True,  # its own group: the apps it starts are stopped with it
        )

    def printed() -> re.Match | None:
        assert server.poll() is None, f"grpo-tui serve exited {server.returncode}: {log.read_text()}"
        return re.search(r"^open (http://127\.0\.0\.1:\d+/\?token=\S+)$", log.read_text(), re.M)

    url = wait_for(printed, WAIT, what="grpo-tui serve to print its URL", show=log.read_text)
    return server, url.group(1)


def stop_server(server: subprocess.Popen) -> None:
    """TERM the server's group, KILL it after 15 s, then check that no process of the group is left."""
    group = server.pid
    with_term = True
    try:
        os.killpg(group, signal.SIGTERM)
        server.wait(timeout=scaled(15))
    except subprocess.TimeoutExpired:
        with_term = False
        os.killpg(group, signal.SIGKILL)
        server.wait(timeout=scaled(15))
    except ProcessLookupError:
        pass

    def group_gone() -> bool:
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return True
        return False

    try:
        wait_for(group_gone, 15, what="the processes of grpo-tui serve's group to end")
    except AssertionError as exc:
        os.killpg(group, signal.SIGKILL)
        raise AssertionError("processes of grpo-tui serve's group outlived it") from exc
    assert with_term, f"grpo-tui serve did not stop within {scaled(15):.0f} s of TERM"


def test_the_served_app_shows_the_runs_list_and_a_live_monitor_in_chromium(tmp_path):
    from playwright.sync_api import sync_playwright

    runs_dir = tmp_path / HOSTILE
    folder = live_run(runs_dir)
    server, url = start_server(runs_dir, tmp_path / "serve.log")
    shot = tmp_path / "monitor.png"
    frames = Frames()
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
            try:
                page = browser.new_page(viewport={"width": 1400, "height": 900})
                page.route(re.compile(r"^https?://(?!127\.0\.0\.1[:/])"), lambda route: route.abort())  # web fonts
                page.on("websocket", lambda socket: socket.on("framereceived", frames.add))
                page.goto(url, wait_until="domcontentloaded")
                page.mouse.click(700, 450)  # the landing card: a click starts the app
                shown(page, frames, re.escape(folder.run_id), "the run in the runs list")
                shown(page, frames, r"running", "the run's status")

                page.mouse.click(100, 44)  # the run's row: the terminal takes the keys from here on
                page.keyboard.press("Enter")
                shown(page, frames, reward_title(OPEN_AT), "the reward chart of the run")
                write_steps(folder, OPEN_AT + 1, 35)  # the run goes on while the page watches
                shown(page, frames, reward_title(35), "the reward chart following new steps")

                page.keyboard.press("s")  # read-only: a stop is refused with a notice, nothing is written
                shown(page, frames, r"read-only: started with grpo-tui serve", "the read-only notice")
                assert not folder.stop_file.exists()

                page.wait_for_timeout(1000)  # the last frames reach the canvas
                page.screenshot(path=str(shot))
            finally:
                browser.close()
    finally:
        stop_server(server)
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(("pwned", "x", "y"))], "sh ran part of the path"
    assert shot.stat().st_size > 20_000, f"the screenshot {shot} is nearly empty"
    print(f"screenshot: {shot}")
