"""The example environments build real datasets and score real completions on the tiny model."""

from __future__ import annotations

import importlib.util
import json
import operator
import re
from pathlib import Path

import pytest
import torch

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def load_example(stem: str):
    spec = importlib.util.spec_from_file_location(f"example_{stem}", EXAMPLES / f"{stem}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


hotel = load_example("hotel_env")
math_env = load_example("math_env")
pattern = load_example("pattern_env")
constant = load_example("constant_env")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from trainer_core.commands.tiny_model import build_tiny_model

    path = build_tiny_model(tmp_path_factory.mktemp("tiny"))
    return AutoModelForCausalLM.from_pretrained(path), AutoTokenizer.from_pretrained(path)


def row_columns(row: dict) -> dict:
    return {k: v for k, v in row.items() if k != "prompt"}


def tool_call(name: str, **arguments) -> str:
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


class CountingGenerate:
    """Wraps ``model.generate`` to count calls, keep the prompts seen and optionally script the reply."""

    def __init__(self, model, tokenizer, reply: str | None = None):
        self.model, self.tokenizer, self.reply = model, tokenizer, reply
        self.original = model.generate
        self.prompts: list[str] = []

    def __call__(self, *args, **kwargs):
        input_ids = kwargs["input_ids"]
        self.prompts.append(self.tokenizer.decode(input_ids[0]))
        if self.reply is None:
            return self.original(*args, **kwargs)
        new = self.tokenizer(self.reply, return_tensors="pt", add_special_tokens=False)["input_ids"]
        return torch.cat([input_ids, new.to(input_ids.device)], dim=1)

    def __enter__(self):
        self.model.generate = self
        return self

    def __exit__(self, *exc):
        del self.model.generate


def sample_completions(model, tokenizer, prompts: list, tools=None, n: int = 4) -> list[str]:
    texts = [
        p
        if isinstance(p, str)
        else tokenizer.apply_chat_template(p, tools=tools, add_generation_prompt=True, tokenize=False)
        for p in prompts[:n]
    ]
    batch = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)
    torch.manual_seed(0)
    with torch.no_grad():
        out = model.generate(**batch, max_new_tokens=16, do_sample=True, pad_token_id=tokenizer.pad_token_id)
    return tokenizer.batch_decode(out[:, batch["input_ids"].shape[1] :], skip_special_tokens=True)


# --- hotel -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_hotel_dataset_columns_and_constraints(tiny, difficulty):
    _, tokenizer = tiny
    env = hotel.HotelEnv(difficulty=difficulty)
    ds = env.build_dataset(tokenizer)
    assert len(ds) == 64
    assert {"prompt", "city", "nights", "guests", "max_price", "hotel_ids"} <= set(ds.column_names)
    assert ds.to_list() == hotel.HotelEnv(difficulty=difficulty).build_dataset(tokenizer).to_list()
    for row in ds:
        assert [m["role"] for m in row["prompt"]] == ["system", "user"]
        assert "<tool_call>" in row["prompt"][0]["content"]
        assert row["city"] in row["prompt"][1]["content"]
        assert row["hotel_ids"], "every request must be satisfiable"
        found = {h["hotel_id"]: h for h in env.search_hotels(row["city"], row["max_price"])}
        for hotel_id in row["hotel_ids"]:
            assert found[hotel_id]["max_guests"] >= row["guests"]
        if difficulty == "easy":
            assert row["guests"] == 1 and row["max_price"] is None
        if difficulty == "hard":
            assert str(row["max_price"]) in row["prompt"][1]["content"]


def test_hotel_rejects_unknown_difficulty():
    with pytest.raises(ValueError):
        hotel.HotelEnv(difficulty="impossible")


def test_hotel_tools_render_into_prompt(tiny):
    _, tokenizer = tiny
    env = hotel.HotelEnv()
    tools = env.get_tools()
    assert {t["function"]["name"] for t in tools} == {"search_hotels", "book_hotel"}
    prompt = env.build_dataset(tokenizer)[0]["prompt"]
    text = tokenizer.apply_chat_template(prompt, tools=tools, add_generation_prompt=True, tokenize=False)
    assert '"name": "search_hotels"' in text and '"name": "book_hotel"' in text
    assert text.endswith("<|assistant|>\n")


def test_hotel_scores_hand_written_completions(tiny):
    model, tokenizer = tiny
    env = hotel.HotelEnv(difficulty="hard", max_turns=1)
    row = row_columns(env.build_dataset(tokenizer)[0])
    search = tool_call("search_hotels", city=row["city"], max_price=row["max_price"])
    book = tool_call("book_hotel", hotel_id=row["hotel_ids"][0], nights=row["nights"], guests=row["guests"])
    wrong_city = next(c for c in hotel.CITIES if c != row["city"])
    wrong_hotel = next(h["hotel_id"] for h in hotel.CATALOG if h["city"] == wrong_city)

    def score(completion):
        return env.score_episode(model, tokenizer, completion, **row)

    assert score(search + book) == 1.0
    assert score(search) == pytest.approx(0.3)
    wrong = tool_call("search_hotels", city=wrong_city) + tool_call(
        "book_hotel", hotel_id=wrong_hotel, nights=row["nights"], guests=row["guests"]
    )
    assert score(wrong) == pytest.approx(0.4)
    assert score(search + tool_call("book_hotel", hotel_id=row["hotel_ids"][0], nights=99)) < 1.0
    assert score("I would love to help you book a hotel!") == 0.0
    assert score('<tool_call>{"name": "search_hotels", "arguments": {"city": ') == 0.0
    assert score(tool_call("order_pizza", size="large")) == 0.0


def test_hotel_search_only_runs_a_second_turn_with_the_model(tiny):
    model, tokenizer = tiny
    env = hotel.HotelEnv(max_turns=2)
    row = row_columns(env.build_dataset(tokenizer)[0])
    search = tool_call("search_hotels", city=row["city"])

    with CountingGenerate(model, tokenizer) as gen:
        score = env.score_episode(model, tokenizer, search, **row)
    assert len(gen.prompts) == 1
    assert 0.3 <= score <= 1.0
    assert row["hotel_ids"][0] in gen.prompts[0], "the search result must reach the model"
    assert gen.prompts[0].rstrip().endswith("<|assistant|>")

    with CountingGenerate(model, tokenizer) as gen:
        hotel.HotelEnv(max_turns=1).score_episode(model, tokenizer, search, **row)
    assert gen.prompts == []


def test_hotel_booking_in_a_later_turn_earns_full_credit(tiny):
    model, tokenizer = tiny
    env = hotel.HotelEnv(max_turns=3, difficulty="medium")
    row = row_columns(env.build_dataset(tokenizer)[0])
    search = tool_call("search_hotels", city=row["city"])
    book = tool_call("book_hotel", hotel_id=row["hotel_ids"][0], nights=row["nights"], guests=row["guests"])

    with CountingGenerate(model, tokenizer, reply=book) as gen:
        assert env.score_episode(model, tokenizer, search, **row) == 1.0
    assert len(gen.prompts) == 1

    with CountingGenerate(model, tokenizer, reply=search) as gen:
        assert env.score_episode(model, tokenizer, search, **row) == pytest.approx(0.3)
    assert len(gen.prompts) == 2, "a model that keeps searching stops at max_turns"


# --- math ------------------------------------------------------------------------------------------------


def test_math_dataset_and_scores(tiny):
    model, tokenizer = tiny
    env = math_env.MathEnv(num_problems=16, max_operand=9, seed=3)
    ds = env.build_dataset(tokenizer)
    assert len(ds) == 16 and set(ds.column_names) == {"prompt", "answer"}
    row = ds[0]
    assert "<answer>" in row["prompt"][0]["content"]
    a, op, b = re.search(r"(\d+) ([-+*]) (\d+)", row["prompt"][1]["content"]).groups()
    assert row["answer"] == str({"+": operator.add, "-": operator.sub, "*": operator.mul}[op](int(a), int(b)))

    right = f"<reasoning>work</reasoning><answer>{row['answer']}</answer>"
    assert env.score_episode(model, tokenizer, right, answer=row["answer"]) == 1.0
    assert env.score_episode(model, tokenizer, f"<answer> {row['answer']} </answer>", answer=row["answer"]) == 1.0
    assert env.score_episode(model, tokenizer, "<answer>-12345</answer>", answer=row["answer"]) == 0.0
    assert env.score_episode(model, tokenizer, row["answer"], answer=row["answer"]) == 0.0


def test_math_format_reward_handles_text_and_chat_completions():
    env = math_env.MathEnv()
    [(fn, weight)] = env.get_reward_functions()
    assert fn is math_env.format_reward and fn.__name__ == "format_reward" and weight == 0.5
    texts = ["<reasoning>2 and 3</reasoning>\n<answer>5</answer>", "so <answer>5</answer> I think", "5", ""]
    expected = [1.0, 0.5, 0.0, 0.0]
    assert fn(["q"] * 4, texts, answer=["5"] * 4, trainer_state=None) == expected
    chat = [[{"role": "assistant", "content": t}] for t in texts]
    assert fn([[{"role": "user", "content": "q"}]] * 4, chat, answer=["5"] * 4) == expected


# --- pattern and constant --------------------------------------------------------------------------------


def test_pattern_dataset_and_dense_scores(tiny):
    model, tokenizer = tiny
    env = pattern.PatternEnv(target="b", num_prompts=16)
    ds = env.build_dataset(tokenizer)
    assert len(ds) == 16 and set(ds.column_names) == {"prompt", "target"}
    assert all(isinstance(p, str) and "b" in p for p in ds["prompt"])
    assert len(set(ds["prompt"])) > 4
    assert set(ds["target"]) == {"b"}

    def score(text):
        return env.score_episode(model, tokenizer, text, target="b")

    assert score("b b bbb\n b") == 1.0
    assert score("bbxx") == 0.5
    assert score("xyz") == 0.0
    assert score("") == 0.0 and score("   \n") == 0.0


def test_constant_env_shares_pattern_prompts(tiny):
    model, tokenizer = tiny
    env = constant.ConstantEnv(value=0.25)
    ds = env.build_dataset(tokenizer)
    assert ds["prompt"] == pattern.PatternEnv().build_dataset(tokenizer)["prompt"]
    assert {env.score_episode(model, tokenizer, c, target="a") for c in ["aaaa", "", "xyz"]} == {0.25}
    with pytest.raises(ValueError):
        constant.ConstantEnv(value=1.5)


# --- live generations ------------------------------------------------------------------------------------


def test_scores_of_tiny_model_generations_stay_in_unit_interval(tiny):
    model, tokenizer = tiny
    envs = [
        hotel.HotelEnv(max_turns=2, difficulty="hard"),
        math_env.MathEnv(),
        pattern.PatternEnv(),
        constant.ConstantEnv(),
    ]
    for env in envs:
        ds = env.build_dataset(tokenizer)
        tools = env.get_tools() if hasattr(env, "get_tools") else None
        completions = sample_completions(model, tokenizer, ds["prompt"], tools=tools)
        for i, completion in enumerate(completions):
            score = env.score_episode(model, tokenizer, completion, **row_columns(ds[i]))
            assert isinstance(score, float) and 0.0 <= score <= 1.0
        for fn, _ in getattr(env, "get_reward_functions", lambda: [])():
            assert all(0.0 <= r <= 1.0 for r in fn(ds["prompt"][:4], completions))
