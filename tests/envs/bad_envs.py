"""Environments that misbehave on purpose, one way each, for the failure tests."""

from datasets import Dataset


def rows(n=16):
    return [{"prompt": f"Write the letter a {i}:", "city": ["paris", "rome"][i % 2], "idx": i} for i in range(n)]


class Good:
    def __init__(self, seen_file=None):
        self.seen_file = seen_file

    def build_dataset(self, tokenizer):
        return Dataset.from_list(rows())

    def score_episode(self, model, tokenizer, completion, city, idx):
        if self.seen_file:
            with open(self.seen_file, "a") as fh:
                fh.write(f"{city},{idx},{type(model).__name__},{type(completion).__name__}\n")
        return 0.5 if city == "paris" else min(1.0, len(completion) / 100)


class Raises(Good):
    def score_episode(self, model, tokenizer, completion, city, idx):
        if idx >= 0:
            return lookup_price(city)
        return 0.0


def lookup_price(city):
    prices = {"london": 100}
    return prices[city] / 100


class ReturnsNaN(Good):
    def score_episode(self, model, tokenizer, completion, city, idx):
        return float("nan")


class OutOfRange(Good):
    def score_episode(self, model, tokenizer, completion, city, idx):
        return 1.5


class NoPrompt(Good):
    def build_dataset(self, tokenizer):
        return Dataset.from_list([{"question": "hi", "answer": "1"}])


class NotADataset(Good):
    def build_dataset(self, tokenizer):
        return [{"prompt": "hi"}]


class MissingScore:
    def build_dataset(self, tokenizer):
        return Dataset.from_list(rows())


class WithTools(Good):
    def get_tools(self):
        return [
            {
                "type": "function",
                "function": {
                    "name": "search_hotels",
                    "description": "Find hotels",
                    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
                },
            }
        ]

    def build_dataset(self, tokenizer):
        return Dataset.from_list(
            [{"prompt": [{"role": "user", "content": f"book paris {i}"}], "city": "paris", "idx": i} for i in range(8)]
        )


class RaisesLater(Good):
    """Scores normally for a few steps, then fails: the steps logged before must stay."""

    calls = 0

    def score_episode(self, model, tokenizer, completion, city, idx):
        RaisesLater.calls += 1
        if RaisesLater.calls > 8 * 3:
            raise RuntimeError(f"reward service unavailable for {city}")
        return 0.25


class OutOfMemory(Good):
    """Fails the way a reward model on a full GPU does."""

    def score_episode(self, model, tokenizer, completion, city, idx):
        import torch

        raise torch.OutOfMemoryError(
            "CUDA out of memory. Tried to allocate 20.00 GiB (GPU 0; 79.11 GiB total capacity)"
        )
