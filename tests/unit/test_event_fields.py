"""A known event whose fields have the wrong kind is rejected where it is read, with the reason, and never
reaches a reader as a step that is not a number (a warning with ``"step": "x"`` used to end the app, a
metrics line with it the monitor's stream)."""

from __future__ import annotations

import json

import pytest

from grpo_tui.services.stream.folded import ChartRequest, RunStream
from trainer_core.contract.run.event_log import EventWriter, read_events
from trainer_core.contract.run.events import HealthWarning, Metrics, UnknownEvent, decode
from trainer_core.contract.run.folder import RunFolder


@pytest.mark.parametrize(
    ("record", "why"),
    [
        ({"type": "metrics", "step": "x", "reward": 0.5}, "step must be a whole number"),
        ({"type": "metrics", "step": True, "reward": 0.5}, "step must be a whole number"),
        ({"type": "metrics", "step": -3, "reward": 0.5}, "step must be a whole number"),
        ({"type": "warning", "rule": "kl_explosion", "step": "x", "message": "m"}, "step must be a whole number"),
        ({"type": "warning", "rule": "kl_explosion", "step": 3, "message": ["m"]}, "message must be text"),
        ({"type": "warning", "rule": "kl_explosion", "step": 3, "evidence": "e"}, "evidence must be an object"),
        ({"type": "error", "message": 5}, "message must be text"),
        ({"type": "run_finished", "status": "completed", "step": 2.5}, "step must be a whole number"),
        ({"type": "eval", "step": 3, "metrics": ["m"]}, "metrics must be an object"),
        ({"type": "eval", "step": 3, "metrics": {}, "task_metrics": "answer"}, "task_metrics must be a list"),
        ({"type": "eval", "step": 3, "metrics": {}, "task_metrics": [1]}, "task_metrics must be a list"),
        ({"type": "eval", "step": 3, "metrics": {}, "prompts": "8"}, "prompts must be a whole number"),
    ],
)
def test_a_field_of_the_wrong_kind_is_rejected_with_its_reason(record, why):
    event = decode(dict(record))
    assert isinstance(event, UnknownEvent) and event.type == record["type"]
    assert event.rejected is not None and why in event.rejected
    assert event.to_record()["step" if "step" in record else "type"] == record["step" if "step" in record else "type"]


def test_well_formed_events_still_decode_and_a_null_step_is_no_step():
    assert decode({"type": "metrics", "step": 4, "reward": 0.5}) == Metrics(step=4, values={"reward": 0.5})
    warning = decode({"type": "warning", "rule": "kl_explosion", "step": None, "message": "m", "advice": "a"})
    assert isinstance(warning, HealthWarning) and warning.step == 0


def test_the_stream_shows_every_valid_step_around_bad_ones(tmp_path):
    folder = RunFolder.create(tmp_path)
    with EventWriter(folder.events_file) as events:
        events.emit(Metrics(step=1, values={"reward": 0.125}))
    with open(folder.events_file, "a") as fh:
        fh.write(json.dumps({"type": "metrics", "step": "x", "reward": 9.0}) + "\n")
        fh.write(json.dumps({"type": "warning", "rule": "kl_explosion", "step": "x", "message": "m"}) + "\n")
    with EventWriter(folder.events_file) as events:
        events.emit(Metrics(step=2, values={"reward": 0.25}))
    stream = RunStream(folder)
    stream.poll()
    reward = stream.charts(ChartRequest(1, (("reward", 80),)))["reward"]
    assert (
        reward.steps == (1, 2) and reward.last_value == 0.25 and max(reward.highs) == 0.25
    )  # eighths: exact in float32
    assert stream.view().step == 2 and stream.rejected == 2
    assert [type(e).__name__ for e in read_events(folder.events_file)] == [
        "Metrics",
        "UnknownEvent",
        "UnknownEvent",
        "Metrics",
    ]


def test_a_samples_line_that_is_not_an_object_is_no_sample(tmp_path):
    from grpo_tui.services.stream.reader import read_samples

    folder = RunFolder.create(tmp_path)
    good = {"step": 3, "reward": 0.5, "prompt": "p", "completion": "c"}
    folder.samples_file.write_text("\n".join(["1", "[]", '"x"', "null", json.dumps(good), "{torn"]) + "\n")
    assert read_samples(folder) == [good]
