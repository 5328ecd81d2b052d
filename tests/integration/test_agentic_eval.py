"""Held-out evaluation of agentic runs, trained for real on the tiny model: each held-out sample is an episode
whose tool calls TRL's loop executes, scored by the run's reward, the environment's eval_metrics (on the
episode's own instance) and tool_success; the same seed trains the same with evals on and off; `grpo-tui eval`
scores an agentic run's models as the run recorded them; a dataset run with standalone tools evaluates too;
a TRL outside the range the eval was written for is refused with the fix."""

from __future__ import annotations

import json

import pytest

from grpo_tui.resources import demo_env_file
from trainer_core.contract.config.run_config import ConfigError
from trainer_core.contract.run.events import Eval, Metrics, RunFinished
from trainer_core.contract.run.status import Status
from trainer_core.evaluation.agentic import TOOL_SUCCESS, TRL_VERSIONS, check_trl_version

from ..helpers import ENVS, cli, events_of, only_run

STEPS, EVERY, PROMPTS = 2, 1, 4
FLAGS = (
    "--rl-num-generations", "4", "--batch-size", "16", "--rl-max-new-tokens", "96", "--max-tool-calls", "3",
    "--lr", "0.0004", "--rl-kl-coef", "0", "--scheduler", "constant", "--mixed-precision", "no",
    "--samples-per-step", "16", "--max-steps", str(STEPS), "--save-steps", "1000",
)  # fmt: skip

# the demo's hotel agent without a held-out set: the same training, no evals
NO_EVAL_ENV = """
import importlib.util

_spec = importlib.util.spec_from_file_location("demo_hotel_agent_env", {path!r})
_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_module)


class HotelAgentEnv(_module.HotelAgentEnv):
    build_eval_dataset = None
"""


def agent_run(model: str, runs_dir, module: str, *extra: str) -> list[str]:
    return [
        "train", "--model", model, "--rl-env-module", module, "--rl-env-class", "HotelAgentEnv", *FLAGS,
        "--runs-dir", str(runs_dir), *extra,
    ]  # fmt: skip


@pytest.fixture(scope="module")
def runs(pretrained_tiny_model, tmp_path_factory):
    """The demo's hotel agent trained with held-out evals every EVERY steps, and the same without a held-out set."""
    folder = tmp_path_factory.mktemp("agentic-eval")
    plain = folder / "no_eval_env.py"
    plain.write_text(NO_EVAL_ENV.format(path=str(demo_env_file(agent=True))))
    out = {}
    for name, module, extra in (
        (
            "on",
            str(demo_env_file(agent=True)),
            (
                "--eval-steps",
                str(EVERY),
                "--eval-max-prompts",
                str(PROMPTS),
                "--rl-env-config",
                '{"num_eval_requests": 32}',
            ),
        ),
        ("off", str(plain), ()),
    ):
        done = cli(*agent_run(pretrained_tiny_model, folder / name, module, *extra))
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        out[name] = only_run(folder / name)
    return out


def evals_of(run) -> list[Eval]:
    return [e for e in events_of(run) if isinstance(e, Eval)]


@pytest.mark.slow
def test_evals_score_the_episodes_with_the_reward_the_task_metric_and_tool_success(runs):
    evals = evals_of(runs["on"])
    assert [e.step for e in evals] == list(range(0, STEPS + 1, EVERY)) and evals[0].base
    for event in evals:
        assert set(event.metrics) == {"booked_right", "reward", TOOL_SUCCESS}, event.metrics
        assert event.task_metrics == ["booked_right"]
        assert (event.prompts, event.generations) == (PROMPTS, 4)
        assert all(0.0 <= (event.value(name) or 0.0) <= 1.0 for name in event.metrics)
    # the episodes called the hotel's tools: some succeeded, and what they booked earned a reward
    assert max(e.value(TOOL_SUCCESS) or 0.0 for e in evals) > 0
    assert max(e.value("reward") or 0.0 for e in evals) > 0
    (finished,) = [e for e in events_of(runs["on"]) if isinstance(e, RunFinished)]
    assert finished.status is Status.COMPLETED


@pytest.mark.slow
def test_the_eval_does_not_change_the_agentic_training(runs):
    """The training's environment instances, metrics and samples are the eval's to leave alone."""
    assert not evals_of(runs["off"])

    def series(run):
        return [
            (m.step, {k: v for k, v in m.values.items() if "time" not in k and "per_second" not in k})
            for m in events_of(run)
            if isinstance(m, Metrics)
        ]

    on, off = series(runs["on"]), series(runs["off"])
    assert [s for s, _ in on] == list(range(1, STEPS + 1))
    assert on == off
    assert any(values.get("tools/call_frequency") for _, values in on)

    def samples(run):
        return [json.loads(line) for line in (run / "samples.jsonl").read_text().splitlines()]

    assert samples(runs["on"]) == samples(runs["off"])


@pytest.mark.slow
def test_grpo_tui_eval_scores_an_agentic_run_as_the_run_recorded_it(runs):
    result = cli("eval", str(runs["on"]), "--checkpoint", "base", "--checkpoint", "final", "--json")
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout)
    recorded = {e.step: e for e in evals_of(runs["on"])}
    assert report["metric"] == "booked_right" and report["prompts"] == PROMPTS
    for model in report["models"]:
        event = recorded[model["step"]]
        for name in ("booked_right", "reward", TOOL_SUCCESS):
            assert model["metrics"][name]["mean"] == pytest.approx(event.value(name), abs=1e-6), (model, name)


@pytest.mark.slow
def test_a_dataset_run_with_standalone_tools_evaluates_a_share_of_its_prompts(pretrained_tiny_model, tmp_path):
    tools = ENVS / "standalone_tools.py"
    requests = [f"I need a {room} room for {n} nights." for room in ("cheap", "large", "city") for n in range(1, 7)]
    data = tmp_path / "requests.jsonl"
    data.write_text("".join(json.dumps({"prompt": [{"role": "user", "content": r}]}) + "\n" for r in requests))
    args = agent_run(pretrained_tiny_model, tmp_path / "runs", "unused", "--max-steps", "2", "--eval-fraction", "0.25")
    at = args.index("--rl-env-module")
    del args[at : at + 4]  # a dataset run: no environment
    done = cli(
        *args, "--dataset", str(data), "--reward-func", f"{tools}:answered_a_tool_call",
        "--tools", f"{tools}:check_availability,book_room",
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    evals = evals_of(only_run(tmp_path / "runs"))
    assert [e.step for e in evals] == [0, 2]
    assert all(set(e.metrics) == {"reward", TOOL_SUCCESS} and e.prompts == 4 for e in evals)
    # the reward pays for an answered tool call: the episodes' tools ran inside the eval
    assert max(e.value("reward") or 0.0 for e in evals) > 0


def test_a_trl_outside_the_range_the_agentic_eval_was_written_for_is_refused_with_the_fix():
    first, last = TRL_VERSIONS
    check_trl_version(f"{first}.0")
    check_trl_version(f"{first}.3.dev0")
    for version in (f"{last}.0", "1.15.2", "2.0.0"):
        with pytest.raises(ConfigError) as refused:
            check_trl_version(version)
        message = str(refused.value)
        assert version in message and f"trl>={first},<{last}" in message and "drop the held-out set" in message
