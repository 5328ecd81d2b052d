"""One sampled episode as text, turn by turn: the prompt, the model's turns, its tool calls and what each
tool answered, with failures marked; and its one-line summary for the Completions table.

An episode of an agentic run (``turns`` in samples.jsonl, see docs/run-format.md) is shown as its turns;
a plain completion as prompt and completion. Everything shown comes from the run folder, so every piece
goes through ``safe_text.literal``.
"""

from __future__ import annotations

import json

from rich.console import Group
from rich.text import Text
from textual.widgets import Static

from ..safe_text import literal

ROLE_STYLE = {"system": "dim", "user": "bold", "assistant": "bold cyan", "tool": "bold magenta"}


def _arguments(value: object) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return repr(value)


def episode_summary(sample: dict) -> str:
    """'3 turns, 2 tool calls, 1 failed' for an episode; '' for a plain completion."""
    turns = sample.get("turns")
    if not isinstance(turns, list) or not turns:
        return ""
    calls = [t for t in turns if isinstance(t, dict) and t.get("tool")]
    failed = [t for t in calls if t.get("error")]
    text = f"{len(turns)} turns, {len(calls)} tool call{'s' if len(calls) != 1 else ''}"
    return text + (f", {len(failed)} failed" if failed else "")


def transcript_text(sample: dict) -> Group:
    """The episode as styled, literal text: one block per turn, tool calls and results set apart."""
    parts: list[Text] = []
    reward = sample.get("reward")
    head = f"step {sample.get('step', '?')}  reward {reward:.3f}" if isinstance(reward, (int, float)) else "reward -"
    parts.append(literal(head, "bold"))
    rewards = sample.get("rewards")
    if isinstance(rewards, dict) and len(rewards) > 1:
        parts.append(literal("  " + ", ".join(f"{k} {v}" for k, v in rewards.items()), "dim"))
    turns = sample.get("turns")
    if not isinstance(turns, list) or not turns:
        parts += [literal("prompt", ROLE_STYLE["user"]), literal(sample.get("prompt", ""))]
        parts += [literal("completion", ROLE_STYLE["assistant"]), literal(sample.get("completion", ""))]
        return Group(*parts)
    if sample.get("prompt"):
        parts += [literal("prompt", ROLE_STYLE["user"]), literal(sample.get("prompt", ""))]
    for turn in turns:
        if not isinstance(turn, dict):
            continue
        role = str(turn.get("role", "?"))
        if turn.get("tool"):
            call = literal(f"→ call {turn['tool']}({_arguments(turn.get('arguments', ''))})", "magenta", end="")
            parts.append(call)
            if turn.get("error"):
                parts.append(literal(f"  ✗ failed: {turn['error']}", "bold red"))
            elif "result" in turn:
                parts.append(literal(f"  ← {turn['result']}", "green"))
            elif turn.get("unanswered"):
                parts.append(literal("  … no result: the episode ended here, at its turn or length limit", "dim"))
            continue
        parts.append(literal(role, ROLE_STYLE.get(role, "bold")))
        if turn.get("content"):
            parts.append(literal(turn["content"]))
    if sample.get("turns_cut"):
        parts.append(literal("… the episode was longer; samples.jsonl keeps its first part", "dim italic"))
    return Group(*parts)


class TranscriptView(Static):
    """A sample's transcript (``transcript_text``)."""

    def __init__(self, sample: dict, **kwargs):
        super().__init__(transcript_text(sample), **kwargs)
