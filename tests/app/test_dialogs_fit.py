"""Dialogs fit their text at 80x24: every word of the question and its detail is on screen, wrapped inside the
dialog, none cut at its border (issue 44, point 3: "It continues from its newest compl")."""

from __future__ import annotations

import re

from textual.widgets import Input

from grpo_tui.app import make_app
from grpo_tui.screens.confirm import ConfirmScreen
from grpo_tui.screens.extend import ExtendScreen
from grpo_tui.screens.runs import RunsScreen

from ..run_fixtures import make_finished_run
from .conftest import screen_text, wait_until

SMALL = (80, 24)
BORDERS = re.compile(r"[█▀▄▌▐▊▎▔▁]")  # what dialogs and inputs draw around their text


def shown_words(app) -> str:
    """The screen's text with borders removed and whitespace collapsed: a wrapped sentence reads as one line."""
    return " ".join(BORDERS.sub(" ", screen_text(app)).split())


def assert_whole(app, *texts: str) -> None:
    shown = shown_words(app)
    for text in texts:
        assert " ".join(text.split()) in shown, f"not all of {text!r} is on screen:\n{screen_text(app)}"


async def test_the_extend_dialog_shows_its_whole_text_at_80x24(tmp_path):
    make_finished_run(tmp_path / "runs", steps=6)
    app = make_app(tmp_path / "runs")
    async with app.run_test(size=SMALL) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, RunsScreen) and len(app.screen.runs) == 1)
        await pilot.press("u")  # on a completed run: extend it
        await wait_until(pilot, lambda: isinstance(app.screen, ExtendScreen))
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, ExtendScreen)
        assert_whole(
            app,
            f"Resume run {dialog.run_id} and train it further?",
            "It is completed at step 6 of 6. It continues from its newest complete checkpoint in the same folder, "
            "up to the new max steps:",
            "Resume (enter)",
            "Cancel (esc)",
        )
        dialog.query_one("#max-steps", Input).value = "a whole lot of steps"
        await pilot.press("enter")
        await pilot.pause()
        assert_whole(app, dialog.problem, "Resume (enter)")


async def test_a_confirmation_shows_its_whole_text_at_80x24(tmp_path):
    question = "Launch without a reward inspection?"
    detail = (
        "A reward that scores the wrong thing trains the wrong thing cleanly. The run's config will record that the "
        "inspection was skipped."
    )
    app = make_app(tmp_path / "runs")
    async with app.run_test(size=SMALL) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, RunsScreen))
        app.push_screen(ConfirmScreen(question, detail))
        await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
        await pilot.pause()
        assert_whole(app, question, detail, "Yes (y)", "No (n)")
