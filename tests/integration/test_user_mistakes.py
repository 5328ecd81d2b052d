"""A user's mistake is an error message, not our traceback: each mistake a new user makes in an environment,
its dataset or its tools, given to the real ``grpo-tui train``, exits 2 with one message that names what, where
and the fix, and no traceback of grpo-tui's own; the run folder records the cause. A crash inside the user's code
shows the user's frames, and only those."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from trainer_core.contract.run.events import Error, RunFinished
from trainer_core.contract.run.status import Status

from ..helpers import ENVS, cli, events_of, only_run

MISTAKES = str(ENVS / "mistake_envs.py")
OURS = ("trainer_core", "grpo_tui", "site-packages/trl", "site-packages/transformers")

CASES = {
    "not_a_class": (  # the name is in the file (a function): only an import tells, in the trainer
        ["--rl-env-class", "rows"],
        ["class 'rows' not found in environment module", "Classes defined there:", "Fine", "--rl-env-class"],
    ),
    "no_prompt_column": (["--rl-env-class", "NoPrompt"], ["no 'prompt' column", "question, answer", "Add a 'prompt'"]),
    "agent_without_reset": (
        ["--rl-env-class", "AgentWithoutReset"],
        ["AgentWithoutReset has tool functions but no reset method", "def reset(self, **row)"],
    ),
    "tool_without_docstring": (
        ["--rl-env-class", "ToolWithoutDocstring"],
        ["tool ToolWithoutDocstring.ping has no docstring", "Args:"],
    ),
    "unknown_env_config_key": (
        ["--rl-env-class", "Fine", "--rl-env-config", '{"targte": "b"}'],
        ["rl_env_config sets 'targte', which Fine.__init__ does not take (it takes: target)", "--rl-env-config"],
    ),
}


def flags(tiny_model, runs_dir, *extra) -> list[str]:
    return [
        *("--model", tiny_model, "--rl-env-module", MISTAKES, *extra),
        *("--max-steps", "1", "--batch-size", "4", "--rl-num-generations", "4", "--runs-dir", str(runs_dir)),
    ]


def train(tiny_model, runs_dir, *extra):
    return cli("train", *flags(tiny_model, runs_dir, *extra))


CRASH = ["--rl-env-class", "DatasetRaises"]


@pytest.fixture(scope="module")
def trained(tiny_model, tmp_path_factory):
    """Every case's ``grpo-tui train``, three at a time (each mostly waits on imports): {case: (result, runs dir)}."""
    cases = {**{name: argv for name, (argv, _) in CASES.items()}, "crash": CRASH}
    dirs = {name: tmp_path_factory.mktemp(name) / "runs" for name in cases}
    with ThreadPoolExecutor(max_workers=3) as pool:
        futures = {name: pool.submit(train, tiny_model, dirs[name], *argv) for name, argv in cases.items()}
        return {name: (future.result(), dirs[name]) for name, future in futures.items()}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_mistake_exits_2_with_one_message_and_no_traceback(case, trained):
    _, said = CASES[case]
    done, runs_dir = trained[case]
    out = done.stdout + done.stderr
    assert done.returncode == 2, out
    assert "Traceback" not in out and not any(f"{pkg}/" in out for pkg in OURS), out
    errors = [line for line in out.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, out
    for piece in said:
        assert piece in out, (piece, out)
    assert "run failed at step 0 (the error above)" in out  # the message is not repeated
    run = only_run(runs_dir)  # the run folder records the cause
    events = events_of(run)
    (error,) = [e for e in events if isinstance(e, Error)]
    assert said[0] in error.message and error.traceback is None and error.extra == {"user_mistake": True}
    (finished,) = [e for e in events if isinstance(e, RunFinished)]
    assert finished.status is Status.FAILED and said[0] in (finished.reason or "")
    assert "Traceback" not in (run / "trainer.log").read_text()


def test_a_class_the_file_never_names_is_refused_before_a_run_folder_is_made(tiny_model, runs_dir):
    for command in ("train", "launch"):
        done = cli(command, *flags(tiny_model, runs_dir, "--rl-env-class", "Fin"))  # a typo of Fine
        out = done.stdout + done.stderr
        assert done.returncode == 2 and "Traceback" not in out, out
        assert "error: class 'Fin' not found in environment module" in out and "Fine" in out, out
        assert "--rl-env-class" in out and not (runs_dir.exists() and any(runs_dir.iterdir()))


def test_a_crash_in_the_users_code_at_start_shows_the_users_frames_only(trained):
    done, _ = trained["crash"]
    out = done.stdout + done.stderr
    assert done.returncode == 2, out
    assert "FileNotFoundError: no such file: rows.jsonl" in out
    assert "Traceback (most recent call last):" in out
    assert "mistake_envs.py" in out and "in load_rows" in out and "in build_dataset" in out
    assert not any(f"{pkg}/" in out for pkg in OURS), out
