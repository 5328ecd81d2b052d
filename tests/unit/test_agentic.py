"""The agentic pieces that need no training: the tools settings, the checks on tools and environments, the
per-rollout class TRL sees, and episodes read back into turns and transcript text."""

from __future__ import annotations

import asyncio
import inspect
import time

import pytest

from trainer_core.agents.episodes import (
    MAX_TURN_CHARS,
    EpisodeReward,
    ToolTimeout,
    check_tool,
    check_tool_calling,
    environment_factory,
    episode_turns,
    load_tools,
    timed,
    tool_functions,
    transcript_text,
)
from trainer_core.contract.config.run_config import ConfigError, RunConfig
from trainer_core.contract.config.tool_specs import parse_tool_spec
from trainer_core.contract.health.sample_stats import TOOL_SUCCESS, TURN_LIMIT_SHARE, TURNS_MEAN, SampleStats
from trainer_core.environment.user_code import UserCodeError
from trainer_core.training.trl_setup import grpo_config_kwargs

from ..helpers import ENVS

AGENT_ENV = ENVS / "agent_tools_env.py"


def hotel(**config):
    import importlib.util

    spec = importlib.util.spec_from_file_location("agent_tools_env_unit", AGENT_ENV)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, module.ToolHotel(**config)


@pytest.mark.parametrize(
    ("entry", "file", "module", "names"),
    [
        ("tools.py:search", "tools.py", "", ("search",)),
        ("lib/tools.py:search,fetch", "lib/tools.py", "", ("search", "fetch")),
        ("my_pkg.tools.search", "", "my_pkg.tools", ("search",)),
        ("my_pkg.tools:search,fetch", "", "my_pkg.tools", ("search", "fetch")),
    ],
)
def test_tool_entries_name_a_file_or_a_module_and_its_functions(entry, file, module, names):
    spec = parse_tool_spec(entry)
    assert spec is not None and (spec.file, spec.module, spec.names) == (file, module, names)


@pytest.mark.parametrize(
    "entry", ["search", "tools.py:", "tools.py:a b", "data/tools.txt:search", "1pkg.fn", "x.py:fn,"]
)
def test_a_tools_entry_that_names_no_function_is_refused_with_the_forms_that_work(entry):
    with pytest.raises(ConfigError) as caught:
        RunConfig(model="m", rl_env_module="e.py", rl_env_class="E", tools=[entry]).validate()
    assert (
        caught.value.field == "tools" and repr(entry) in str(caught.value) and "FILE.py:FUNCTION" in str(caught.value)
    )


@pytest.mark.parametrize("value", [0, -1, True, 2.5])
def test_max_tool_calls_must_be_a_positive_whole_number(value):
    with pytest.raises(ConfigError) as caught:
        RunConfig(model="m", rl_env_module="e.py", rl_env_class="E", max_tool_calls=value).validate()
    assert caught.value.field == "max_tool_calls" and repr(value) in str(caught.value)


def test_max_tool_calls_becomes_trls_max_tool_calling_iterations_and_a_config_string_of_tools_a_list():
    config = RunConfig.from_dict({"model": "m", "tools": "a.py:f b.py:g,h", "max_tool_calls": 3})
    assert config.tools == ["a.py:f", "b.py:g,h"]
    assert grpo_config_kwargs(config, "/tmp/out")["max_tool_calling_iterations"] == 3
    assert grpo_config_kwargs(RunConfig(model="m"), "/tmp/out")["max_tool_calling_iterations"] == 10  # finite
    assert "max_tool_calling_iterations" not in grpo_config_kwargs(
        RunConfig(model="m", max_tool_calls=None), "/tmp/out"
    )


@pytest.mark.parametrize("value", [-1, True, float("nan"), float("inf"), "5"])
def test_tool_timeout_must_be_a_number_of_seconds(value):
    [problem] = RunConfig(model="m", rl_env_module="e.py", rl_env_class="E", tool_timeout=value).problems()
    assert problem.field == "tool_timeout" and repr(value) in str(problem) and "--tool-timeout 30" in str(problem)


def _slow(seconds: float) -> str:
    """Sleep a while.

    Args:
        seconds: How long.
    """
    time.sleep(seconds)
    return "done"


async def _slow_async(seconds: float) -> str:
    """Sleep a while, awaited.

    Args:
        seconds: How long.
    """
    await asyncio.sleep(seconds)
    return "done"


def test_a_timed_tool_answers_in_time_or_fails_at_its_timeout_and_keeps_its_description():
    from transformers.utils.chat_template_utils import get_json_schema

    for tool in (_slow, _slow_async):
        bounded = timed(tool, 0.5)
        assert get_json_schema(bounded) == get_json_schema(tool)
        assert inspect.iscoroutinefunction(bounded) == inspect.iscoroutinefunction(tool)
        run = (
            (lambda f, s: asyncio.run(f(seconds=s)))
            if inspect.iscoroutinefunction(tool)
            else (lambda f, s: f(seconds=s))
        )
        assert run(bounded, 0.01) == "done"
        started = time.monotonic()
        with pytest.raises(ToolTimeout, match=rf"^{tool.__name__} timed out after 0\.5 s$"):
            run(bounded, 30)
        assert time.monotonic() - started < 5
    assert timed(_slow, 0) is _slow  # 0: no limit


def test_a_rollouts_tools_are_timed_and_close_reaches_every_instance_once():
    _, env = hotel(log="")
    make = environment_factory(env, {"log": "", "hang_every": 1}, tool_timeout=0.3)
    rollout = make()
    rollout.reset(prompt=[{"role": "user", "content": "x"}], room="cheap", nights=2, free=[1, 0, 1])
    with pytest.raises(ToolTimeout, match=r"^book_room timed out after 0\.3 s$"):
        rollout.book_room(room="cheap", nights=2)
    closed = []
    for instance in (rollout, make()):
        instance.env.close = lambda instance=instance: closed.append(instance)
    make().env.close = lambda: (_ for _ in ()).throw(RuntimeError("socket gone"))
    assert make.close() == ["ToolHotel.close() raised RuntimeError: socket gone"]
    assert len(closed) == 2 and make.close() == []


def test_grpo_args_cannot_set_max_tool_calling_iterations_behind_max_tool_calls():
    config = RunConfig(model="m", rl_env_module="e.py", rl_env_class="E", grpo_args={"max_tool_calling_iterations": 2})
    assert any(p.field == "grpo_args" and "max_tool_calls" in str(p) for p in config.problems())


def test_the_per_rollout_class_exposes_only_the_tools_and_reset_with_their_signatures_and_docstrings():
    from transformers.utils.chat_template_utils import get_json_schema

    _, env = hotel(log="")
    make = environment_factory(env, {"log": ""})
    rollout, other = make(), make()
    assert rollout.env is not other.env and type(rollout).__name__ == "ToolHotel"
    public = sorted(n for n, _ in inspect.getmembers(type(rollout), inspect.isfunction) if not n.startswith("_"))
    assert public == ["book_room", "check_availability", "reset"]  # what TRL turns into tools, besides reset
    schema = get_json_schema(rollout.book_room)
    assert schema["function"]["name"] == "book_room"
    assert schema["function"]["parameters"]["properties"]["nights"]["type"] == "integer"
    assert schema["function"]["description"] == get_json_schema(env.book_room)["function"]["description"]
    rollout.reset(prompt=[{"role": "user", "content": "x"}], room="cheap", nights=2, free=[1, 0, 1])
    assert rollout.check_availability(room="cheap").startswith("1 cheap")
    with pytest.raises(ValueError, match="no large room"):
        rollout.book_room(room="large", nights=2)
    assert other.env.free != rollout.env.free or other.env.free is not rollout.env.free


def test_a_tool_without_a_docstring_or_type_hints_is_refused_by_name_with_an_example():
    def lookup(city: str) -> str:
        return city

    def search(query) -> str:
        """Search the web.

        Args:
            query: What to search for.
        """
        return query

    with pytest.raises(UserCodeError, match=r"tool Hotel\.lookup has no docstring.*Args:"):
        check_tool(lookup, "Hotel")
    with pytest.raises(UserCodeError, match=r"tool search cannot be described.*type hint"):
        check_tool(search)


def test_an_environment_with_tools_but_no_reset_is_refused_with_the_method_to_add():
    class NoReset:
        def get_tool_functions(self):
            return [self.ping]

        def ping(self, host: str) -> str:
            """Ping a host.

            Args:
                host: The host name.
            """
            return host

    with pytest.raises(UserCodeError, match=r"NoReset has tool functions but no reset.*def reset\(self, \*\*row\)"):
        tool_functions(NoReset())


def test_standalone_tools_load_from_a_file_and_a_missing_function_lists_the_ones_there(tmp_path):
    (tmp_path / "my_tools.py").write_text(
        'def add(a: int, b: int) -> int:\n    """Add two numbers.\n\n    Args:\n        a: One.\n        b: Two.\n    """\n'
        "    return a + b\n"
    )
    (funcs,) = load_tools([f"{tmp_path / 'my_tools.py'}:add"])
    assert funcs(a=2, b=3) == 5
    with pytest.raises(UserCodeError, match=r"has no function .mul.\. Functions defined there: add"):
        load_tools([f"{tmp_path / 'my_tools.py'}:mul"])


def test_a_chat_template_that_cannot_render_tool_calls_is_refused_before_the_model_loads(tiny_model):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    check_tool_calling(tokenizer, tiny_model)  # the tiny model's own template renders them
    tokenizer.chat_template = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
    with pytest.raises(UserCodeError, match="cannot render a tool-calling conversation"):
        check_tool_calling(tokenizer, tiny_model)


EPISODE = [
    {
        "role": "assistant",
        "content": "let me look",
        "tool_calls": [
            {"type": "function", "function": {"name": "check_availability", "arguments": {"room": "cheap"}}}
        ],
    },
    {"role": "tool", "name": "check_availability", "content": "2 cheap rooms free, 60 a night"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"type": "function", "function": {"name": "book_room", "arguments": {"room": "x", "nights": 2}}}
        ],
    },
    {"role": "tool", "name": "book_room", "content": str({"error": "unknown room type 'x'"})},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"type": "function", "function": {"name": "book_room", "arguments": {"room": "cheap"}}}],
    },
]


def test_an_episode_reads_back_as_turns_with_results_failures_and_the_call_it_never_ran():
    turns, cut, at_limit = episode_turns(EPISODE)
    assert turns[0] == {"role": "assistant", "content": "let me look"}
    assert turns[1]["tool"] == "check_availability" and turns[1]["arguments"] == {"room": "cheap"}
    assert turns[1]["result"] == "2 cheap rooms free, 60 a night"
    assert turns[2]["tool"] == "book_room" and turns[2]["error"] == "unknown room type 'x'" and "result" not in turns[2]
    assert turns[3]["unanswered"] is True and at_limit and not cut
    text = transcript_text(EPISODE)
    assert 'check_availability({"room": "cheap"})' in text and "[check_availability] 2 cheap rooms free" in text


def test_long_turns_are_cut_and_marked():
    long = [{"role": "assistant", "content": "w " * MAX_TURN_CHARS}]
    turns, cut, _ = episode_turns(long)
    assert cut and len(turns[0]["content"]) == MAX_TURN_CHARS + 1


def test_episode_statistics_count_turns_limits_and_calls_that_answered():
    stats = SampleStats()
    turns, _, at_limit = episode_turns(EPISODE)
    stats.add([{"prompt": "p", "completion": "c", "reward": 0.5, "turns": turns, "turn_limit": at_limit}])
    stats.add([{"prompt": "p", "completion": "d", "reward": 0.0, "turns": [{"role": "assistant", "content": "no"}]}])
    out = stats.pop()
    assert out[TURNS_MEAN] == 1.0 and out[TURN_LIMIT_SHARE] == 0.5 and out[TOOL_SUCCESS] == 0.5
    stats.add([{"prompt": "p", "completion": "c", "reward": 0.2, "turns": turns}])  # answered, scored little
    assert stats.pop()[TOOL_SUCCESS] == 0.0
    assert TURNS_MEAN not in stats.pop()  # each pop starts again


def test_get_reward_is_checked_as_score_episode_is(tmp_path):
    _, env = hotel(log="")
    make = environment_factory(env, {"log": ""})
    rollout = make()
    rollout.reset(room="cheap", nights=2, free=[1, 1, 1])
    rollout.book_room(room="cheap", nights=2)
    reward = EpisodeReward(env, tokenizer=None)
    assert reward.__name__ == "get_reward"
    assert reward(["p"], [EPISODE], environments=[rollout], room=["cheap"], nights=[2], free=[[1, 1, 1]]) == [1.0]
    rollout.env.get_reward = lambda: 1.5
    with pytest.raises(UserCodeError, match=r"ToolHotel.get_reward returned 1.5, outside \[0, 1\]"):
        reward(["p"], [EPISODE], environments=[rollout], room=["cheap"], nights=[2], free=[[1, 1, 1]])


def test_a_tool_overridden_without_a_docstring_is_refused_though_its_parent_has_one():
    class Base:
        def look(self, room: str) -> str:
            """Look at a room.

            Args:
                room: The room type.
            """
            return room

    class Child(Base):
        def look(self, room: str) -> str:
            return room.upper()

    check_tool(Base().look, "Base")
    with pytest.raises(UserCodeError, match=r"tool Child\.look has no docstring"):
        check_tool(Child().look, "Child")
