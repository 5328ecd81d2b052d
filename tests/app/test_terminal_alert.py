"""A critical warning that arrives while the monitor is open rings the terminal (bell, or an OSC 9 desktop
notification), once, with the warning's text cleaned; a warn-level one and the warnings already on disk
when the monitor opens do not."""

from __future__ import annotations

import pytest

from grpo_tui.app import make_app
from grpo_tui.screens.monitor import MonitorScreen
from grpo_tui.terminal_alert import alert_sequence
from tests.hostile_text import assert_no_control
from trainer_core.contract.run.event_log import EventWriter
from trainer_core.contract.run.events import HealthWarning, Metrics

from .conftest import wait_until
from .test_monitor_stream import live_run

HOSTILE = "KL \x1b]52;c;cGF3bmVk\x07 exploded\x1b[2J; \x9b31m"


def test_the_sequences_carry_only_clean_text():
    assert alert_sequence("bell", HOSTILE) == "\x07"
    assert alert_sequence("off", HOSTILE) == ""
    osc = alert_sequence("desktop", HOSTILE)
    assert osc.startswith("\x1b]9;") and osc.endswith("\x07")
    assert_no_control(osc[4:-1], "the OSC 9 text")  # nothing inside can end the OSC early or start another sequence
    assert "exploded" in osc and ";" not in osc[4:-1]
    wrapped = alert_sequence("desktop", HOSTILE, in_tmux=True)
    assert wrapped.startswith("\x1bPtmux;\x1b\x1b]9;") and wrapped.endswith("\x1b\\")
    assert len(alert_sequence("desktop", "x" * 5000)) < 260


def test_a_bad_alert_setting_is_refused_by_name(monkeypatch, tmp_path):
    monkeypatch.setenv("GRPO_TUI_ALERT", "siren")
    with pytest.raises(ValueError, match=r"\$GRPO_TUI_ALERT: alert must be one of bell, desktop, off; got 'siren'"):
        make_app(tmp_path / "runs", hosts={})


@pytest.mark.parametrize("mode", ["bell", "desktop"])
async def test_a_critical_warning_arriving_rings_once(mode, tmp_path, monkeypatch):
    monkeypatch.delenv("TMUX", raising=False)
    folder = live_run(tmp_path / "runs")
    with EventWriter(folder.events_file) as events:
        events.emit(Metrics(step=1, values={"reward": 0.1}))
        events.emit(HealthWarning("non_finite", "critical", 1, "old news", "advice"))  # on disk before opening
    app = make_app(tmp_path / "runs", watch=folder.path, start="watch", hosts={}, alert=mode)
    async with app.run_test(size=(120, 40)) as pilot:
        assert app._driver is not None
        written: list[str] = []
        real_write = app._driver.write
        app._driver.write = lambda data: (written.append(data), real_write(data))[1]  # a spy on the real driver
        screen = app.screen
        assert isinstance(screen, MonitorScreen)
        await wait_until(pilot, lambda: screen.loaded)
        with EventWriter(folder.events_file) as events:
            events.emit(Metrics(step=2, values={"reward": 0.2}))
            events.emit(HealthWarning("kl_explosion", "warn", 2, "KL is climbing", "advice"))
            events.emit(HealthWarning("kl_explosion", "critical", 3, HOSTILE, "advice"))
        await wait_until(pilot, lambda: any("\x07" in w for w in written))
        await pilot.pause(0.3)
        alerts = [w for w in written if w.endswith("\x07")]
        assert len(alerts) == 1, alerts
        if mode == "bell":
            assert alerts == ["\x07"]
        else:
            assert alerts[0].startswith("\x1b]9;grpo-tui: kl_explosion at step 3: KL")
            assert_no_control(alerts[0][4:-1], "the OSC 9 text")
