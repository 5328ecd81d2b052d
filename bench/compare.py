"""The results of bench.train_vs_trl: summed up per thread setting, printed, kept as JSON lines, and compared.

Every run of the bench prints one ``BENCH_RESULT {json}`` line (and appends it to ``--record FILE``). Run the
bench on two commits (bench/README.md: a git worktree each) and compare what they recorded:

    python -m bench.compare BEFORE.jsonl AFTER.jsonl

For each thread setting found in both, it prints the ratio grpo-tui/plain of each side and the change, and
exits 1 when the second's ratio is below the target (0.98) or more than ``--tolerance`` below the first's.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
from pathlib import Path

PREFIX = "BENCH_RESULT "
TARGET = 0.98
RESAMPLES = 2000


def result_line(result: dict) -> str:
    return PREFIX + json.dumps(result, sort_keys=True)


def parse_results(text: str) -> list[dict]:
    """The bench results in ``text``: ``BENCH_RESULT`` lines of a bench's output, or a ``--record`` file's JSON
    lines. Other lines (the bench's table, a torn last line) are skipped."""
    found = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith(PREFIX):
            line = line[len(PREFIX) :]
        if not line.startswith("{"):
            continue
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict) and value.get("bench") == "train_vs_trl":
            found.append(value)
    return found


def helper_figures(found: dict) -> tuple[float, float] | None:
    """The helpers' (tail + root) CPU ms per step and wake-ups per second, from a run's process window."""
    procs = found.get("processes")
    if not procs:
        return None
    return (
        procs["tail"]["cpu_ms_per_step"] + procs["root"]["cpu_ms_per_step"],
        procs["tail"]["wakeups_per_s"] + procs["root"]["wakeups_per_s"],
    )


def preemptions(found: dict) -> float | None:
    """How often per second the trainer's threads were preempted during a run (by anything: helpers or not)."""
    procs = found.get("processes")
    return procs["worker"]["preemptions_per_s"] if procs else None


def median_known(runs) -> float | None:
    known = [p for f in runs if (p := preemptions(f)) is not None]
    return round(statistics.median(known), 1) if known else None


def trainer_cpu_ms(found: dict) -> float | None:
    """The trainer's CPU time per step (grpo-tui's worker, or the plain script): the work a step costs, which other
    processes' bursts change far less than its wall time."""
    procs = found.get("processes")
    return procs["worker"]["cpu_ms_per_step"] if procs else None


def quiet_ratio(runs: list[dict]) -> dict:
    """The ratio of the medians over the runs no other work disturbed (``disturbed`` false): on a machine with
    bursts of outside work, the figure the target is about; None where a side has no quiet run."""
    quiet = {
        s: [f["steps_per_s"] for f in runs if f["side"] == s and not f.get("disturbed")] for s in ("grpo-tui", "plain")
    }
    ratio = None
    if quiet["grpo-tui"] and quiet["plain"]:
        ratio = round(statistics.median(quiet["grpo-tui"]) / statistics.median(quiet["plain"]), 4)
    return {"ratio": ratio, "runs": {s: len(v) for s, v in quiet.items()}}


def median_of(figure, rounds: list[dict], side: str, threads: int | None) -> float | None:
    known = [v for f in rounds if f["side"] == side and f["threads"] == threads if (v := figure(f)) is not None]
    return round(statistics.median(known), 2) if known else None


def ratio_interval(ours: list[float], plain: list[float], level: float = 0.9) -> list[float] | None:
    """The ``level`` interval of the ratio of medians ``ours``/``plain``, by resampling whole rounds (a round's two
    rates together, so drift within a round stays paired): how far this run's ratio could move on this machine.
    Seeded, so the same rates give the same interval. None under three rounds."""
    if len(ours) < 3 or len(ours) != len(plain):
        return None
    rng, n = random.Random(0), len(ours)
    found = []
    for _ in range(RESAMPLES):
        picks = [rng.randrange(n) for _ in range(n)]
        found.append(statistics.median(ours[i] for i in picks) / statistics.median(plain[i] for i in picks))
    found.sort()
    tail = (1 - level) / 2
    return [round(found[int(tail * (RESAMPLES - 1))], 4), round(found[int((1 - tail) * (RESAMPLES - 1))], 4)]


def paired_ratio(ours: list[float], plain: list[float]) -> float | None:
    """The median of each round's own ratio: where a round's sides took turns, they shared the same minutes of the
    machine, which a ratio of the medians over all rounds no longer knows."""
    if not ours or len(ours) != len(plain):
        return None
    return round(statistics.median(a / b for a, b in zip(ours, plain)), 4)


def verdict(interval: list[float] | None) -> str:
    """What a ratio's interval says of the target."""
    if interval is None:
        return "too few rounds to tell"
    low, high = interval
    if low >= TARGET:
        return "the target holds"
    if high < TARGET:
        return "below the target"
    return f"the target ({TARGET}) is inside it: this run cannot tell"


def summary(rounds: list[dict], settings: list[int | None], sides: tuple[str, ...], disturbed: int) -> dict:
    out: dict = {}
    for threads in settings:
        rates = {s: [f["steps_per_s"] for f in rounds if f["side"] == s and f["threads"] == threads] for s in sides}
        medians = {s: statistics.median(v) for s, v in rates.items()}
        helpers = [h for f in rounds if f["side"] == "grpo-tui" and f["threads"] == threads if (h := helper_figures(f))]
        entry = {
            "ratio_median": round(medians["grpo-tui"] / medians["plain"], 4),
            "median_steps_per_s": {s: round(m, 3) for s, m in medians.items()},
            "steps_per_s": {s: [round(v, 3) for v in r] for s, r in rates.items()},
            "helper_cpu_ms_per_step": round(statistics.median(h[0] for h in helpers), 3) if helpers else None,
            "helper_wakeups_per_s": round(statistics.median(h[1] for h in helpers), 1) if helpers else None,
            "trainer_preemptions_per_s": {
                s: median_known(f for f in rounds if f["side"] == s and f["threads"] == threads) for s in sides
            },
            "trainer_cpu_ms_per_step": {s: median_of(trainer_cpu_ms, rounds, s, threads) for s in sides},
            "quiet": quiet_ratio([f for f in rounds if f["threads"] == threads]),
            "interval": ratio_interval(rates["grpo-tui"], rates["plain"]),
            "paired_ratio": paired_ratio(rates["grpo-tui"], rates["plain"]),
        }
        for side in sides[2:]:
            entry[f"ratio_{side}"] = round(medians[side] / medians["plain"], 4)
        out["default" if threads is None else str(threads)] = entry
    return {"settings": out, "rounds": rounds, "disturbed_runs": disturbed}


def print_summary(result: dict) -> None:
    print()
    for setting, entry in result["settings"].items():
        print(f"threads {setting}:")
        for side, rates in entry["steps_per_s"].items():
            shown = "  ".join(f"{v:.3f}" for v in rates)
            preempted = entry["trainer_preemptions_per_s"].get(side)
            shown += "" if preempted is None else f"  (trainer preempted {preempted:.0f}/s)"
            print(f"  {side:<8}  median {entry['median_steps_per_s'][side]:>8.3f}  individual steps/s  {shown}")
        if entry["helper_cpu_ms_per_step"] is not None:
            print(
                f"  helpers (tail + root): {entry['helper_cpu_ms_per_step']:.2f} ms CPU per step, "
                f"{entry['helper_wakeups_per_s']:.1f} wake-ups/s"
            )
        others = "".join(
            f", {k[6:]}/plain {v:.3f}" for k, v in entry.items() if k.startswith("ratio_") and k != "ratio_median"
        )
        print(f"  ratio grpo-tui/plain: {entry['ratio_median']:.3f} (target >= {TARGET}){others}")
        if entry.get("paired_ratio") is not None:
            print(f"  median of the rounds' own ratios: {entry['paired_ratio']:.3f}")
        if "interval" in entry:
            interval = entry["interval"]
            shown = "" if interval is None else f"{interval[0]:.3f}-{interval[1]:.3f}: "
            print(f"  90 % interval of the ratio, resampling the rounds: {shown}{verdict(interval)}")
        quiet, cpu = entry.get("quiet"), entry.get("trainer_cpu_ms_per_step") or {}
        if quiet and quiet["ratio"] is not None and result["disturbed_runs"]:
            counts = ", ".join(f"{n} {side}" for side, n in quiet["runs"].items())
            print(f"  ratio over the runs marked quiet only ({counts}): {quiet['ratio']:.3f}")
        if cpu.get("grpo-tui") is not None and cpu.get("plain") is not None:
            print(f"  trainer CPU per step: grpo-tui {cpu['grpo-tui']:.1f} ms, plain {cpu['plain']:.1f} ms (medians)")
    if result["disturbed_runs"]:
        print(
            f"note: {result['disturbed_runs']} run(s) marked ! shared the CPUs with other work; their rates say "
            "little. Rerun on a quiet machine."
        )


def ratios(results: list[dict]) -> dict[str, float]:
    """The ratio grpo-tui/plain by thread setting (``default`` or the count); the last result of each wins."""
    out: dict[str, float] = {}
    for result in results:
        for setting, entry in (result.get("settings") or {}).items():
            ratio = entry.get("ratio_median") if isinstance(entry, dict) else None
            if isinstance(ratio, (int, float)):
                out[str(setting)] = float(ratio)
    return out


def compare(before: list[dict], after: list[dict], tolerance: float = 0.03, target: float = TARGET) -> list[dict]:
    """One row per thread setting in both: the two ratios, the change, and whether the second one holds."""
    old, new = ratios(before), ratios(after)
    rows = []
    for setting in sorted(set(old) & set(new)):
        a, b = old[setting], new[setting]
        ok = b >= target and b >= a - tolerance
        rows.append({"threads": setting, "before": a, "after": b, "change": round(b - a, 3), "ok": ok})
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.compare", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("before", type=Path, help="a --record file or a saved bench output (the older commit)")
    parser.add_argument("after", type=Path, help="the same for the newer commit")
    parser.add_argument(
        "--tolerance", type=float, default=0.03, help="how far the ratio may fall before it counts (default 0.03)"
    )
    args = parser.parse_args(argv)
    sides = []
    for path in (args.before, args.after):
        try:
            found = parse_results(path.read_text(encoding="utf-8", errors="replace"))
        except OSError as exc:
            parser.error(f"{path}: {exc.strerror}")
        if not found:
            parser.error(f"{path}: no train_vs_trl result in it; run python -m bench.train_vs_trl --record {path}")
        sides.append(found)
    rows = compare(sides[0], sides[1], args.tolerance)
    if not rows:
        parser.error("the two files share no thread setting; run both with the same --threads")
    commits = [s[-1].get("commit") or "?" for s in sides]
    print(f"grpo-tui/plain, median ratio: {commits[0][:12]} -> {commits[1][:12]} (target >= {TARGET})")
    for row in rows:
        verdict = "ok" if row["ok"] else "REGRESSION"
        print(
            f"  threads {row['threads']:<8} {row['before']:.3f} -> {row['after']:.3f}  ({row['change']:+.3f})  {verdict}"
        )
    return 0 if all(row["ok"] for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
