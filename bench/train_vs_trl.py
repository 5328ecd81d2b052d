"""Does grpo-tui cost training speed? Steps per second of ``grpo-tui train`` against a plain TRL script.

grpo-tui wraps TRL's GRPOTrainer with an event stream, a stop controller, sample recording, a root process
(stall watch, alerts) and a foreground viewer tailing the run folder; all of that should be close to free.
This runs the same tiny model with the same settings both ways (bench/plain_trl_grpo.py is the plain side) and
prints the ratio of the median steps per second (target >= 0.98), the CPU time and wake-ups of grpo-tui's helper
processes per step (bench/process_cpu.py), and one ``BENCH_RESULT {json}`` line (bench/compare.py).

In each round the sides start together and take turns on the machine, half a second each (bench/turns.py): each
has the whole machine during its turns, as a run alone has, and the machine's drift, which on a virtual machine
moves a run's rate by more than the target's 2 % from one minute to the next, hits both alike. A side's steps
per second count only the time it ran. ``--sequential`` runs the sides one after the other instead, each to its
end. Either way the order alternates from round to round (ABBA).

The default run uses torch's default threads (OMP_NUM_THREADS and MKL_NUM_THREADS removed from the children's
environment); ``--threads N`` adds, in every round, a pair with both set to N. ``--notify`` configures an
alert URL (a JSON webhook on a local receiver the bench runs), as a user with alerts has. ``--also worker``
and ``--also root`` add sides that leave out the foreground tail (``root``: the run's root alone) or every
helper (``worker``: the trainer alone), to tell which one costs; ``--also twin`` adds a second plain side, whose
ratio to the first is the bench's own noise, or, with ``--twin-burn-ms MS``, how well it sees a known loss. Steps
per second come from the per-step ``on_log`` timestamps, first to last, so process start, model loading and the
final save are not counted.

``--busy`` runs everything beside one busy process in a session of its own, as another user's work would be: both
sides slow down, and grpo-tui must not slow down more (a run's root in a session of its own once made it 25 times
slower there: trainer_core/contract/run/process.py ``detached_group``).

    python -m bench.train_vs_trl [--steps 200] [--rounds 3] [--threads N] [--notify] [--busy] [--sequential]
                                 [--slice S] [--record FILE]
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

from bench.common import PATTERN_FLAGS, ROOT, Receiver, busy_process, child_env, module_cmd
from bench.compare import helper_figures, preemptions, print_summary, result_line, summary
from bench.sides import Launch, event_points, run_alone, run_in_turns
from grpo_tui.cli import build_parser
from grpo_tui.config_flags import config_from_args
from trainer_core.commands.tiny_model import build_tiny_model
from trainer_core.contract.config.run_config import RunConfig
from trainer_core.contract.run.event_log import last_step, read_records
from trainer_core.contract.run.folder import RunFolder
from trainer_core.contract.run.process import run_env

# A run during which other processes took more than this share of one CPU is flagged as disturbed: with
# torch's threads on every core, even a little outside work can slow a step many times over.
DISTURBED_SHARE = 0.1
THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")
EXTRA_SIDES = ("root", "worker", "twin")
TURN_S = 0.5  # long beside a switch's cost (a few ms), short beside the machine's drift (tens of seconds)


def thread_env(threads: int | None, base: dict | None = None) -> dict:
    """The children's environment: the thread variables removed (torch's default) or all set to ``threads``."""
    env = {k: v for k, v in (base or child_env()).items() if k not in THREAD_VARS}
    if threads is not None:
        env.update(dict.fromkeys(THREAD_VARS, str(threads)))
    return env


def train_flags(model_dir: Path, steps: int, runs: Path, notify_url: str | None = None) -> list[str]:
    """``grpo-tui train``'s flags for the benches' training (the pattern task, no checkpoint but the last)."""
    flags = ["--model", str(model_dir), *PATTERN_FLAGS, "--lr", "0.002", "--max-steps", str(steps)]
    flags += ["--save-steps", "1000000", "--mixed-precision", "no", "--runs-dir", str(runs)]
    return flags + (["--notify", notify_url] if notify_url else [])


def flags_config(flags: list[str]) -> RunConfig:
    """The config ``grpo-tui train`` makes of ``flags`` (its own parser and merge), without starting a run."""
    return config_from_args(build_parser().parse_args(["train", *flags]))


def plain_points(times_file: Path) -> list[tuple[int, float]]:
    return [(p["step"], p["time"]) for p in read_records(times_file)]


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

    def train_flags(self, runs: Path) -> list[str]:
        return train_flags(self.args.model_dir, self.args.steps, runs, self.notify_url)

    def launch(self, side: str, tag: str, env: dict) -> Launch:
        log = self.work / f"{tag}.log"
        if side == "grpo-tui":
            runs = self.work / f"{tag}-runs"
            cmd = [sys.executable, "-m", "grpo_tui", "train", *self.train_flags(runs)]
            return Launch(side, cmd, log, env, lambda: latest_step(runs), lambda: event_points(one_events_file(runs)))
        if side in ("plain", "twin"):
            times = self.work / f"{tag}-times.jsonl"
            cmd = module_cmd("bench.plain_trl_grpo", self.args.model_dir, self.args.steps, times)
            cmd += ["--output-dir", str(self.work / f"{tag}-output")]
            cmd += ["--burn-ms", str(self.args.twin_burn_ms)] if side == "twin" else []
            return Launch(side, cmd, log, env, lambda: len(read_records(times)), lambda: plain_points(times))
        return self.part(side, tag, log, env)

    def part(self, side: str, tag: str, log: Path, env: dict) -> Launch:
        """The trainer under its root alone (``root``) or alone (``worker``), in a folder made from the same flags
        as ``grpo-tui train`` makes one."""
        runs = self.work / f"{tag}-runs"
        folder = RunFolder.create(runs)
        folder.save_config(flags_config(self.train_flags(runs)))
        folder.write_state(run_id=folder.run_id, status="starting", started=round(time.time(), 3))
        if side == "root":
            cmd = [sys.executable, "-m", "trainer_core", "run", str(folder.path), "--placement", "{}"]
        else:
            cmd = [sys.executable, "-m", "trainer_core", "worker", str(folder.path), "--echo"]
        events = folder.events_file
        return Launch(
            side, cmd, log, run_env(folder.path, env), lambda: last_step(events), lambda: event_points(events)
        )

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
                # ABBA: the sides' order alternates, so drift in the machine's speed (or the first turn) favours none
                launches = [self.launch(side, f"{side}-{threads or 'default'}-{r}", env) for side in sides]
                launches = launches if r % 2 else launches[::-1]
                if args.sequential:
                    results = [run_alone(launch) for launch in launches]
                else:
                    results = run_in_turns(launches, args.slice)
                for launch, found in zip(launches, results):
                    found |= {"steps_per_s": launch.rate(), "round": r, "side": launch.side, "threads": threads}
                    flag = found["other_cpu_s"] is not None and found["other_cpu_s"] > DISTURBED_SHARE * found["wall_s"]
                    found["disturbed"] = flag
                    disturbed += flag
                    rounds.append(found)
                    print(row(found, flag), flush=True)
        return summary(rounds, settings, sides, disturbed)


def row(found: dict, flag: bool) -> str:
    other = "?" if found["other_cpu_s"] is None else f"{found['other_cpu_s']:.1f}" + (" !" if flag else "  ")
    helpers = helper_figures(found) if found["side"] not in ("plain", "twin") else None
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
        help="add a side: root (no foreground tail), worker (the trainer alone) or twin (a second plain run: the "
        "bench's own noise); repeatable",
    )
    parser.add_argument(
        "--twin-burn-ms",
        type=float,
        default=0.0,
        metavar="MS",
        help="with --also twin: the twin spins MS ms of CPU per step, a known loss the bench should see (a 1 ms "
        "burn in a 50 ms step reads as twin/plain 0.98); default 0",
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
    parser.add_argument(
        "--slice",
        type=float,
        default=TURN_S,
        metavar="S",
        help=f"seconds each side runs before the next one's turn (default: {TURN_S})",
    )
    parser.add_argument(
        "--sequential",
        action="store_true",
        help="run the sides one after the other, each to its end, instead of taking turns",
    )
    parser.add_argument("--model-dir", type=Path, default=None, help="tiny model folder, built if missing")
    parser.add_argument(
        "--work-dir",
        type=Path,
        default=None,
        help="keep run folders and logs in a new folder under DIR (default: a temporary folder)",
    )
    args = parser.parse_args()
    if args.steps < 2 or args.rounds < 1 or (args.threads is not None and args.threads < 1) or args.slice <= 0:
        parser.error("--steps must be >= 2, --rounds >= 1, --threads >= 1 and --slice > 0")

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
            f"{'on' if args.notify else 'off'}, sides "
            f"{'one after the other' if args.sequential else f'taking turns of {args.slice} s'}; logs in {work}",
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
            "turns_s": None if args.sequential else args.slice,
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
