"""The monitor's Remedies panel: one line per rewind of the run (from which step to which checkpoint, by whom, the
rule, the reason, the settings changed), shown only when the run has rewinds, every word from the run literal."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from grpo_tui.app import make_app
from grpo_tui.safe_text import has_control
from grpo_tui.widgets.remedies_panel import RemediesPanel, remedies_text, rewind_line
from trainer_core.contract.run.event_log import dumps
from trainer_core.contract.run.events import Rewound

from ..rewind_fixtures import LEG2_START, make_rewound_run
from ..run_fixtures import make_finished_run
from .conftest import screen_text, wait_until

HOSTILE_REASON = "[red]spike[/] \x1b]52;c;aGk=\x07 at 25"


def user_rewind() -> Rewound:
    """The user took the run back again after the rule did, lowering the learning rate and adding a threshold."""
    return Rewound(
        time=LEG2_START + 100.0,
        from_step=28,
        to_step=10,
        checkpoint="checkpoint-10",
        reason=HOSTILE_REASON,
        by="user",
        changes={"lr": {"from": 1e-5, "to": 5e-6}, "health.kl_high": {"from": None, "to": 2}},
        revision=2,
    )


async def test_the_panel_lists_a_rule_rewind_and_a_user_one_literally(tmp_path):
    run = make_rewound_run(tmp_path / "runs")
    with (run / "events.jsonl").open("a") as events:
        events.write(dumps(user_rewind().to_record()) + "\n")
    app = make_app(tmp_path / "runs", theme="grpo-dark", start="watch", watch=run)
    async with app.run_test(size=(140, 40)) as pilot:
        panel = app.screen.query_one("#remedies", RemediesPanel)
        await wait_until(pilot, lambda: len(panel.rewinds) == 2 and panel.display, what="both rewinds in the panel")
        lines = [
            "↺ Remedies: went back 2 times",
            'step 38 → checkpoint-20 (step 20) · by rule kl_explosion · "kl_explosion at step 34" · '
            "rl_kl_coef 0.1 → 0.2",
            'step 28 → checkpoint-10 (step 10) · by user · "[red]spike[/] ␛]52;c;aGk=␇ at 25" · '
            "lr 1e-5 → 5e-6, health.kl_high unset → 2",
        ]
        assert panel.text.splitlines() == lines
        await pilot.pause()
        shown = screen_text(app)
        for line in lines:
            assert line in shown, shown
        assert "\x1b" not in shown and "\x07" not in shown


@given(
    reason=st.text(max_size=40),
    rule=st.none() | st.text(max_size=20),
    checkpoint=st.text(max_size=20),
    setting=st.text(min_size=1, max_size=20),
    old=st.none() | st.floats(allow_nan=False) | st.text(max_size=10),
)
def test_any_text_of_a_rewind_is_one_line_without_control_characters(reason, rule, checkpoint, setting, old):
    rewind = Rewound(
        from_step=9,
        to_step=3,
        checkpoint=checkpoint,
        reason=reason,
        by="rule",
        rule=rule,
        changes={setting: {"from": old, "to": 1}},
    )
    line = rewind_line(rewind)
    assert "\n" not in line and not has_control(line)
    assert remedies_text([rewind]).plain.splitlines()[1] == line  # a Text: shown as it is, never parsed as markup


async def test_a_run_without_rewinds_shows_no_panel(tmp_path):
    run = make_finished_run(tmp_path / "runs", steps=12)
    app = make_app(tmp_path / "runs", theme="grpo-dark", start="watch", watch=run)
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.screen
        await wait_until(pilot, lambda: screen.status == "completed" and screen.loaded, what="the run read")
        panel = screen.query_one("#remedies", RemediesPanel)
        assert not panel.display and panel.text == "" and "Remedies" not in screen_text(app)
