"""The agentic demo's pieces that make it learn: a model whose tool call copies a request's nights as the very
token the request has, a hotel that charges for each call it refuses, and a `tiny-model --for-agent` that says
what it cannot combine. The demo itself, trained for real, is tested in tests/e2e/test_wheel_install.py."""

from __future__ import annotations

import importlib.util

import pytest

from grpo_tui.cli.demo import demo_env_file
from trainer_core.commands.tiny_model import AGENT_REQUESTS, AGENT_ROOMS, AGENT_TOOLS, _call, build_tokenizer

from ..helpers import cli


def call_and_request_tokens(tokenizer, room: str, nights: int, template: str) -> tuple[list[str], list[str]]:
    messages = [
        {"role": "user", "content": template.format(room=room, nights=nights)},
        {"role": "assistant", "content": "", "tool_calls": [_call("book_room", room=room, nights=nights)]},
    ]
    tokens = tokenizer.convert_ids_to_tokens(
        tokenizer(tokenizer.apply_chat_template(messages, tools=AGENT_TOOLS, tokenize=False), add_special_tokens=False)[
            "input_ids"
        ]
    )
    start = len(tokens) - 1 - tokens[::-1].index("<|user|>")
    call = len(tokens) - 1 - tokens[::-1].index("<tool_call>")
    return tokens[start:call], tokens[call:]


def test_the_agent_model_calls_with_the_tokens_of_the_request():
    agent, default = build_tokenizer(for_agent=True), build_tokenizer()
    for room in AGENT_ROOMS:
        for nights in range(1, 8):
            for template in AGENT_REQUESTS:
                request, call = call_and_request_tokens(agent, room, nights, template)
                arguments = call[call.index('"room": "') + 1 :]
                assert arguments[0] == room and arguments[0] in request, (request, call)
                assert arguments[2] in request and agent.convert_tokens_to_string([arguments[2]]).strip() == str(
                    nights
                ), (request, call)
    # the default model keeps its tokens (its cached weights stay valid): there the call's nights is another token
    request, call = call_and_request_tokens(default, "city", 7, AGENT_REQUESTS[0])
    assert call[call.index('"room": "') + 3] not in request


@pytest.fixture
def hotel():
    spec = importlib.util.spec_from_file_location("demo_hotel_agent_env_unit", demo_env_file(agent=True))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    env = module.HotelAgentEnv()
    env.reset(room="city", nights=3, free=[1, 0, 2])  # cheap 1, large sold out, city 2
    return env


def test_a_refused_call_costs_the_episode_part_of_its_credit(hotel):
    hotel.book_room("city", 3)
    assert hotel.get_reward() == 1.0
    with pytest.raises(ValueError, match="already booked"):
        hotel.book_room("city", 3)
    assert hotel.get_reward() == pytest.approx(0.75)


@pytest.mark.parametrize(
    ("calls", "reward"),
    [
        ([("large", 3), ("city", 3)], 0.75),  # a full room first, then the right one
        ([("suite", 3), ("city", 2)], 0.35),  # a room type the hotel has not, then the right room for other nights
        ([("large", 3)] * 4, 0.0),  # never below nothing
    ],
)
def test_each_refusal_is_counted_once(hotel, calls, reward):
    for room, nights in calls:
        try:
            hotel.book_room(room, nights)
        except ValueError:
            pass
    assert hotel.get_reward() == pytest.approx(reward)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--for-agent", "--random"], "--for-agent is a pre-trained model; drop --random"),
        (["--for-agent", "--for-vllm"], "--for-vllm and --for-agent build different models; choose one"),
    ],
)
def test_tiny_model_refuses_what_it_cannot_combine(tmp_path, flags, message):
    result = cli("tiny-model", str(tmp_path / "model"), *flags)
    assert result.returncode == 2 and message in result.stderr, result.stderr
    assert not (tmp_path / "model").exists()
