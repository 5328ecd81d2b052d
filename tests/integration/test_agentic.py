"""Agentic runs trained for real on the tiny model: TRL calls the environment's tools while the model
generates, with the arguments it parsed from the model's text; each result goes back as a tool turn before
the model's next one; a tool that raises counts as a failure and training goes on; the tools/* metrics and
the episode statistics reach the events, and samples.jsonl keeps each episode's turns. Bad agentic input
stops the run before the model loads, each with its own message."""

from __future__ import annotations

import json
import shutil

import pytest

from trainer_core.contract.health.sample_stats import TOOL_SUCCESS, TURNS_MEAN
from trainer_core.contract.run.events import Metrics, RunFinished
from trainer_core.contract.run.status import Status

from ..helpers import ENVS, cli, events_of, only_run

AGENT_ENV = ENVS / "agent_tools_env.py"
AGENT_FLAGS = (
    "--rl-env-class",
    "ToolHotel",
    "--rl-num-generations",
    "4",
    "--batch-size",
    "16",
    "--rl-max-new-tokens",
    "64",
    "--max-tool-calls",
    "2",
    "--lr",
    "0.0004",
    "--rl-kl-coef",
    "0",
    "--save-steps",
    "1000",
    "--mixed-precision",
    "no",
)


def train_agent(model: str, folder, env_config: dict, steps: int, *flags: str):
    """``steps`` steps of the hotel agent in ``folder``, every tool call the training process made written to
    calls.jsonl there: (run folder, calls, samples)."""
    log = folder / "calls.jsonl"
    done = cli(
        "train",
        "--model",
        model,
        "--rl-env-module",
        str(AGENT_ENV),
        *AGENT_FLAGS,
        *flags,
        "--rl-env-config",
        json.dumps({"log": str(log), **env_config}),
        "--max-steps",
        str(steps),
        "--samples-per-step",
        "16",
        "--runs-dir",
        str(folder / "runs"),
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    run = only_run(folder / "runs")
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    samples = [json.loads(line) for line in (run / "samples.jsonl").read_text().splitlines()]
    return run, calls, samples


@pytest.fixture(scope="module")
def agentic_run(pretrained_tiny_model, tmp_path_factory):
    """Four steps of the hotel agent."""
    return train_agent(pretrained_tiny_model, tmp_path_factory.mktemp("agentic"), {}, 4)


@pytest.mark.slow
def test_tools_are_called_with_the_parsed_arguments_and_their_results_reach_the_next_turn(agentic_run):
    _, calls, samples = agentic_run
    calls = [c for c in calls if "tool" in c]
    assert calls, "the model never called a tool"
    assert {c["tool"] for c in calls} <= {"check_availability", "book_room"}
    for call in calls:  # TRL parsed the JSON arguments into the types the tool's schema gives
        assert isinstance(call["arguments"]["room"], str)
        if call["tool"] == "book_room":
            assert "nights" in call["arguments"]
    answered = [
        (sample, i, turn)
        for sample in samples
        for i, turn in enumerate(sample["turns"])
        if turn.get("tool") and "result" in turn
    ]
    assert answered, "no episode in samples.jsonl holds a tool call with its result"
    results = {c["result"] for c in calls if "result" in c}
    assert all(turn["result"] in results for _, _, turn in answered)  # what the tool returned, in the episode
    # the model wrote another turn after a result came back: the result was in its context
    assert any(i + 1 < len(sample["turns"]) for sample, i, _ in answered)
    for sample, _, turn in answered:
        assert f"[{turn['tool']}] {turn['result']}" in sample["completion"]  # the transcript score_episode sees


@pytest.mark.slow
def test_a_tool_that_never_returns_times_out_as_a_failed_call_and_the_run_completes(pretrained_tiny_model, tmp_path):
    """Every booking sleeps forever; with --tool-timeout 1 each one is a failed call, and the run completes."""
    flags = ("--max-tool-calls", "3", "--tool-timeout", "1")  # the later of two --max-tool-calls counts
    run, calls, samples = train_agent(pretrained_tiny_model, tmp_path, {"hang_every": 1}, 2, *flags)
    hung = [c for c in calls if c.get("hung")]
    assert hung, "no booking in two steps"
    message = "book_room timed out after 1 s"
    calls_made = [t for s in samples for t in s["turns"] if t.get("tool") == "book_room"]
    timed_out = [t for t in calls_made if t.get("error") == message]
    assert timed_out, "no episode shows a booking that timed out"
    assert not [t for t in calls_made if "result" in t]  # a hung call's answer is its timeout, never a result
    hung_arguments = [json.dumps(c["arguments"], sort_keys=True) for c in hung]
    assert all(json.dumps(t["arguments"], sort_keys=True) in hung_arguments for t in timed_out)
    events = events_of(run)
    assert [e.status for e in events if isinstance(e, RunFinished)] == [Status.COMPLETED]
    assert any(e.values["tools/failure_frequency"] > 0 for e in events if isinstance(e, Metrics))
    # each rollout's instance (and the held-out eval's, if any) was closed once the run ended
    closed = [c for c in calls if "closed" in c]
    assert closed and len({c["closed"] for c in closed}) == len(closed)


@pytest.mark.slow
def test_a_tool_that_raises_is_a_failure_in_the_metrics_and_the_episode_and_training_goes_on(agentic_run):
    run, calls, samples = agentic_run
    failed = [c for c in calls if "error" in c]
    assert failed, "no tool call failed in four steps (sold-out rooms and bad arguments raise)"
    events = events_of(run)
    metrics = [e for e in events if isinstance(e, Metrics)]
    assert [m.step for m in metrics] == [1, 2, 3, 4]
    assert any(m.values["tools/failure_frequency"] > 0 for m in metrics)
    for m in metrics:
        for key in ("tools/call_frequency", "tools/failure_frequency", TURNS_MEAN, TOOL_SUCCESS):
            assert key in m.values, key
    assert sum(m.values["tools/call_frequency"] for m in metrics) > 0
    errors = {c["error"] for c in failed}
    marked = {t["error"] for s in samples for t in s["turns"] if t.get("error")}  # samples.jsonl keeps every episode
    assert marked & errors  # what a tool raised, marked on its call (a result past the length limit is dropped)
    unlogged = marked - errors  # arguments that did not fit the tool's signature: TRL's call raised before the tool ran
    assert all("argument" in e for e in unlogged), unlogged
    (finished,) = [e for e in events if isinstance(e, RunFinished)]
    assert finished.status is Status.COMPLETED


BAD_ENVS = {
    "no_reset": (
        "class Env:\n"
        "    def build_dataset(self, tokenizer):\n"
        "        from datasets import Dataset\n"
        "        return Dataset.from_list([{'prompt': 'Book a cheap room.'}] * 4)\n"
        "    def get_reward(self):\n        return 0.0\n"
        "    def get_tool_functions(self):\n        return [self.ping]\n"
        "    def ping(self, host: str) -> str:\n"
        '        """Ping a host.\n\n        Args:\n            host: The host name.\n        """\n'
        "        return host\n",
        "Env has tool functions but no reset method",
    ),
    "no_docstring": (
        "class Env:\n"
        "    def build_dataset(self, tokenizer):\n"
        "        from datasets import Dataset\n"
        "        return Dataset.from_list([{'prompt': 'Book a cheap room.'}] * 4)\n"
        "    def reset(self, **row):\n        return None\n"
        "    def get_reward(self):\n        return 0.0\n"
        "    def get_tool_functions(self):\n        return [self.ping]\n"
        "    def ping(self, host: str) -> str:\n        return host\n",
        "tool Env.ping has no docstring",
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(BAD_ENVS))
def test_bad_agentic_environments_stop_before_the_model_loads_with_their_own_message(
    case, pretrained_tiny_model, tmp_path
):
    source, message = BAD_ENVS[case]
    (tmp_path / "bad_env.py").write_text(source)
    done = cli(
        "train",
        "--model",
        pretrained_tiny_model,
        "--rl-env-module",
        str(tmp_path / "bad_env.py"),
        "--rl-env-class",
        "Env",
        "--max-steps",
        "1",
        "--runs-dir",
        str(tmp_path / "runs"),
    )
    assert done.returncode == 2, done.stdout + done.stderr  # the user's mistake, found before training
    assert message in done.stdout + done.stderr
    run = only_run(tmp_path / "runs")
    (finished,) = [e for e in events_of(run) if isinstance(e, RunFinished)]
    assert finished.status is Status.FAILED and finished.step == 0 and message in (finished.reason or "")


@pytest.mark.slow
def test_a_model_whose_chat_template_cannot_render_tool_calls_is_refused(pretrained_tiny_model, tmp_path):
    model = tmp_path / "no-tools-template"
    shutil.copytree(pretrained_tiny_model, model)
    (model / "chat_template.jinja").write_text(
        "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
    )
    done = cli(
        "train",
        "--model",
        str(model),
        "--rl-env-module",
        str(AGENT_ENV),
        *AGENT_FLAGS,
        "--max-steps",
        "1",
        "--runs-dir",
        str(tmp_path / "runs"),
    )
    assert done.returncode == 2, done.stdout + done.stderr  # the user's mistake, found before training
    assert "cannot render a tool-calling conversation" in done.stdout + done.stderr


@pytest.mark.slow
def test_a_dataset_run_calls_standalone_tools_named_with_tools(pretrained_tiny_model, tmp_path):
    tools = ENVS / "standalone_tools.py"
    data = tmp_path / "requests.jsonl"
    data.write_text(
        "".join(
            json.dumps({"prompt": [{"role": "user", "content": f"Book a {room} room for {n} nights."}]}) + "\n"
            for room in ("cheap", "large", "city")
            for n in range(1, 6)
        )
    )
    log = tmp_path / "calls.jsonl"
    done = cli(
        "train",
        "--model",
        pretrained_tiny_model,
        "--dataset",
        str(data),
        "--reward-func",
        f"{tools}:answered_a_tool_call",
        "--tools",
        f"{tools}:check_availability,book_room",
        *AGENT_FLAGS[2:],
        "--max-steps",
        "3",
        "--samples-per-step",
        "16",
        "--runs-dir",
        str(tmp_path / "runs"),
        env={"TOOLS_LOG": str(log)},
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    run = only_run(tmp_path / "runs")
    assert log.exists() and log.read_text().strip(), "no standalone tool was called"
    metrics = [e for e in events_of(run) if isinstance(e, Metrics)]
    assert sum(m.values["tools/call_frequency"] for m in metrics) > 0
    samples = [json.loads(line) for line in (run / "samples.jsonl").read_text().splitlines()]
    called = [s for s in samples if any(t.get("tool") for t in s["turns"])]
    assert called and all(s["rewards"] for s in called)
    assert any(s["reward"] == 1.0 for s in called)  # the reward function saw the tool's answer in the episode
