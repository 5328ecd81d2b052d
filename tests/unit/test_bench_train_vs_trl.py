"""bench.train_vs_trl's arithmetic and its regression guard: the training window of the process samples, the
summary per thread setting, the BENCH_RESULT line read back from an output or a --record file, two commits
compared (bench/compare.py), the tree's CPU counted to its last orphan, and bench.step_overhead's probe."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import psutil

from bench.compare import compare, parse_results, print_summary, ratio_interval, result_line, summary, verdict
from bench.process_cpu import Sample, role_of, switches, take, window
from bench.train_vs_trl import THREAD_VARS, thread_env
from tests.helpers import wait_for

ROOT = Path(__file__).resolve().parents[2]


def sample(t: float, step: int, tail: float, root: float, worker: float, woke: int = 0) -> Sample:
    cpu = {"tail": tail, "root": root, "worker": worker}
    return Sample(t, step, cpu, {"tail": woke, "root": woke, "worker": 0}, {"tail": 0, "root": 0, "worker": 3 * woke})


def test_roles_come_from_the_command_lines():
    assert role_of(["python", "-m", "trainer_core", "worker", "/r", "--echo"]) == "worker"
    assert role_of(["python", "-m", "bench.plain_trl_grpo", "m", "10", "t"]) == "worker"
    assert role_of(["python", "-m", "trainer_core", "run", "/r", "--placement", "{}"]) == "root"
    assert role_of(["python", "-m", "grpo_tui", "train", "--model", "m"]) == "tail"
    assert role_of(["tmux", "new-session"]) is None


def test_the_window_counts_only_training_and_divides_by_its_steps():
    samples = [
        sample(0.0, 0, 0.5, 0.4, 3.0),  # loading: imports cost the helpers CPU, but no step is logged yet
        sample(2.0, 10, 0.6, 0.5, 5.0, woke=10),
        sample(4.0, 30, 0.62, 0.51, 7.0, woke=30),
        sample(6.0, 50, 0.64, 0.52, 9.0, woke=50),
    ]
    found = window(samples)
    assert found is not None
    assert found["steps"] == 40 and found["seconds"] == 4.0
    assert found["tail"]["cpu_ms_per_step"] == 1.0 and found["root"]["cpu_ms_per_step"] == 0.5
    assert found["worker"]["cpu_share"] == 1.0 and found["tail"]["wakeups_per_s"] == 10.0
    assert found["worker"]["preemptions_per_s"] == 30.0
    assert window(samples[:2]) is None  # one sample in training: no window


def test_a_live_tree_is_sampled_by_role_with_its_wake_ups():
    # a child whose command line reads as a run's root: it starts, sleeps (a wake-up) and waits to be ended
    code = "import time; sum(range(3_000_000)); time.sleep(0.05); time.sleep(60)"
    child = subprocess.Popen([sys.executable, "-c", code, "trainer_core", "run"], stdout=subprocess.DEVNULL)
    try:
        me = psutil.Process(os.getpid())
        wait_for(
            lambda: (t := take(me, 7)).wakeups["root"] >= 1 and t.cpu["root"] > 0, what="the child's first wake-up"
        )
        got = take(me, 7)
    finally:
        child.kill()
        child.wait()
    assert got.step == 7 and got.cpu["root"] > 0 and got.cpu["worker"] == 0 and got.wakeups["tail"] == 0
    assert switches(child.pid) == (0, 0)  # gone: nothing to read, no error


# In a process of its own: adopting orphans would make every detached run a later test starts this worker's child.
TREE_CPU = """
import subprocess, sys
from bench.process_cpu import adopt_orphans, children_cpu, reap_adopted
burn = "import time; t = time.process_time(); exec('while time.process_time() - t < 0.6: pass')"
# the middle process starts the burner in a new session and exits at once: the burner is orphaned, as a run's root is
middle = f"import subprocess, sys; subprocess.Popen([sys.executable, '-c', {burn!r}], start_new_session=True)"
adopted = adopt_orphans()
before = children_cpu()
subprocess.run([sys.executable, "-c", middle], check=True)
reaped = reap_adopted(set())
print(adopted, reaped, children_cpu() - before)
"""


def test_the_tree_cpu_counts_an_orphan_that_outlived_its_parent():
    out = subprocess.run(
        [sys.executable, "-c", TREE_CPU], cwd=ROOT, capture_output=True, text=True, timeout=120, check=True
    ).stdout.split()
    assert out[:2] == ["True", "True"]
    assert float(out[2]) >= 0.55  # the burner's 0.6 s, which a parent that exited never reaped


def test_default_threads_unset_the_variables_and_n_sets_them_all():
    base = {"OMP_NUM_THREADS": "4", "MKL_NUM_THREADS": "4", "PATH": "/bin"}
    assert thread_env(None, base) == {"PATH": "/bin"}
    assert thread_env(1, base) == {"PATH": "/bin", **dict.fromkeys(THREAD_VARS, "1")}


def run(
    side: str, threads: int | None, rate: float, helpers_ms: float = 0.0, disturbed: bool = False, cpu: float = 90.0
) -> dict:
    procs = {
        "tail": {"cpu_ms_per_step": helpers_ms, "wakeups_per_s": 5.0},
        "root": {"cpu_ms_per_step": 0.0, "wakeups_per_s": 0.5},
        "worker": {"preemptions_per_s": 20.0, "cpu_ms_per_step": cpu},
    }
    return {"side": side, "threads": threads, "steps_per_s": rate, "processes": procs, "disturbed": disturbed}


def test_the_summary_takes_the_median_per_side_and_thread_setting():
    rounds = [
        run("grpo-tui", None, 9.0, 1.0),
        run("plain", None, 10.0),
        run("grpo-tui", None, 12.0, 3.0),
        run("plain", None, 12.0),
        run("grpo-tui", None, 30.0, 2.0),
        run("plain", None, 11.0),
        run("grpo-tui", 1, 15.0),
        run("plain", 1, 16.0),
    ]
    result = summary(rounds, [None, 1], ("grpo-tui", "plain"), disturbed=0)
    default = result["settings"]["default"]
    assert default["ratio_median"] == round(12.0 / 11.0, 4)
    assert default["paired_ratio"] == 1.0  # the rounds' own: 0.9, 1.0, 2.7
    assert default["helper_cpu_ms_per_step"] == 2.0 and default["helper_wakeups_per_s"] == 5.5
    assert default["trainer_preemptions_per_s"] == {"grpo-tui": 20.0, "plain": 20.0}
    assert result["settings"]["1"]["ratio_median"] == round(15.0 / 16.0, 4)


def test_the_ratio_comes_with_how_far_the_rounds_let_it_move(capsys):
    steady = ratio_interval([20.0, 20.2, 19.8, 20.1, 19.9], [20.0, 20.1, 19.9, 20.0, 20.0])
    assert steady is not None and 0.98 <= steady[0] <= 1.0 <= steady[1] <= 1.02
    assert verdict(steady) == "the target holds"
    noisy = ratio_interval([20.0, 15.0, 23.0, 17.0, 21.0], [18.0, 22.0, 16.0, 21.0, 19.0])
    assert noisy is not None and noisy[0] < 0.98 < noisy[1] and "cannot tell" in verdict(noisy)
    slow = ratio_interval([18.0, 18.2, 17.9, 18.1], [20.0, 20.1, 19.9, 20.2])
    assert slow is not None and slow[1] < 0.98 and verdict(slow) == "below the target"
    assert ratio_interval([1.0, 2.0], [1.0, 2.0]) is None and verdict(None) == "too few rounds to tell"
    assert ratio_interval([20.0, 15.0, 23.0], [18.0, 22.0, 16.0]) == ratio_interval(
        [20.0, 15.0, 23.0], [18.0, 22.0, 16.0]
    )
    rounds = [
        run(side, None, rate)
        for pair in zip([20.0, 15.0, 23.0], [18.0, 22.0, 16.0])
        for side, rate in zip(("grpo-tui", "plain"), pair)
    ]
    result = summary(rounds, [None], ("grpo-tui", "plain"), disturbed=0)
    assert result["settings"]["default"]["interval"] == ratio_interval([20.0, 15.0, 23.0], [18.0, 22.0, 16.0])
    print_summary(result)
    shown = capsys.readouterr().out
    assert "90 % interval of the ratio, resampling the rounds" in shown
    assert f"median of the rounds' own ratios: {20 / 18:.3f}" in shown  # 1.11, 0.68, 1.44
    assert "paired" not in shown  # no other side's ratio is made of it


def test_the_runs_other_work_disturbed_are_left_out_of_the_quiet_ratio(capsys):
    rounds = [
        run("grpo-tui", None, 20.0, cpu=100.0),
        run("plain", None, 10.0, disturbed=True, cpu=80.0),
        run("grpo-tui", None, 5.0, disturbed=True, cpu=110.0),
        run("plain", None, 21.0, cpu=90.0),
        run("grpo-tui", None, 22.0, cpu=96.0),
        run("plain", None, 19.0, cpu=86.0),
    ]
    result = summary(rounds, [None], ("grpo-tui", "plain"), disturbed=2)
    default = result["settings"]["default"]
    assert default["ratio_median"] == round(20.0 / 19.0, 4)
    assert default["quiet"] == {"ratio": round(21.0 / 20.0, 4), "runs": {"grpo-tui": 2, "plain": 2}}
    assert default["trainer_cpu_ms_per_step"] == {"grpo-tui": 100.0, "plain": 86.0}
    print_summary(result | {"disturbed_runs": 2})
    out = capsys.readouterr().out
    assert "runs marked quiet only (2 grpo-tui, 2 plain): 1.050" in out
    assert "trainer CPU per step: grpo-tui 100.0 ms, plain 86.0 ms" in out
    only_noise = summary(
        [run("grpo-tui", None, 5.0, disturbed=True), run("plain", None, 9.0)], [None], ("grpo-tui", "plain"), 1
    )
    assert only_noise["settings"]["default"]["quiet"]["ratio"] is None


def result(ratio: float, threads: dict | None = None, sha: str = "a" * 40) -> dict:
    settings = {"default": {"ratio_median": ratio}, **(threads or {})}
    return {"bench": "train_vs_trl", "commit": sha, "ratio_median": ratio, "settings": settings}


def test_results_are_read_back_from_an_output_or_a_record_skipping_everything_else():
    output = "\n".join(
        [
            "round  threads  side ...",
            result_line(result(1.01)),
            'BENCH_RESULT {"bench": "eval_cost"}',
            json.dumps(result(0.99)),
            '{"bench": "train_vs_trl", "ratio_med',  # a torn last line
        ]
    )
    assert [r["ratio_median"] for r in parse_results(output)] == [1.01, 0.99]


def test_a_fall_below_the_target_or_beyond_the_tolerance_is_a_regression():
    before = [result(1.02, {"1": {"ratio_median": 1.0}})]
    rows = compare(before, [result(0.78, {"1": {"ratio_median": 1.0}})])
    assert [(r["threads"], r["ok"]) for r in rows] == [("1", True), ("default", False)]
    assert compare([result(1.05)], [result(1.0)])[0]["ok"] is False  # above the target, but 0.05 worse
    assert compare([result(1.0)], [result(0.99)])[0]["ok"] is True


def test_compare_exits_1_on_a_regression_and_names_a_file_without_results(tmp_path):
    a, b, empty = tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "empty.txt"
    a.write_text(json.dumps(result(1.02)) + "\n")
    b.write_text("log line\n" + result_line(result(0.80, sha="b" * 40)) + "\n")
    empty.write_text("nothing\n")
    cmd = [sys.executable, "-m", "bench.compare"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([*cmd, str(a), str(b)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "REGRESSION" in done.stdout and "1.020 -> 0.800" in done.stdout
    same = subprocess.run([*cmd, str(a), str(a)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert same.returncode == 0 and "ok" in same.stdout
    bad = subprocess.run([*cmd, str(a), str(empty)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and str(empty) in bad.stderr and "--record" in bad.stderr


PROBE = """
from bench import step_overhead_probe as probe
probe.instrument()
from trainer_core.contract.health.monitor import HealthMonitor
from trainer_core.contract.health.sample_stats import SampleStats
from trainer_core.training import trl_setup
from trainer_core.training.callbacks import EventStreamCallback
HealthMonitor().feed(1, {"reward": 0.5, "loss": 0.1})
SampleStats().pop()
print(sorted(probe.CALLS.items()), EventStreamCallback.on_log.__name__, trl_setup._sample_recorder.__name__)
"""


def test_the_step_overhead_probe_times_the_trainers_own_methods():
    # in a process of its own: the probe wraps the classes for the whole process
    out = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, capture_output=True, text=True, timeout=300, check=True
    ).stdout
    assert "[('health', 1), ('stats_pop', 1)] wrapper <lambda>" in out
