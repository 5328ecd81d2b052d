"""The settings Compare lists: only keys whose values differ, mappings by their keys, noisy keys left out."""

from __future__ import annotations

from grpo_tui.services.catalog.config_diff import MISSING, differing


def test_only_differing_keys_are_listed_as_text():
    a = {"lr": 1e-5, "seed": 1, "grpo_args": {"max_grad_norm": 0.5, "x": 1}, "inspection": "i1", "name": "a"}
    b = {"lr": 1e-4, "seed": 1, "grpo_args": {"max_grad_norm": 1.0, "x": 1}, "inspection": "i2", "name": "b"}
    c = {"lr": 1e-5, "seed": 1, "grpo_args": {"x": 1}, "inspection": None, "name": "c", "notes": "[red]x"}
    assert differing([a, b, c]) == [
        ("lr", ("1e-05", "0.0001", "1e-05")),
        ("grpo_args.max_grad_norm", ("0.5", "1.0", MISSING)),
    ]
    assert differing([a]) == [] and differing([a, dict(a)]) == []
    assert differing([{"stop_on": "[b]\nkl"}, {"stop_on": ""}]) == [("stop_on", ("[b] kl", ""))]
