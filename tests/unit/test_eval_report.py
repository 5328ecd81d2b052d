"""``grpo-tui eval``'s table shows names from the run and the user's code as text: no control character reaches
the terminal."""

from __future__ import annotations

from trainer_core.commands.evaluate import render


def test_control_characters_in_names_are_shown_escaped():
    hostile = "ok\x1b]52;c;aGk=\x07\x1b[2J"
    model = {
        "label": f"checkpoint-3{hostile}",
        "metrics": {hostile: {"mean": 0.5, "pass@4": 1.0}},
        "seconds": 1.25,
        "loaded_as": "merged weights",
    }
    report = {
        "run_id": "r1",
        "prompts": 2,
        "generations": 4,
        "temperature": 0.6,
        "engine": "vllm",
        "engine_dtype": "float32",
        "metric": hostile,
        "models": [model],
        "ranking": [model["label"]],
        "changed": [],
    }
    text = render(report)
    assert "\x1b" not in text and "\x07" not in text
    assert "\\x1b]52;c;aGk=" in text and "0.500" in text
    assert (
        "at temperature 0.6" in text
        and "engine: vllm (one start, float32; models loaded into it as merged weights)" in text
    )


def test_a_column_names_the_request_and_the_step_it_resolved_to():
    from trainer_core.commands.evaluate import model_label

    assert model_label("final", 120) == "final (step 120)"
    assert model_label("best", 40) == "best (step 40)"
    assert model_label("last", 120) == "last (step 120)"
    assert model_label("40", 40) == "step 40"
    assert model_label("base", 0) == "base"
    assert "(final)" not in model_label("final", 120)
