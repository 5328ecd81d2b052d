"""An eval's ``engine`` comes from a run folder: only a value grpo-tui writes is shown or passed on; anything else
(a hand edit, a hostile text) is no engine, and never reaches the terminal."""

from __future__ import annotations

from grpo_tui.widgets.eval_panel import _took
from trainer_core.contract.run.events import Eval
from trainer_core.contract.run.ledger import known_engine


def test_only_a_known_engine_is_shown():
    assert known_engine(Eval(step=1, seconds=2.0, engine="vllm")) == "vllm"
    assert _took(Eval(step=1, seconds=2.0, engine="vllm")) == "2.0 s · vllm"
    hostile = Eval(step=1, seconds=2.0, engine="\x1b]52;c;aGk=\x07vllm")
    assert known_engine(hostile) is None and _took(hostile) == "2.0 s"
    assert known_engine(Eval(step=1, engine=None)) is None and known_engine(None) is None
