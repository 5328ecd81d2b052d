"""kl_explosion's growth branch has an absolute floor: a small KL that grows fast is a calm run, not an explosion.

The calm sequence is the one a healthy run recorded (constant lr 5e-5, KL coefficient 0.1, the tiny model): KL rose
from 0.03 to 0.29 in three steps, which the growth branch once called an explosion.
"""

from __future__ import annotations

from trainer_core.contract.health.monitor import Thresholds, replay
from trainer_core.contract.run.events import Metrics

CALM = dict(reward=0.3, reward_std=0.3, frac_reward_zero_std=0.1, entropy=6.0, loss=0.01, grad_norm=1.0)


def kl_warnings(kl: list[float], **thresholds) -> list[tuple[str, int]]:
    events = [Metrics(step=i + 1, values={**CALM, "kl": v}) for i, v in enumerate(kl)]
    return [(str(w.severity), w.step) for w in replay(events, Thresholds(**thresholds)) if w.rule == "kl_explosion"]


def test_a_small_kl_that_grows_ten_times_is_quiet():
    kl = [0.03] * 10 + [0.06, 0.14, 0.29, 0.2, 0.15, 0.1]
    assert kl_warnings(kl) == []


def test_the_same_growth_fires_once_it_reaches_the_floor():
    kl = [0.03] * 10 + [0.06, 0.14, 0.29, 0.2, 0.15, 0.1]
    assert kl_warnings(kl, kl_growth_floor=0.25) == [("warn", 13)]


def test_growth_past_the_floor_warns_before_kl_high():
    kl = [0.03] * 10 + [0.08, 0.2, 0.42]
    assert kl_warnings(kl) == [("warn", 13)]


def test_a_real_explosion_still_goes_critical():
    kl = [0.03] * 10 + [0.1, 0.3, 0.8, 1.5, 3.0, 6.0]
    fired = kl_warnings(kl)
    assert fired[0] == ("warn", 13) and ("critical", 15) in fired
