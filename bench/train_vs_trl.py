"""Does grpo-tui cost training speed? Steps per second of ``grpo-tui train`` against a plain TRL script.

grpo-tui wraps TRL's GRPOTrainer with an event stream, a stop controller, sample recording, a root process
(stall watch, alerts) and a foreground viewer tailing the run folder; all of that should be close to free.
This runs the same tiny model with the same settings both ways (bench/plain_trl_grpo.py is the plain side),
alternating the sides in ABBA order (grpo-tui, plain, then plain, grpo-tui), so drift in the machine's speed hits
both alike, and prints the ratio of the median steps per second (target >= 0.98), the CPU time and wake-ups of
grpo-tui's helper processes per step (bench/process_cpu.py), and one ``BENCH_RESULT {json}`` line
(bench/compare.py).

The default run uses torch's default threads (OMP_NUM_THREADS and MKL_NUM_THREADS removed from the children's
environment); ``--threads N`` adds, in every round, a pair with both set to N. ``--notify`` configures an
alert URL (a JSON webhook on a local receiver the bench runs), as a user with alerts has. ``--also worker``
and ``--also root`` add sides that leave out the foreground tail (``root``: the run's root alone) or every
helper (``worker``: the trainer alone), to tell which one costs. Steps per second come from the per-step
``on_log`` timestamps, first to last, so process start, model loading and the final save are not counted.

``--busy`` runs everything beside one busy process in a session of its own, as another user's work would be: both
sides slow down, and grpo-tui must not slow down more (a run's root in a session of its own once made it 25 times
slower there: trainer_core/contract/run/process.py ``detached_group``).

    python -m bench.train_vs_trl [--steps 200] [--rounds 3] [--threads N] [--notify] [--busy] [--record FILE]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import psutil

from bench.common import PATTERN_FLAGS, ROOT, Receiver, busy_process, child_env, module_cmd
from bench.compare import helper_figures, preemptions, print_summary, result_line, summary
from bench.process_cpu import Sampler, adopt_orphans, children_cpu, machine_busy_seconds, reap_adopted, window
from trainer_core.commands.tiny_model import build_tiny_model
from trainer_core.contract.config.run_config import RunConfig
from trainer_core.contract.run.event_log import last_step, read_events, read_records
from trainer_core.contract.run.events import Metrics
from trainer_core.contract.run.folder import RunFolder
from trainer_core.contract.run.process import run_env

# A run during which other processes took more than this share of one CPU is flagged as disturbed: with
# torch's threads on every core, even a little outside work can slow a step many times over.
DISTURBED_SHARE = 0.1
THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")
EXTRA_SIDES = ("root", "worker")


def thread_env(threads: int | None, base: dict | None = None) -> dict:
    """The children's environment: the thread variables removed (torch's default) or all set to ``threads``."""
    env = {k: v for k, v in (base or child_env()).items() if k not in THREAD_VARS}
    if threads is not None:
        env.update(dict.fromkeys(THREAD_VARS, str(threads)))
    return env


def run_child(cmd: list[str], log: Path, env: dict, steps_done) -> dict:
    """Run ``cmd`` with its output in ``log`` (exit showing the log if it fails), sampling its process tree.

    Returns its wall time, the CPU seconds the rest of the machine took meanwhile (on a shared machine that
    is what makes one run slower than its neighbours) and its processes' CPU by role over training. The tree's
    own CPU is counted exactly where this process can adopt its orphans (``adopt_orphans``: Linux), else from
    the last sample, which misses what a process spent after it."""
    exact = adopt_orphans()
    keep = {child.pid for child in psutil.Process().children()}  # e.g. --busy's spinning process: other work
    start, busy, reaped = time.perf_counter(), machine_busy_seconds(), children_cpu()
    with open(log, "w", encoding="utf-8") as out:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=ROOT)
        sampler = Sampler(proc.pid, steps_done)
        code = proc.wait()
        exact = reap_adopted(keep) and exact
        sampler.stop()
    if code != 0:
        tail = log.read_text(encoding="utf-8", errors="replace").splitlines()[-40:]
        sys.exit(f"{cmd[1:4]} exited with {code}; last lines of {log}:\n" + "\n".join(tail))
    wall, busy_after = time.perf_counter() - start, machine_busy_seconds()
    if exact:
        own = children_cpu() - reaped
    else:
        own = sum(sampler.samples[-1].cpu.values()) if sampler.samples else 0.0
    others = None if busy is None or busy_after is None else max(0.0, busy_after - busy - own)
    return {"wall_s": round(wall, 2), "other_cpu_s": None if others is None else round(others, 2)} | {
        "processes": window(sampler.samples)
    }


def steps_per_second(points: list[tuple[int, float]]) -> float:
    points = sorted(points)
    if len(points) < 2 or points[-1][1] <= points[0][1]:
        raise ValueError(f"need two timed steps at least, got {points}")
    (first_step, first_time), (last_step_, last_time) = points[0], points[-1]
    return (last_step_ - first_step) / (last_time - first_time)


def events_rate(events_file: Path) -> float:
    events = read_events(events_file)
    return steps_per_second([(e.step, e.time) for e in events if isinstance(e, Metrics) and e.time is not None])


def one_events_file(runs: Path) -> Path:
    found = sorted(runs.rglob("events.jsonl"))
    if len(found) != 1:
        sys.exit(f"expected one events.jsonl under {runs}, found {len(found)}")
    return found[0]


def latest_step(runs: Path) -> int:
    found = sorted(runs.glob("*/events.jsonl"))
    return last_step(found[-1]) if found else 0


class Bench:
    def __init__(self, args, work: Path, notify_url: str | None):
        self.args, self.work, self.notify_url = args, work, notify_url
        self.config_file: Path | None = None  # the last grpo-tui run's config.yaml, for the extra sides

    def grpo_tui(self, tag: str, env: dict) -> dict:
        runs = self.work / f"{tag}-runs"
        notify = ["--notify", self.notify_url] if self.notify_url else []
        cmd = [sys.executable, "-m", "grpo_tui", "train", "--model", str(self.args.model_dir), *PATTERN_FLAGS]
        cmd += ["--lr", "0.002", "--max-steps", str(self.args.steps), "--save-steps", "1000000"]
        cmd += ["--mixed-precision", "no", "--runs-dir", str(runs), *notify]
        found = run_child(cmd, self.work / f"{tag}.log", env, lambda: latest_step(runs))
        events = one_events_file(runs)
        self.config_file = events.parent / "config.yaml"
        return found | {"steps_per_s": events_rate(events)}

    def plain(self, tag: str, env: dict) -> dict:
        times = self.work / f"{tag}-times.jsonl"
        cmd = module_cmd("bench.plain_trl_grpo", self.args.model_dir, self.args.steps, times)
        cmd += ["--output-dir", str(self.work / f"{tag}-output")]
        found = run_child(cmd, self.work / f"{tag}.log", env, lambda: len(read_records(times)))
        rate = steps_per_second([(p["step"], p["time"]) for p in read_records(times)])
        return found | {"steps_per_s": rate}

    def part(self, side: str, tag: str, env: dict) -> dict:
        """The trainer under its root alone (``root``) or alone (``worker``), in a folder made from the last
        grpo-tui run's config.yaml, as ``grpo-tui train`` makes one."""
        assert self.config_file is not None
        folder = RunFolder.create(self.work / f"{tag}-runs")
        folder.save_config(RunConfig.load(self.config_file))
        folder.write_state(run_id=folder.run_id, status="starting", started=round(time.time(), 3))
        if side == "root":
            cmd = [sys.executable, "-m", "trainer_core", "run", str(folder.path), "--placement", "{}"]
        else:
            cmd = [sys.executable, "-m", "trainer_core", "worker", str(folder.path), "--echo"]
        found = run_child(
            cmd, self.work / f"{tag}.log", run_env(folder.path, env), lambda: last_step(folder.events_file)
        )
        return found | {"steps_per_s": events_rate(folder.events_file)}

    def run(self) -> dict:
        args = self.args
        settings: list[int | None] = [None, *([args.threads] if args.threads else [])]
        sides = ("grpo-tui", "plain", *args.also)
        print(
            f"{'round':>5}  {'threads':<7}  {'side':<8}  {'steps/s':>8}  {'wall s':>7}  {'other CPU s':>12}  "
            f"{'helpers ms/step':>15}  {'wake-ups/s':>10}  {'trainer preempt/s':>15}",
            flush=True,
        )
        rounds, disturbed = [], 0
        for r in range(1, args.rounds + 1):
            for threads in settings if r % 2 else settings[::-1]:
                env = thread_env(threads)
                for side in sides if r % 2 else sides[::-1]:  # ABBA: drift in the machine's speed hits all sides
                    tag = f"{side}-{threads or 'default'}-{r}"
                    if side == "grpo-tui":
                        found = self.grpo_tui(tag, env)
                    elif side == "plain":
                        found = self.plain(tag, env)
                    else:
                        found = self.part(side, tag, env)
                    found |= {"round": r, "side": side, "threads": threads}
                    rounds.append(found)
                    flag = found["other_cpu_s"] is not None and found["other_cpu_s"] > DISTURBED_SHARE * found["wall_s"]
                    found["disturbed"] = flag
                    disturbed += flag
                    print(row(found, flag), flush=True)
        return summary(rounds, settings, sides, disturbed)


def row(found: dict, flag: bool) -> str:
    other = "?" if found["other_cpu_s"] is None else f"{found['other_cpu_s']:.1f}" + (" !" if flag else "  ")
    helpers = helper_figures(found) if found["side"] != "plain" else None
    ms, woke = ("-", "-") if helpers is None else (f"{helpers[0]:.2f}", f"{helpers[1]:.1f}")
    preempted = preemptions(found)
    threads = found["threads"] or "default"
    return (
        f"{found['round']:>5}  {threads:<7}  {found['side']:<8}  {found['steps_per_s']:>8.3f}  "
        f"{found['wall_s']:>7.1f}  {other:>12}  {ms:>15}  {woke:>10}  "
        f"{'-' if preempted is None else f'{preempted:.0f}':>15}"
    )


def commit() -> tuple[str | None, bool | None]:
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True)
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True, text=True
        )
    except (OSError, subprocess.CalledProcessError):
        return None, None
    return sha.stdout.strip() or None, bool(dirty.stdout.strip())


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.train_vs_trl", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--steps", type=int, default=200, help="optimizer steps per training run (default: 200)")
    parser.add_argument("--rounds", type=int, default=3, help="grpo-tui/plain pairs per thread setting (default: 3)")
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        metavar="N",
        help="also run each round with OMP_NUM_THREADS=MKL_NUM_THREADS=N on both sides",
    )
    parser.add_argument(
        "--notify",
        action="store_true",
        help="give grpo-tui an alert URL (json:// to a local receiver the bench runs); default: none",
    )
    parser.add_argument(
        "--also",
        action="append",
        default=[],
        choices=EXTRA_SIDES,
        help="add a side: root (no foreground tail) or worker (the trainer alone); repeatable",
    )
    parser.add_argument(
        "--record",
        type=Path,
        default=None,
        metavar="FILE",
        help="append the BENCH_RESULT JSON line to FILE (JSON lines), for python -m bench.compare",
    )
    parser.add_argument(
        "--busy",
        action="store_true",
        help="run everything beside one busy process in a session of its own (another user's work on the "
        "machine): both sides slow down; grpo-tui should not slow down more",
    )
    parser.add_argument("--model-dir", type=Path, default=None, help="tiny model folder, built if missing")
    parser.add_argument(
        "--work-dir",
        type=Path,
        default=None,
        help="keep run folders and logs in a new folder under DIR (default: a temporary folder)",
    )
    args = parser.parse_args()
    if args.steps < 2 or args.rounds < 1 or (args.threads is not None and args.threads < 1):
        parser.error("--steps must be >= 2, --rounds >= 1 and --threads >= 1")

    with tempfile.TemporaryDirectory(prefix="grpo-tui-bench-") as tmp:
        base = args.work_dir or Path(tmp)
        base.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix="bench-", dir=base)).resolve()
        args.model_dir = (args.model_dir or base / "tiny-model").resolve()
        args.also = tuple(dict.fromkeys(args.also))
        build_tiny_model(args.model_dir)
        sha, dirty = commit()
        print(
            f"{args.rounds} rounds x {args.steps} steps, {os.cpu_count()} CPUs, load average "
            f"{os.getloadavg()[0]:.2f}, commit {sha or '?'}{' (modified)' if dirty else ''}, notify "
            f"{'on' if args.notify else 'off'}; logs in {work}",
            flush=True,
        )
        with Receiver() as receiver, busy_process(args.busy):
            result = Bench(args, work, receiver.url if args.notify else None).run()
            posts = receiver.posts
        result = {
            "bench": "train_vs_trl",
            "commit": sha,
            "modified": dirty,
            "time": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "cpus": os.cpu_count(),
            "steps": args.steps,
            "threads": args.threads,
            "notify": args.notify,
            "notify_posts": posts,
            "busy": args.busy,
            "ratio_median": result["settings"]["default"]["ratio_median"],
            **result,
        }
        print_summary(result)
        line = result_line(result)
        print(line, flush=True)
        if args.record:
            with open(args.record, "a", encoding="utf-8") as fh:
                fh.write(line[len("BENCH_RESULT ") :] + "\n")


if __name__ == "__main__":
    main()
