"""The new-run form is reached by name, and its focused field is plain to see in every theme.

``ctrl+g`` opens a palette of the form's fields: typing part of a name and Enter focuses that field, its group
opened, however far down it is (``lr`` took some twenty-five Tabs). The focused field's name is drawn in the
theme's primary colour, reversed, in each of the shipped themes.
"""

from __future__ import annotations

import pytest
from textual.color import Color
from textual.command import CommandList
from textual.widgets import Collapsible, Label

from grpo_tui.app import make_app
from grpo_tui.screens.launch import LaunchScreen
from grpo_tui.widgets.config_form import ConfigForm

from .conftest import wait_until

SIZE = (120, 40)
THEMES = ("grpo-dark", "grpo-light", "grpo-high-contrast")


def luminance(c: Color) -> float:
    """WCAG's relative luminance."""

    def channel(v: int) -> float:
        x = v / 255
        return x / 12.92 if x <= 0.03928 else ((x + 0.055) / 1.055) ** 2.4

    return 0.2126 * channel(c.r) + 0.7152 * channel(c.g) + 0.0722 * channel(c.b)


def contrast(a: Color, b: Color) -> float:
    """WCAG's contrast ratio of two colours."""
    la, lb = sorted((luminance(a), luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


@pytest.mark.parametrize("field", ["lr", "save_steps", "rl_env_config"])
async def test_ctrl_g_then_a_few_letters_focuses_a_field_far_down_the_form(tmp_path, field):
    app = make_app(tmp_path / "runs", start="launch")
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, LaunchScreen), what="the form")
        form = app.screen.query_one(ConfigForm)
        await pilot.press("ctrl+g")
        await wait_until(pilot, lambda: app.screen.__class__.__name__ == "CommandPalette", what="the field palette")
        await pilot.press(*field)
        hits = app.screen.query_one(CommandList)
        await wait_until(pilot, lambda: hits.option_count > 0 and hits.highlighted is not None, what="the hits")
        await pilot.press("enter")
        target = form.widget_for(field)
        await wait_until(pilot, lambda: app.focused is target, what=f"{field} focused")
        assert not any(a.collapsed for a in target.ancestors if isinstance(a, Collapsible))
        label = form.query_one(f"#name-{field}", Label)
        await wait_until(pilot, lambda: label.has_class("-focused"), what="the focused field's name marked")


@pytest.mark.parametrize("theme", THEMES)
async def test_the_focused_fields_name_stands_out_in_every_theme(tmp_path, theme):
    app = make_app(tmp_path / "runs", theme=theme, start="launch")
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, LaunchScreen), what="the form")
        form = app.screen.query_one(ConfigForm)
        form.focus_field("lr")
        focused = form.query_one("#name-lr", Label)
        await wait_until(pilot, lambda: focused.has_class("-focused"), what="lr's name marked")
        other = form.query_one("#name-model", Label)
        assert not other.has_class("-focused")
        on, off = focused.styles, other.styles
        assert contrast(on.background, on.color) >= 3.0, (theme, on.background, on.color)
        assert contrast(on.background, app.screen.styles.background) >= 1.8, theme  # the mark is not the page
        assert on.background != off.background
        form.focus_field("model")
        await wait_until(pilot, lambda: other.has_class("-focused") and not focused.has_class("-focused"))
