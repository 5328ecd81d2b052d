"""Before and after training: the reward inspection, resume, merge, and what a run records of itself."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys

from trainer_core.contract.config.run_config import RunConfig
from trainer_core.contract.run.event_log import read_records
from trainer_core.contract.run.events import RunStarted
from trainer_core.contract.run.folder import RunFolder
from trainer_core.contract.run.status import Status
from trainer_core.training.runner import train

from ..helpers import ENVS, EXAMPLES, ROOT, cli, events_of, wait_for
from .test_supervisor import launch, metrics_steps

LOAD_AND_GENERATE = (
    "import sys; from transformers import AutoModelForCausalLM, AutoTokenizer\n"
    "m = AutoModelForCausalLM.from_pretrained(sys.argv[1]); t = AutoTokenizer.from_pretrained(sys.argv[1])\n"
    "names = [n for n, _ in m.named_parameters()]\n"
    "ids = t('Write the letter a:', return_tensors='pt')\n"
    "out = m.generate(**ids, max_new_tokens=5, do_sample=False)\n"
    "print(type(m).__name__, any('lora' in n for n in names), out.shape[1] - ids['input_ids'].shape[1])"
)


def inspect(tiny_model, runs_dir, module, cls, *extra, samples="16"):
    result = cli(
        "inspect",
        "--model",
        tiny_model,
        "--rl-env-module",
        str(module),
        "--rl-env-class",
        cls,
        "--rl-max-new-tokens",
        "12",
        "--samples",
        samples,
        "--runs-dir",
        str(runs_dir),
        *extra,
    )
    result.stdout = " ".join(result.stdout.split())
    folders = sorted((runs_dir / "inspections").iterdir())
    summary = json.loads((folders[-1] / "summary.json").read_text())
    records_file = folders[-1] / "inspection.jsonl"
    records = read_records(records_file)
    assert len(records) == (len(records_file.read_text().splitlines()) if records_file.exists() else 0)
    return result, summary, records


def flag_names(summary):
    return {f["flag"] for f in summary["flags"]}


def test_inspecting_an_example_environment_gives_table_distribution_and_report(tiny_model, runs_dir):
    result, summary, records = inspect(tiny_model, runs_dir, EXAMPLES / "pattern_env.py", "PatternEnv")
    assert result.returncode in (0, 4), result.stderr
    assert len(records) == summary["samples"] == 16 and summary["groups"] == 4
    assert sum(summary["histogram"]) == 16 and 0 <= summary["mean"] <= 1
    assert all({"prompt", "completion", "score", "columns"} <= set(r) for r in records)
    assert records[0]["columns"] == {"target": "a"}
    assert "score distribution" in result.stdout and "samples (first 16 of 16)" in result.stdout
    assert "never_succeeds" not in flag_names(summary)


def test_composed_rewards_and_a_model_that_never_succeeds(tiny_model, runs_dir):
    result, summary, records = inspect(tiny_model, runs_dir, EXAMPLES / "math_env.py", "MathEnv")
    assert result.returncode == 4
    assert "never_succeeds" in flag_names(summary) and "start with SFT" in result.stdout
    assert all("format_reward" in r["rewards"] for r in records)
    assert summary["reward_weights"] == {"score_episode": 1.0, "format_reward": 0.5}


def test_a_constant_reward_environment_is_flagged_for_zero_spread(tiny_model, runs_dir):
    result, summary, _ = inspect(tiny_model, runs_dir, EXAMPLES / "constant_env.py", "ConstantEnv")
    assert {"zero_spread_groups", "all_identical"} <= flag_names(summary)
    assert summary["zero_spread_groups"] == summary["groups"] == 4
    assert "4 of 4 groups (100%) have zero spread" in result.stdout


def test_a_raising_environment_shows_its_own_exception_and_case(tiny_model, runs_dir):
    result, summary, records = inspect(tiny_model, runs_dir, ENVS / "bad_envs.py", "Raises")
    assert "exception" in flag_names(summary)
    failed = [r for r in records if r.get("error")]
    assert failed and "KeyError" in failed[0]["error"] and "lookup_price" in failed[0]["traceback"]
    assert failed[0]["columns"]["city"] in ("paris", "rome")
    assert "score_episode raised" in result.stdout


def test_out_of_range_scores_are_flagged(tiny_model, runs_dir):
    _, summary, records = inspect(tiny_model, runs_dir, ENVS / "bad_envs.py", "OutOfRange", samples="8")
    assert "out_of_range" in flag_names(summary) and records[0]["raw_score"] == "1.5"


def test_a_lora_run_stopped_at_step_3_resumes_with_steps_4_to_6_then_merges(tiny_model, runs_dir, tmp_path):
    handle = launch(
        tiny_model,
        runs_dir,
        "--max-steps",
        "6",
        "--peft",
        "--lora-r",
        "4",
        "--save-steps",
        "1000",
        env_module=str(ENVS / "slow_env.py"),
        env_class="SlowPattern",
    )
    wait_for(lambda: 2 in metrics_steps(handle), timeout=120, interval=0.05)
    handle.folder.request_stop("test")
    assert handle.wait(timeout=120) is Status.STOPPED
    assert metrics_steps(handle) == [1, 2, 3]
    assert [p.name for p in handle.folder.checkpoints()] == ["checkpoint-3"]

    resumed = cli("train", "--resume", handle.run_id, "--runs-dir", str(runs_dir), timeout=300)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert metrics_steps(handle) == [1, 2, 3, 4, 5, 6]
    started = [e for e in events_of(handle.path) if isinstance(e, RunStarted)]
    assert len(started) == 2 and started[0].resumed_from is None
    assert started[1].resumed_from == "checkpoints/checkpoint-3"
    assert handle.status() is Status.COMPLETED

    merged = tmp_path / "merged"
    result = cli("merge", handle.run_id, "--output", str(merged), "--runs-dir", str(runs_dir))
    assert result.returncode == 0 and "LoRA adapters merged" in result.stdout, result.stderr
    out = subprocess.run(
        [sys.executable, "-c", LOAD_AND_GENERATE, str(merged)], capture_output=True, text=True, cwd=ROOT
    )
    assert out.stdout.split() == ["LlamaForCausalLM", "False", "5"], out.stderr


def test_resume_refuses_what_it_cannot_do(tiny_model, runs_dir):
    done = train(
        RunConfig(
            model=tiny_model,
            rl_env_module=str(EXAMPLES / "pattern_env.py"),
            rl_env_class="PatternEnv",
            batch_size=8,
            rl_max_new_tokens=8,
            max_steps=1,
        ),
        runs_dir=runs_dir,
    )
    result = cli("train", "--resume", done.run_id, "--runs-dir", str(runs_dir))
    assert result.returncode == 2 and "is completed" in result.stderr
    result = cli("train", "--resume", done.run_id, "--lr", "0.1", "--runs-dir", str(runs_dir))
    assert result.returncode == 2 and "only --max-steps may change (got --lr)" in result.stderr


def test_a_full_fine_tune_final_model_saves_and_loads(tiny_model, runs_dir, tmp_path):
    result = train(
        RunConfig(
            model=tiny_model,
            rl_env_module=str(EXAMPLES / "pattern_env.py"),
            rl_env_class="PatternEnv",
            batch_size=8,
            rl_max_new_tokens=8,
            max_steps=2,
        ),
        runs_dir=runs_dir,
    )
    out = tmp_path / "export"
    merged = cli("merge", str(result.path), "--output", str(out))
    assert merged.returncode == 0 and "full fine-tune exported" in merged.stdout, merged.stderr
    loaded = subprocess.run(
        [sys.executable, "-c", LOAD_AND_GENERATE, str(out)], capture_output=True, text=True, cwd=ROOT
    )
    assert loaded.stdout.split() == ["LlamaForCausalLM", "False", "5"], loaded.stderr
    missing = cli("merge", str(result.path), "--output", str(out), "--checkpoint", "9")
    assert missing.returncode == 2 and "has no checkpoint 9" in missing.stderr


def test_a_run_records_versions_seed_and_environment_hash(tiny_model, runs_dir):
    env_file = EXAMPLES / "pattern_env.py"
    result = train(
        RunConfig(
            model=tiny_model,
            rl_env_module=str(env_file),
            rl_env_class="PatternEnv",
            batch_size=8,
            rl_max_new_tokens=8,
            max_steps=1,
            seed=7,
        ),
        runs_dir=runs_dir,
    )
    record = json.loads((RunFolder(result.path).path / "provenance.json").read_text())
    assert record["seed"] == 7
    assert {"torch", "transformers", "trl", "peft", "accelerate", "vllm"} <= set(record["versions"])
    assert record["versions"]["trl"] and record["versions"]["vllm"] is None
    assert record["environment"]["sha256"] == hashlib.sha256(env_file.read_bytes()).hexdigest()


def test_inspecting_the_multi_turn_hotel_environment(tiny_model, runs_dir):
    result, summary, records = inspect(
        tiny_model,
        runs_dir,
        EXAMPLES / "hotel_env.py",
        "HotelEnv",
        "--rl-env-config",
        '{"max_turns": 2, "num_requests": 8}',
        samples="8",
    )
    assert result.returncode in (0, 4), result.stdout + result.stderr
    assert len(records) == 8 and summary["errors"] == 0
    assert all(0 <= r["score"] <= 1 for r in records)
    assert '"name": "search_hotels"' in records[0]["prompt"]
    assert {"city", "nights", "hotel_ids"} <= set(records[0]["columns"])


def test_inspecting_an_agentic_environment_plays_real_episodes_with_its_tools(
    pretrained_tiny_model, runs_dir, tmp_path
):
    log = tmp_path / "calls.jsonl"
    result, summary, records = inspect(
        pretrained_tiny_model,
        runs_dir,
        ENVS / "agent_tools_env.py",
        "ToolHotel",
        "--rl-env-config",
        json.dumps({"log": str(log)}),
        "--rl-max-new-tokens",
        "96",
        "--max-tool-calls",
        "3",
        samples="32",
    )
    assert result.returncode in (0, 4), result.stdout + result.stderr
    assert len(records) == 32 and summary["errors"] == 0
    assert all(0 <= r["score"] <= 1 for r in records)
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    assert calls, "no episode of the inspection called a tool"
    answered = [t for r in records for t in r["turns"] if t.get("tool") and "result" in t]
    assert answered and {t["result"] for t in answered} <= {c.get("result") for c in calls}
    assert summary["reward_weights"] == {"get_reward": 1.0}
