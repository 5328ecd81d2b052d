"""Held-out evaluation on real training: a reward that can be gamed (the share of the letter 'a') against an
independent task metric (the answer is a plain sentence). The base model is scored at step 0, evals follow every
N steps, the divergence rule fires as the metric falls while the reward rises, --keep-best keeps the early
checkpoint, and `grpo-tui eval` ranks the models as the events did. Then the same from a dataset run, from a
share of the training prompts, and from a TRL recipe; and bad settings refused with the fix."""

from __future__ import annotations

import json

import pytest
import yaml

from trainer_core.contract.run.events import Error, Eval, HealthWarning, Metrics, RunFinished
from trainer_core.contract.run.status import Status

from ..helpers import ENVS, cli, events_of, only_run

pytestmark = pytest.mark.slow
ENV = ENVS / "heldout_env.py"
METRIC = "answer_is_sentence"
EVERY = 3
COMMON = ("--rl-num-generations", "4", "--batch-size", "8", "--rl-max-new-tokens", "12", "--rl-kl-coef", "0")


def env_run(model: str, runs_dir, *extra: str) -> list[str]:
    return [
        "train",
        "--model",
        model,
        "--rl-env-module",
        str(ENV),
        "--rl-env-class",
        "HeldOutPatternEnv",
        *COMMON,
        "--runs-dir",
        str(runs_dir),
        *extra,
    ]


@pytest.fixture(scope="module")
def gamed_run(pretrained_tiny_model, tmp_path_factory):
    runs_dir = tmp_path_factory.mktemp("gamed") / "runs"
    result = cli(
        *env_run(pretrained_tiny_model, runs_dir),
        "--lr", "4e-4", "--max-steps", "30", "--save-steps", str(EVERY), "--save-total-limit", "1",
        "--eval-steps", str(EVERY), "--keep-best", METRIC,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    return only_run(runs_dir)


def evals_of(run) -> list[Eval]:
    return [e for e in events_of(run) if isinstance(e, Eval)]


def test_the_base_model_is_scored_first_then_every_n_steps(gamed_run):
    evals = evals_of(gamed_run)
    assert evals[0].step == 0 and evals[0].base and evals[0].train_reward is None
    assert [e.step for e in evals] == list(range(0, 31, EVERY))
    assert all(METRIC in e.metrics and "reward" in e.metrics and e.task_metrics == [METRIC] for e in evals)
    assert all(set(e.metrics[METRIC]) == {"mean", "pass@4", "std"} and e.seconds > 0 for e in evals)
    assert evals[0].value(METRIC) >= 0.6  # the pre-trained model answers with sentences
    assert evals[-1].value(METRIC) <= 0.2 and evals[-1].value("reward") > evals[0].value("reward") + 0.4
    log = (gamed_run / "trainer.log").read_text()
    assert "deprecated" not in log.lower(), "a deprecation warning on the locked versions"


def test_the_divergence_rule_fires_within_two_evals_of_the_fall(gamed_run):
    events = events_of(gamed_run)
    evals = [e for e in events if isinstance(e, Eval)]
    best = evals[0].value(METRIC)
    fall = None
    for event in evals[1:]:
        value = event.value(METRIC)
        if value is not None and value <= best - 0.1:
            fall = event.step
            break
        best = max(best, value or 0.0)
    assert fall is not None
    fired = [w for w in events if isinstance(w, HealthWarning) and w.rule == "reward_task_divergence"]
    assert fired, [w.rule for w in events if isinstance(w, HealthWarning)]
    assert fired[0].step <= fall + 2 * EVERY
    assert METRIC in fired[0].message and "→" in fired[0].message and "reward" in fired[0].message


def test_keep_best_keeps_the_early_checkpoint_beside_the_last(gamed_run):
    evals = {e.step: e.value(METRIC) for e in evals_of(gamed_run) if e.step}
    saved = sorted(int(p.name.split("-")[1]) for p in (gamed_run / "checkpoints").glob("checkpoint-*"))
    best_step = max((s for s in evals if s % EVERY == 0), key=lambda s: (evals[s], s))
    assert best_step < 30 - EVERY  # older than the newest save_total_limit=1
    assert saved == [best_step, 30]
    recorded = json.loads((gamed_run / "checkpoints" / f"checkpoint-{best_step}" / "grpo_tui_eval.json").read_text())
    assert recorded["step"] == best_step and recorded["metrics"][METRIC]["mean"] == evals[best_step]
    listing = cli("checkpoints", str(gamed_run), "--json")
    assert listing.returncode == 0, listing.stderr
    assert '"best"' in listing.stdout and f"checkpoint-{best_step}" in listing.stdout


def test_grpo_tui_eval_ranks_the_models_as_the_events_did(gamed_run):
    result = cli(
        "eval", str(gamed_run), "--checkpoint", "best", "--checkpoint", "final", "--checkpoint", "base", "--json"
    )
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout)
    evals = {e.step: e for e in evals_of(gamed_run)}
    scores = {m["checkpoint"]: m["metrics"][METRIC]["mean"] for m in report["models"]}
    steps = {m["checkpoint"]: m["step"] for m in report["models"]}
    recorded = {name: evals[step].value(METRIC) for name, step in steps.items()}
    assert steps["base"] == 0 and steps["final"] == 30
    assert sorted(scores, key=lambda n: -scores[n]) == sorted(recorded, key=lambda n: -(recorded[n] or 0))
    for name in scores:  # an eval seeds its own sampling: the same model scores as it did during the run
        assert scores[name] == pytest.approx(recorded[name], abs=0.07)
    assert report["metric"] == METRIC and report["changed"]
    assert report["engine"] == "transformers" and report["engine_starts"] == 0
    assert all(e.engine == "transformers" for e in evals.values())
    assert all(len(m["samples"]) == report["prompts"] and m["seconds"] > 0 for m in report["models"])


def test_grpo_tui_eval_at_temperature_0_is_greedy_and_vllm_is_named_when_missing(gamed_run):
    greedy = cli("eval", str(gamed_run), "--checkpoint", "final", "--temperature", "0", "--json")
    assert greedy.returncode == 0, greedy.stderr[-3000:]
    report = json.loads(greedy.stdout)
    assert report["temperature"] == 0
    for stats in report["models"][0]["metrics"].values():  # the K samples of a prompt are one: best == mean
        assert stats["pass@4"] == pytest.approx(stats["mean"]) and stats["mean"] is not None
    missing = cli("eval", str(gamed_run), "--checkpoint", "final", "--engine", "vllm")
    assert missing.returncode == 2 and "--engine vllm needs vLLM" in missing.stderr, missing.stderr
    assert "--engine transformers" in missing.stderr
    bad = cli("eval", str(gamed_run), "--temperature", "-1")
    assert bad.returncode == 2 and "--temperature must be 0 (greedy) or more, got -1.0" in bad.stderr, bad.stderr


def test_the_eval_does_not_change_the_training(pretrained_tiny_model, tmp_path):
    """The same seed trains the same with evals between steps as without: the eval keeps its own random state."""
    runs = {}
    plain = str(ENV.parents[2] / "examples" / "pattern_env.py")
    for name, module, cls, extra in (
        ("on", str(ENV), "HeldOutPatternEnv", ("--eval-steps", "1")),
        ("off", plain, "PatternEnv", ()),
    ):
        args = env_run(pretrained_tiny_model, tmp_path / name, "--max-steps", "4", *extra)
        args[args.index("--rl-env-module") + 1] = module
        args[args.index("--rl-env-class") + 1] = cls
        result = cli(*args, "--rl-env-config", '{"num_prompts": 32}')
        assert result.returncode == 0, result.stderr[-3000:]
        runs[name] = events_of(only_run(tmp_path / name))
    assert len([e for e in runs["on"] if isinstance(e, Eval)]) == 5 and not any(
        isinstance(e, Eval) for e in runs["off"]
    )

    def series(events):
        return [(m.step, m.get("reward"), m.get("loss")) for m in events if isinstance(m, Metrics)]

    assert series(runs["on"]) == series(runs["off"])


def prompts_file(path, rows: int, start: int = 0) -> str:
    lines = [json.dumps({"prompt": f"Write the letter a {i} times:"}) for i in range(start, start + rows)]
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def dataset_run(model, runs_dir, data: str, *extra: str) -> list[str]:
    return [
        "train", "--model", model, "--dataset", data, "--reward-func", f"{ENVS / 'hacking_rewards.py'}:letter_format",
        *COMMON, "--lr", "2e-3", "--max-steps", "6", "--save-steps", "3", "--runs-dir", str(runs_dir), *extra,
    ]  # fmt: skip


def test_a_dataset_run_with_an_eval_dataset_and_metric(pretrained_tiny_model, tmp_path):
    data = prompts_file(tmp_path / "train.jsonl", 16)
    held = prompts_file(tmp_path / "held.jsonl", 6, start=100)
    result = cli(
        *dataset_run(pretrained_tiny_model, tmp_path / "runs", data),
        "--eval-dataset", held, "--eval-metric", f"{ENV}:answer_is_sentence", "--eval-generations", "2",
        "--keep-best", "answer_is_sentence:2",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    evals = evals_of(only_run(tmp_path / "runs"))
    assert [e.step for e in evals] == [0, 3, 6]
    assert all(e.prompts == 6 and e.generations == 2 and e.task_metrics == ["answer_is_sentence"] for e in evals)
    assert {"answer_is_sentence", "reward"} <= set(evals[0].metrics) and "pass@2" in evals[0].metrics["reward"]


def test_an_eval_fraction_holds_out_seeded_rows_and_a_resume_evaluates_on_from_the_record(
    pretrained_tiny_model, tmp_path
):
    data = prompts_file(tmp_path / "train.jsonl", 16)
    result = cli(*dataset_run(pretrained_tiny_model, tmp_path / "runs", data), "--eval-fraction", "0.25")
    assert result.returncode == 0, result.stderr[-3000:]
    run = only_run(tmp_path / "runs")
    rows = json.loads((run / "eval_rows.json").read_text())
    assert rows["rows"] == 16 and len(rows["held_out"]) == 4 and rows["seed"] == 42
    evals = evals_of(run)
    assert [e.step for e in evals] == [0, 3, 6] and all(e.prompts == 4 for e in evals)
    held = {f"Write the letter a {i} times:" for i in rows["held_out"]}
    trained = {json.loads(line)["prompt"] for line in (run / "samples.jsonl").read_text().splitlines()}
    assert trained and not trained & held  # never trained on

    # resumed to step 9, the evals go on from the record: no second baseline, step 6 not scored again
    resumed = cli("train", "--resume", run.name, "--runs-dir", str(run.parent), "--max-steps", "9")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    evals = evals_of(run)
    assert [(e.step, e.base) for e in evals] == [(0, True), (3, False), (6, False), (9, False)]
    assert json.loads((run / "eval_rows.json").read_text()) == rows and evals[-1].prompts == 4


def test_a_recipe_with_eval_keys_trains_with_evals_and_exports_them(pretrained_tiny_model, tmp_path):
    from datasets import Dataset, DatasetDict

    rows = [{"prompt": f"Write the letter a {i} times:"} for i in range(20)]
    folder = tmp_path / "data"
    DatasetDict({"train": Dataset.from_list(rows[:16]), "test": Dataset.from_list(rows[16:])}).save_to_disk(str(folder))
    recipe = {
        "model_name_or_path": pretrained_tiny_model, "dataset_name": str(folder), "dataset_test_split": "test",
        "reward_funcs": [f"{ENVS / 'hacking_rewards.py'}:letter_format"], "eval_strategy": "steps", "eval_steps": 2,
        "num_generations_eval": 2, "num_generations": 4, "per_device_train_batch_size": 8, "max_completion_length": 8,
        "max_steps": 4, "learning_rate": 1e-3, "bf16": False, "logging_steps": 1, "save_steps": 2,
    }  # fmt: skip
    path = tmp_path / "recipe.yaml"
    path.write_text(yaml.safe_dump(recipe))
    result = cli("train", "--config", str(path), "--runs-dir", str(tmp_path / "runs"))
    assert result.returncode == 0, result.stderr[-3000:]
    run = only_run(tmp_path / "runs")
    events = events_of(run)
    assert isinstance(events[-1], RunFinished) and events[-1].status is Status.COMPLETED
    assert [(e.step, e.prompts, e.generations) for e in events if isinstance(e, Eval)] == [(2, 4, 2), (4, 4, 2)]
    exported = cli("export", str(run), "--format", "trl")
    assert exported.returncode == 0, exported.stderr
    again = yaml.safe_load(exported.stdout)
    assert (again["eval_strategy"], again["eval_steps"], again["dataset_test_split"]) == ("steps", 2, "test")
    assert again["num_generations_eval"] == 2 and again["eval_on_start"] is False


@pytest.mark.parametrize(
    ("extra", "field", "fix"),
    [
        (("--eval-metric", f"{ENV}:nope"), "eval_metric", "no function 'nope'"),
        (("--eval-metric", f"{ENV}:not_a_number"), "eval metric not_a_number returned 'high'", "number in [0, 1]"),
        (("--keep-best", "accuracy"), "keep_best names metric 'accuracy'", "answer_is_sentence"),
        (("--eval-fraction", "1.5"), "eval_fraction must be a number in (0, 1)", "--eval-fraction 0.1"),
        (("--eval-dataset", "NOPROMPT"), "no column 'prompt'", "prompt_column"),
    ],
)
def test_bad_eval_settings_are_refused_with_the_fix(pretrained_tiny_model, tmp_path, extra, field, fix):
    data = prompts_file(tmp_path / "train.jsonl", 8)
    if "NOPROMPT" in extra:
        (tmp_path / "held.jsonl").write_text(json.dumps({"question": "hi"}) + "\n")
        extra = ("--eval-dataset", str(tmp_path / "held.jsonl"))
    args = dataset_run(pretrained_tiny_model, tmp_path / "runs", data, *extra)
    if "--keep-best" in extra:
        args += ["--eval-metric", f"{ENV}:answer_is_sentence"]
    if "--keep-best" in extra or "--eval-metric" in extra:
        args += ["--eval-fraction", "0.25"]
    result = cli(*args)
    assert result.returncode != 0
    runs = tmp_path / "runs"
    said, logs = result.stderr, ""
    for run in runs.iterdir() if runs.exists() else []:  # refused before the model loaded: no step was trained
        events = events_of(run)
        assert not any(isinstance(e, Metrics) for e in events)
        said += "".join(e.message for e in events if isinstance(e, Error))
        logs += (run / "trainer.log").read_text() if (run / "trainer.log").exists() else ""
    assert field in said and fix in said, said[-2000:]
    assert "Traceback" not in result.stderr + logs
