"""The Completions tab of an agentic run: each row says how many turns and tool calls its episode took, and
Enter opens the episode's transcript, tool calls and results set apart, failures marked, hostile text inert."""

from __future__ import annotations

import json

from grpo_tui.app import make_app
from grpo_tui.screens.monitor import MonitorScreen
from grpo_tui.screens.transcript import TranscriptScreen
from grpo_tui.widgets.completions import CompletionsTable
from tests.hostile_text import assert_no_control
from trainer_core.contract.run.event_log import EventWriter
from trainer_core.contract.run.events import Metrics

from .conftest import screen_text, wait_until
from .test_monitor_stream import live_run

EPISODE = {
    "step": 3,
    "prompt": "Book a room in Paris for 2 nights",
    "completion": "I booked room 12.",
    "reward": 1.0,
    "turns": [
        {
            "role": "assistant",
            "content": "",
            "tool": "check_availability",
            "arguments": {"city": "paris"},
            "result": "room 12 free",
        },
        {
            "role": "assistant",
            "content": "",
            "tool": "book_room",
            "arguments": {"room": 99},
            "error": "ValueError: no room 99\x1b[2J",
        },
        {"role": "assistant", "content": "", "tool": "book_room", "arguments": {"room": 12}, "result": "booked 12"},
        {"role": "assistant", "content": "I booked room 12. [bold]not markup[/bold]"},
    ],
}
PLAIN = {"step": 3, "prompt": "Say a", "completion": "a a a", "reward": 0.5}


async def test_enter_on_an_episode_opens_its_transcript(tmp_path):
    folder = live_run(tmp_path / "runs")
    with EventWriter(folder.events_file) as events:
        events.emit(Metrics(step=3, values={"reward": 0.7, "tools/call_frequency": 3.0}))
    folder.samples_file.write_text(json.dumps(PLAIN) + "\n" + json.dumps(EPISODE) + "\n")
    app = make_app(tmp_path / "runs", watch=folder.path, start="watch", hosts={})
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.screen
        assert isinstance(screen, MonitorScreen)
        table = screen.query_one(CompletionsTable)
        await pilot.press("3")
        await wait_until(pilot, lambda: table.row_count == 2)
        assert "4 turns, 3 tool calls, 1 failed" in screen_text(screen)
        table.focus()
        table.move_cursor(row=0)  # newest first: the episode
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, TranscriptScreen))
        shown = screen_text(app.screen)
        assert "→ call check_availability" in shown and '{"city": "paris"}' in shown
        assert "← room 12 free" in shown and "✗ failed: ValueError: no room 99" in shown
        assert "[bold]not markup[/bold]" in shown
        assert_no_control(shown, "the transcript")
        await pilot.press("escape")
        await wait_until(pilot, lambda: isinstance(app.screen, MonitorScreen))
        table.move_cursor(row=1)
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, TranscriptScreen))
        plain = screen_text(app.screen)
        assert "completion" in plain and "a a a" in plain and "→ call" not in plain
