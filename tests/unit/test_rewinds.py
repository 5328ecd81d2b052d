"""A rewind is part of the run format: the ``rewound`` event, the rule (run/rewinds.py) and the folder's format version.

The rule: after a ``rewound`` event with ``to_step`` S, every metrics, warning, eval and checkpoint line of the legs
before it with a step past S is abandoned; the live history is the earlier legs up to S, then the new leg.
"""

from __future__ import annotations

import json

from tests.rewind_fixtures import FIRST_LEG, LAST_STEP, TO_STEP, WARNING_STEP, events, rewind, samples
from trainer_core.contract.run.event_log import dumps
from trainer_core.contract.run.events import (
    Checkpoint,
    Eval,
    HealthWarning,
    Metrics,
    RewindBy,
    Rewound,
    RunStarted,
    UnknownEvent,
    decode,
)
from trainer_core.contract.run.folder import FORMAT_VERSION
from trainer_core.contract.run.rewinds import (
    abandoned_checkpoints,
    abandoned_mask,
    live,
    live_samples,
    rewind_count,
    split,
)


def _round_trip(event):
    return decode(json.loads(dumps(event.to_record())))


def test_a_rewound_event_has_the_documented_shape_and_reads_back():
    record = json.loads(dumps(rewind().to_record()))
    assert record == {
        "type": "rewound",
        "time": record["time"],
        "from_step": FIRST_LEG,
        "to_step": TO_STEP,
        "checkpoint": "checkpoint-20",
        "reason": "kl_explosion at step 34",
        "by": "rule",
        "rule": "kl_explosion",
        "changes": {"rl_kl_coef": {"from": 0.1, "to": 0.2}},
        "revision": 1,
    }
    back = _round_trip(rewind())
    assert isinstance(back, Rewound) and back == rewind() and back.by is RewindBy.RULE
    base = Rewound(time=1.0, from_step=5, to_step=0, checkpoint="base", by="user")
    record = base.to_record()
    assert record["reason"] is None and record["rule"] is None and record["changes"] == {} and record["revision"] == 0
    assert _round_trip(base) == base


def test_a_rewound_line_with_a_field_of_the_wrong_kind_is_refused_naming_it():
    for field, value in (("to_step", "x"), ("from_step", -1), ("changes", {"lr": 5e-6}), ("revision", 1.5)):
        event = decode({**rewind().to_record(), field: value})
        assert isinstance(event, UnknownEvent) and event.rejected and event.rejected.startswith(field), event
    nowhere = {k: v for k, v in rewind().to_record().items() if k != "to_step"}
    refused = decode(nowhere)
    assert isinstance(refused, UnknownEvent) and "to_step is required" in (refused.rejected or "")
    newer = decode({**rewind().to_record(), "by": "scheduler", "note": "kept"})  # a newer writer's: kept as it is
    assert isinstance(newer, Rewound) and newer.by == "scheduler" and newer.extra == {"note": "kept"}


def test_run_started_carries_revision_and_changes_only_when_a_leg_changed_settings():
    plain = RunStarted(time=1.0, run_id="r").to_record()
    assert "revision" not in plain and "changes" not in plain
    changed = RunStarted(time=1.0, run_id="r", revision=2, changes={"lr": {"from": 1e-5, "to": 5e-6}})
    assert changed.to_record()["revision"] == 2 and _round_trip(changed) == changed
    assert isinstance(decode({**plain, "changes": {"lr": 1}}), UnknownEvent)


def test_the_format_version_is_3():
    assert FORMAT_VERSION == 3


def test_the_live_history_is_the_earlier_legs_up_to_the_step_then_the_new_leg():
    history = split(events())
    steps = [e.step for e in history.live if isinstance(e, Metrics)]
    assert steps == list(range(1, LAST_STEP + 1))
    gone = history.abandoned
    assert [e.step for e in gone if isinstance(e, Metrics)] == list(range(TO_STEP + 1, FIRST_LEG + 1))
    assert [e.step for e in gone if isinstance(e, HealthWarning)] == [WARNING_STEP]
    assert [e.step for e in gone if isinstance(e, (Eval, Checkpoint))] == [30, 30]
    assert history.rewinds == (rewind(),) and rewind_count(events()) == 1
    assert abandoned_checkpoints(events()) == {30}
    # the new leg's values, not the first leg's, at the steps both logged
    live_rewards = {e.step: e.get("reward") for e in history.live if isinstance(e, Metrics)}
    assert live_rewards[LAST_STEP] > 5 and live_rewards[TO_STEP] < 2


def test_a_second_rewind_further_back_abandons_both_legs_past_its_step():
    def metrics(*steps):
        return [Metrics(time=float(s), step=s, values={"reward": float(s)}) for s in steps]

    stream = [
        *metrics(1, 2, 3, 4, 5, 6),
        Rewound(from_step=6, to_step=4),
        *metrics(5, 6, 7),
        Checkpoint(step=7, path="checkpoints/checkpoint-7"),
        Rewound(from_step=7, to_step=2),
        *metrics(3, 4),
    ]
    assert [e.step for e in live(stream) if isinstance(e, Metrics)] == [1, 2, 3, 4]
    mask = abandoned_mask(stream)
    assert sum(mask) == 4 + 4  # 3-6 of the first leg, 5-7 and the checkpoint of the second
    assert abandoned_checkpoints(stream) == {7}
    resaved = [*stream, Checkpoint(step=7, path="checkpoints/checkpoint-7")]  # a later leg saves step 7 again
    assert abandoned_checkpoints(resaved) == set()


def test_a_folder_without_rewinds_is_all_live():
    stream = [RunStarted(run_id="r"), *(Metrics(step=s) for s in (1, 2, 3)), RunStarted(run_id="r"), Metrics(step=2)]
    assert live(stream) == stream  # a version-2 resume from an older checkpoint: read as before
    assert not any(abandoned_mask(stream))
    final = Checkpoint(step=3, path="final", final=True)
    assert live([final, Rewound(from_step=3, to_step=1)])[0] == final  # a leg's end is never abandoned


def test_samples_of_the_abandoned_steps_are_told_apart_by_their_steps():
    kept = live_samples(samples(), [rewind()])
    assert [(s["step"], s["completion"][:5]) for s in kept][::2] == [
        *((step, "leg 1") for step in range(15, TO_STEP + 1)),
        *((step, "leg 2") for step in range(TO_STEP + 1, LAST_STEP + 1)),
    ]
    assert live_samples(samples(), []) == samples()  # no rewind (a version-2 folder): every sample
    tail = samples()[-30:]  # the end of the file only, as the monitor reads it
    assert [s["step"] for s in live_samples(tail, [rewind()])][:2] == [TO_STEP + 1] * 2
    odd = [{"step": "x"}, 7, {"step": 3}, {"step": 2}]
    assert live_samples(odd, [Rewound(from_step=3, to_step=1)]) == [{"step": "x"}, 7, {"step": 2}]
