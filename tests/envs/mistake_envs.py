"""Environments with the mistakes a new user makes, one each (tests/integration/test_user_mistakes.py)."""

from datasets import Dataset


def rows(n=8):
    return [{"prompt": f"Write the letter a {i}:", "idx": i} for i in range(n)]


class Fine:
    def __init__(self, target: str = "a"):
        self.target = target

    def build_dataset(self, tokenizer):
        return Dataset.from_list(rows())

    def score_episode(self, model, tokenizer, completion, **row):
        return 0.5


class NoPrompt(Fine):
    def build_dataset(self, tokenizer):
        return Dataset.from_list([{"question": "hi", "answer": "1"}] * 4)


class AgentWithoutReset:
    def build_dataset(self, tokenizer):
        return Dataset.from_list(rows(4))

    def get_reward(self):
        return 0.0

    def get_tool_functions(self):
        return [self.ping]

    def ping(self, host: str) -> str:
        """Ping a host.

        Args:
            host: The host name.
        """
        return host


class ToolWithoutDocstring:  # not a subclass of the one above: inspect.getdoc would find its ping's docstring
    def build_dataset(self, tokenizer):
        return Dataset.from_list(rows(4))

    def reset(self, **row):
        return None

    def get_reward(self):
        return 0.0

    def get_tool_functions(self):
        return [self.ping]

    def ping(self, host: str) -> str:
        return host


class DatasetRaises(Fine):
    def build_dataset(self, tokenizer):
        return load_rows("rows.jsonl")


def load_rows(name):
    raise FileNotFoundError(f"no such file: {name}")
