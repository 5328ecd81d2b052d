"""An environment whose data is as hostile as scraped text gets: chat-template brackets and escape sequences.

Its prompts use the Llama 2 / Mistral template (``<s>[INST] … [/INST]``) with Rich markup, an OSC 52 sequence
(which would set the terminal's clipboard), an OSC 8 hyperlink, a screen clear and a C1 CSI; each scoring
prints a line of the same to stdout, which lands in trainer.log. The reward is the pattern task's, so the
run trains like any other.
"""

from __future__ import annotations

from datasets import Dataset

HOSTILE = (
    "<s>[INST] [bold]Hello[/] [link=https://evil.example]click[/link] "
    "\x1b]52;c;T1dORUQ=\x07 \x1b[2J\x1b[H \x1b]8;;https://evil.example\x1b\\here\x1b]8;;\x1b\\ \x9b31m [/INST]"
)


class HostileEnv:
    def __init__(self, num_prompts: int = 16):
        self.num_prompts = num_prompts

    def build_dataset(self, tokenizer=None) -> Dataset:
        prompts = [f"{HOSTILE} write a {i}:" for i in range(self.num_prompts)]
        return Dataset.from_dict({"prompt": prompts})

    def score_episode(self, model, tokenizer, completion: str, **row) -> float:
        print(f"env log {HOSTILE} end of line", flush=True)
        visible = "".join(completion.split())
        return visible.count("a") / len(visible) if visible else 0.0
