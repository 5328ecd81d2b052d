"""Does the runs list scale? `grpo-tui runs --json`, the runs screen's first paint and its idle CPU, 10k runs.

Teams keep thousands of finished runs in one shared folder, and the list must cost O(1) small reads per
finished run (the `summary` each run's state.json gets at its end, docs/run-format.md) and nothing while
nothing changes. This generates N finished runs (default 10,000: completed, stopped and failed, with
warnings and crash causes, written directly in the public format with the typed events) and measures:

  cli    `python -m grpo_tui runs --json` over them, warm (page cache), median of 3
  paint  `python -m grpo_tui --runs-dir DIR` in a 120x40 tmux pane until the newest run's id shows in the
         table's first row, median of 3
  idle   the same app on the runs screen once it has loaded every run (its title counts them) and added
         their rows: its CPU time over 20 s (psutil), as a share of a core; and the same with one live run
         among them (not a target: its row changes at every refresh)

Side by side, the same runs as they were before summaries existed (a second runs dir: the same files,
hard-linked, and state.json without `summary`): `runs --json` (and the ratio), the first paint and the
idle CPU.

    .venv/bin/python bench/runs_list_bench.py [--work-dir DIR] [--runs 10000] [--only cli|paint|idle]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from app_bench import Table, Tmux, child_env, cpu_shares  # noqa: E402

from trainer_core.contract.config.run_config import RunConfig  # noqa: E402
from trainer_core.contract.run.event_log import dumps  # noqa: E402
from trainer_core.contract.run.events import (  # noqa: E402
    Checkpoint,
    Error,
    HealthWarning,
    Metrics,
    RunFinished,
    RunStarted,
    StopRequested,
)
from trainer_core.contract.run.folder import FORMAT_VERSION, RunFolder  # noqa: E402
from trainer_core.contract.run.process import process_start_time  # noqa: E402
from trainer_core.contract.run.severity import Severity  # noqa: E402
from trainer_core.contract.run.status import Status  # noqa: E402
from trainer_core.contract.run.summary import summarize  # noqa: E402

BENCHES = ("cli", "paint", "idle")
TARGETS = {"cli": 1.0, "paint": 1.5, "idle": 0.05}
BASE_TIME = 1735689600.0  # 2025-01-01T00:00:00Z
PROJECTS = ("math-grpo", "code-rl", "pattern", "tool-use", "summarize")
MODELS = ("Qwen/Qwen2.5-0.5B-Instruct", "Qwen/Qwen2.5-1.5B-Instruct", "meta-llama/Llama-3.2-1B-Instruct")
IDLE_SECONDS = 20.0
WARMUP = 5.0  # after the title counts every run, the table still adds rows in batches for a few seconds
FAILURES = (  # (error kind, message, what trainer.log ends with)
    (
        "exception",
        "OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
    ),
    ("environment", "score_episode raised KeyError: 'answer'", "KeyError: 'answer'"),
    ("trainer_exit", "the trainer was killed by SIGKILL before it could record its end", ""),
    (
        "exception",
        "RuntimeError: probability tensor contains either `inf`, `nan` or element < 0",
        "RuntimeError: probability tensor contains either `inf`, `nan` or element < 0",
    ),
)


# -- the runs -------------------------------------------------------------------------------------------


def run_plan(i: int) -> tuple[Status, int, int]:
    """Run ``i``'s status, logged steps and configured steps: 70 % completed, 20 % stopped, 10 % failed."""
    kind = i % 10
    max_steps = 30 + (i * 7) % 31
    if kind < 7:
        return Status.COMPLETED, max_steps, max_steps
    return (Status.STOPPED if kind < 9 else Status.FAILED), 5 + (i * 3) % (max_steps - 5), max_steps


def metrics_at(step: int, t: float, seed: int) -> Metrics:
    x = (step * 7919 + seed * 104729) % 1000 / 1000
    return Metrics(
        time=t,
        step=step,
        values={
            "loss": round(0.05 * x, 6),
            "grad_norm": round(0.8 + 0.3 * x, 6),
            "learning_rate": 1e-5,
            "num_tokens": float(step * 2048),
            "completions/mean_length": round(40 + 20 * x, 3),
            "completions/clipped_ratio": round(0.1 * x, 4),
            "rewards/score_episode/mean": round(x, 6),
            "rewards/score_episode/std": round(0.3 * x, 6),
            "reward": round(x, 6),
            "reward_std": round(0.3 * x, 6),
            "frac_reward_zero_std": round(x / 2, 4),
            "kl": round(0.01 * step, 6),
            "entropy": round(2 - x, 6),
            "step_time": 10.0,
            "epoch": round(step / 60, 4),
        },
    )


def config_texts(work: Path) -> dict[tuple[str, str, int], str]:
    """config.yaml of every project x model x max_steps, made once (YAML dumping 10k configs would be slow)."""
    texts = {}
    tmp = work / "config.yaml"
    for project in PROJECTS:
        for model in MODELS:
            for max_steps in range(30, 61):
                RunConfig(
                    model=model, project_name=project, rl_env_module="env.py", rl_env_class="Env", max_steps=max_steps
                ).save(tmp)
                texts[(project, model, max_steps)] = tmp.read_text()
    tmp.unlink()
    return texts


def write_run(runs: Path, legacy: Path, i: int, configs: dict) -> None:
    status, steps, max_steps = run_plan(i)
    project, model = PROJECTS[i % len(PROJECTS)], MODELS[i % len(MODELS)]
    started = BASE_TIME + i * 900.0
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(started))
    run_id = f"{stamp}-{i % 1000:03d}-{i:06x}"
    folder = RunFolder.create(runs, run_id)
    config = configs[(project, model, max_steps)]
    folder.config_file.write_text(config)
    events = [
        RunStarted(
            time=started,
            run_id=run_id,
            pid=4_000_000 + i,
            host="bench",
            world_size=1,
            project_name=project,
            model=model,
            max_steps=max_steps,
        )
    ]
    warn_at = steps - 2 if i % 4 == 0 else None
    for step in range(1, steps + 1):
        t = started + 10.0 * step
        events.append(metrics_at(step, t, i))
        if step == warn_at:
            events.append(
                HealthWarning(
                    "reward_flat",
                    Severity.WARN,
                    step,
                    "Reward has not moved for 20 steps.",
                    "Raise --lr.",
                    {"window": 20},
                    time=t + 0.1,
                )
            )
        if step % 20 == 0:
            events.append(Checkpoint(time=t + 0.2, step=step, path=f"checkpoints/checkpoint-{step}"))
    ended = started + 10.0 * steps + 2.0
    log = [f"[grpo-tui] run {run_id}: loading {model}", "[grpo-tui] training: 1 process(es) on cuda:0"]
    if status is Status.COMPLETED:
        reason = None
        events.append(Checkpoint(time=ended - 1, step=steps, path="final", final=True))
    elif status is Status.STOPPED:
        reason = "stop file: grpo-tui stop"
        events.append(StopRequested(time=ended - 1.5, reason=reason, step=steps))
        events.append(Checkpoint(time=ended - 1, step=steps, path=f"checkpoints/checkpoint-{steps}"))
    else:
        kind, reason, last_line = FAILURES[(i // 10) % len(FAILURES)]
        events.append(
            Error(
                time=ended - 1,
                kind=kind,
                message=reason,
                step=steps,
                traceback=f"Traceback (most recent call last):\n{last_line}\n" if last_line else None,
            )
        )
        log += ["Traceback (most recent call last):", '  File "trainer_core/runner.py", line 183', last_line]
    events.append(RunFinished(time=ended, status=status, reason=reason, step=steps))
    folder.events_file.write_text("".join(dumps(e.to_record()) + "\n" for e in events))
    folder.log_file.write_text("\n".join(log) + "\n")
    state = {
        "format_version": FORMAT_VERSION,
        "run_id": run_id,
        "status": status.value,
        "pid": 4_000_000 + i,
        "pid_start_time": started - 1.0,
        "root_pid": 4_100_000 + i,
        "root_start_time": started - 2.0,
        "command": ["python", "-m", "trainer_core", "worker", str(folder.path)],
        "placement": {"train_gpus": [0], "server_gpus": [], "num_processes": 1},
        "host": "bench",
        "started": started,
        "ended": ended,
        "updated": ended,
        "max_steps": max_steps,
        "last_step": steps,
        "exit_reason": reason,
    }
    # the same run as it was before summaries existed: the same files, and a state without one
    old = legacy / run_id
    old.mkdir(mode=0o700)
    for name in ("config.yaml", "events.jsonl", "trainer.log"):
        os.link(folder.path / name, old / name)
    (old / "state.json").write_text(json.dumps(state, indent=2) + "\n")
    # what RunFolder.record_end stores (the config is known here: no YAML parse per run)
    cfg = {"project_name": project, "model": model, "max_steps": max_steps}
    state["summary"] = summarize(folder, status, state, cfg)
    folder.state_file.write_text(json.dumps(state, indent=2) + "\n")


def make_runs(work: Path, count: int) -> tuple[Path, Path]:
    """``count`` finished runs in ``work/runs`` (with summaries) and ``work/runs-legacy`` (without); cached."""
    spec = {"runs": count, "version": 1}
    done = work / "runs-done.json"
    runs, legacy = work / "runs", work / "runs-legacy"
    if done.exists() and json.loads(done.read_text()) == spec:
        return runs, legacy
    import shutil

    for path in (runs, legacy):
        shutil.rmtree(path, ignore_errors=True)
        path.mkdir(parents=True)
    print(f"generating {count:,} finished runs ...", flush=True)
    t = time.perf_counter()
    configs = config_texts(work)
    for i in range(count):
        write_run(runs, legacy, i, configs)
    done.write_text(json.dumps(spec))
    size = sum(f.stat().st_size for f in runs.glob("*/events.jsonl"))
    print(f"  {count:,} runs, {size / 1e6:.0f} MB of events, in {time.perf_counter() - t:.0f} s", flush=True)
    return runs, legacy


def newest_id(runs: Path) -> str:
    return max(p.name for p in runs.iterdir() if p.is_dir())


# -- the measurements -----------------------------------------------------------------------------------


def runs_json(runs: Path) -> tuple[float, int]:
    """Wall seconds of one `grpo-tui runs --json`, and how many rows it printed."""
    t = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "grpo_tui", "runs", "--json", "--runs-dir", str(runs)],
        capture_output=True,
        text=True,
        env=child_env(),
        cwd=ROOT,
        timeout=600,
    )
    seconds = time.perf_counter() - t
    if proc.returncode != 0:
        raise RuntimeError(f"grpo-tui runs --json failed:\n{proc.stderr[-3000:]}")
    return seconds, len(json.loads(proc.stdout))


def bench_cli(work: Path, runs: Path, legacy: Path, table: Table, args) -> None:
    table.section(f"cli: `grpo-tui runs --json` over {args.runs:,} finished runs, warm")
    runs_json(runs)  # warms the page cache
    results = [runs_json(runs) for _ in range(args.repeat)]
    times = [t for t, _ in results]
    table.add(
        f"with summaries: median of {len(times)}",
        statistics.median(times),
        target=TARGETS["cli"],
        note=f"{results[0][1]:,} rows; runs: " + ", ".join(f"{t:.2f}" for t in times),
    )
    if args.skip_legacy:
        return
    runs_json(legacy)
    old = [runs_json(legacy) for _ in range(args.legacy_repeat)]
    old_times = [t for t, _ in old]
    table.add(
        f"without summaries (runs that ended before them): median of {len(old)}",
        statistics.median(old_times),
        note=f"{old[0][1]:,} rows",
    )
    table.add("ratio without / with", statistics.median(old_times) / statistics.median(times), unit="", fmt="{:.1f}x")
    base = Path(tempfile.mkdtemp(prefix="empty-runs-", dir=work))
    empty = [runs_json(base)[0] for _ in range(args.repeat)]
    table.add("an empty runs dir (interpreter start and imports)", statistics.median(empty))


def app_argv(runs: Path) -> list[str]:
    return [sys.executable, "-m", "grpo_tui", "--runs-dir", str(runs)]


def first_paint(work: Path, runs: Path, wanted: str, keep: bool = False):
    """Seconds from starting the app in tmux until ``wanted`` (the newest run id) shows in the first rows."""
    tmux = Tmux(work, "paint")
    t = time.perf_counter()
    pane = None
    try:
        pane = tmux.start(app_argv(runs))
        shown = tmux.wait_for(wanted, timeout=120, top_lines=4)
        if keep:
            return tmux, pane, (None if shown is None else shown - t)
    except BaseException:
        tmux.close(pane)
        raise
    tmux.close(pane)
    return None if shown is None else shown - t


def bench_paint(work: Path, runs: Path, legacy: Path, table: Table, args) -> None:
    table.section(f"paint: `grpo-tui --runs-dir DIR` in tmux 120x40 until the newest of {args.runs:,} runs shows")
    wanted = newest_id(runs)
    times = [first_paint(work, runs, wanted) for _ in range(args.repeat)]
    known = [t for t in times if t is not None]
    table.add(
        f"first paint: median of {len(times)}",
        statistics.median(known) if len(known) == len(times) else None,
        target=TARGETS["paint"],
        note="runs: " + ", ".join("-" if t is None else f"{t:.2f}" for t in times),
    )


def idle_cpu(work: Path, runs: Path, count: int) -> tuple[float | None, float, float, str]:
    import psutil

    tmux, pane, painted = first_paint(work, runs, newest_id(runs), keep=True)
    try:
        # idle means loaded: the title counts every run once the first load has read them all
        if painted is None or tmux.wait_for(f"({count})", timeout=300, top_lines=1) is None:
            raise RuntimeError(f"the app did not show the runs; pane:\n{tmux.screen()}")
        app, server = psutil.Process(pane), psutil.Process(tmux.server_pid())
        time.sleep(WARMUP)
        app_share, server_share = cpu_shares(app, server, IDLE_SECONDS)
        title = tmux.screen().splitlines()[0].strip()
    finally:
        tmux.close(pane)
    return painted, app_share, server_share, title


@contextlib.contextmanager
def live_run(runs: Path):
    """A running run, newest of all, whose recorded process (a `sleep`) lives while the block runs."""
    import shutil

    sleeper = subprocess.Popen(["sleep", "600"])
    folder = None
    try:
        while process_start_time(sleeper.pid) is None:
            time.sleep(0.01)
        folder = RunFolder.create(runs, "29991231-000000-000-live00")
        folder.initial_state(sleeper.pid)
        folder.write_state(status=Status.RUNNING, max_steps=100)
        yield folder
    finally:
        sleeper.kill()
        sleeper.wait()
        if folder is not None:
            shutil.rmtree(folder.path)


def bench_idle(work: Path, runs: Path, legacy: Path, table: Table, args) -> None:
    table.section(f"idle: the runs screen with {args.runs:,} runs, nothing changing, {IDLE_SECONDS:g} s window")
    _, share, server, title = idle_cpu(work, runs, args.runs)
    table.add("app process CPU (share of one core)", share * 100, unit="%", fmt="{:.1f}", target=TARGETS["idle"] * 100)
    table.add("tmux server CPU (drawing the pane)", server * 100, unit="%", fmt="{:.1f}")
    table.text("title at the end", title[:70])
    with live_run(runs):
        _, live_share, _, _ = idle_cpu(work, runs, args.runs + 1)
    table.add(
        "the same with one live run among them (its row ticks every refresh)", live_share * 100, unit="%", fmt="{:.1f}"
    )
    if args.skip_legacy:
        return
    painted, old_share, _, _ = idle_cpu(work, legacy, args.runs)
    table.add("without summaries: first paint", painted)
    table.add(
        "without summaries: app CPU while idle",
        old_share * 100,
        unit="%",
        fmt="{:.1f}",
        note="only the first load reads the files; later refreshes stat them",
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--work-dir", type=Path, default=None, help="cache the generated runs here (default: a temp dir)"
    )
    parser.add_argument("--runs", type=int, default=10_000, help="finished runs to generate")
    parser.add_argument("--only", choices=BENCHES, action="append", help="run only this benchmark (repeatable)")
    parser.add_argument("--repeat", type=int, default=3, help="measurements to take the median of")
    parser.add_argument("--legacy-repeat", type=int, default=1, help="measurements of the runs without summaries")
    parser.add_argument("--skip-legacy", action="store_true", help="leave out the runs without summaries")
    args = parser.parse_args()
    import shutil

    if shutil.which("tmux") is None and set(args.only or BENCHES) & {"paint", "idle"}:
        parser.error("the paint and idle benchmarks need tmux")
    work = args.work_dir or Path(tempfile.mkdtemp(prefix="grpo-runs-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"work dir: {work}; {os.cpu_count()} CPUs; load average {os.getloadavg()[0]:.2f}", flush=True)
    runs, legacy = make_runs(work, args.runs)
    table = Table()
    for name in BENCHES:
        if name in (args.only or BENCHES):
            print(f"running {name} ...", flush=True)
            t = time.perf_counter()
            globals()[f"bench_{name}"](work, runs, legacy, table, args)
            print(f"  done in {time.perf_counter() - t:.0f} s", flush=True)
    table.print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
