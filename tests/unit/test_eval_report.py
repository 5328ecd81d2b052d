"""``grpo-tui eval``'s table shows names from the run and the user's code as text: no control character reaches
the terminal."""

from __future__ import annotations

from trainer_core.commands.evaluate import render


def test_control_characters_in_names_are_shown_escaped():
    hostile = "ok\x1b]52;c;aGk=\x07\x1b[2J"
    model = {"label": f"checkpoint-3{hostile}", "metrics": {hostile: {"mean": 0.5, "pass@4": 1.0}}}
    report = {
        "run_id": "r1",
        "prompts": 2,
        "generations": 4,
        "metric": hostile,
        "models": [model],
        "ranking": [model["label"]],
        "changed": [],
    }
    text = render(report)
    assert "\x1b" not in text and "\x07" not in text
    assert "\\x1b]52;c;aGk=" in text and "0.500" in text
