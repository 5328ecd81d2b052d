"""What does held-out evaluation cost? The same training with evals every N steps and without, side by side.

An eval runs inside the trainer, between steps (docs/evaluation.md): its own time is the price of the numbers
it gives, and it must not slow the training around it. This trains the pre-trained tiny model
(``build_tiny_model(pretrain=True)``) on the pattern task for ``--steps`` steps with ``grpo-tui train``, once
with evals (``tests/envs/heldout_env.py`` ``HeldOutPatternEnv``: a held-out set and a task metric, at step 0,
every ``--eval-every`` steps and at the end) and once without (``NoHeldOutEnv`` below: the same environment
without its held-out set, so the same training and no evals), alternating the two sides (ABBA order) so that
drift in the machine's speed hits both alike, and prints per side:

  steps/s      optimizer steps per second from the first to the last logged step (evals included)
  eval s       the ``seconds`` of each eval event: the base model's at step 0 and the median of the later ones
  train s      the training time of that window: its wall time minus the seconds of the evals inside it
  step_time    the sum of TRL's per-step ``step_time`` over the window's steps

and the ratio of the training time with evals to the time without (target: within 2 %, <= 1.02).

With ``--engine vllm`` (run it with .venv-vllm's python: ``./dev vllm-env``) both sides train with colocated vLLM
on the ``--for-vllm`` tiny model and the evals go through the run's engine; then one eval of the last eval-side
run's final model is timed with ``grpo-tui eval --engine vllm`` and ``--engine transformers``, alternated
``--rounds`` times each (the engine's start not counted), on the same held-out set and sampling, and the ratio
transformers/vLLM printed (above 1: vLLM is faster), and the same for the median eval inside the runs (through
their colocated engine, its weight sync included).

    python -m bench.eval_cost [--engine transformers|vllm] [--steps 150] [--eval-every 50] [--rounds 3]
                              [--work-dir DIR]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from bench.common import ROOT
from bench.sides import Launch, run_alone
from bench.train_vs_trl import DISTURBED_SHARE, latest_step
from tests.envs.heldout_env import HeldOutPatternEnv
from trainer_core.commands.tiny_model import build_tiny_model
from trainer_core.contract.run.event_log import read_events
from trainer_core.contract.run.events import Eval, Metrics

TARGET = 1.02  # training time with evals / without, evals' own seconds left out
SIDES = {  # side: (environment module, class)
    "eval": (ROOT / "tests" / "envs" / "heldout_env.py", "HeldOutPatternEnv"),
    "no-eval": (Path(__file__).resolve(), "NoHeldOutEnv"),
}
NUM_PROMPTS = 32  # given to both sides, so that they train on the same prompts


class NoHeldOutEnv(HeldOutPatternEnv):
    """The no-eval side's environment (the trainer loads it from this file): HeldOutPatternEnv without a held-out
    set (a run evaluates when ``build_eval_dataset`` is callable), so the same training prompts and rewards."""

    build_eval_dataset = None


@dataclass
class Leg:
    """One training run's figures."""

    rate: float  # steps/s over the window, evals included
    window: float  # wall seconds from the first to the last logged step
    train: float  # the window less the evals inside it
    step_time: float | None  # the sum of the window's steps' step_time (None when not logged)
    evals: list[Eval]
    wall: float  # the whole child process
    others: float | None  # CPU seconds other processes took meanwhile
    run: Path  # the run folder


def measure(events: list) -> tuple[float, float, float, float | None, list[Eval]]:
    """(steps/s, window s, training s, summed step_time, evals) of one run's events."""
    metrics = sorted((e for e in events if isinstance(e, Metrics)), key=lambda m: m.step)
    if len(metrics) < 2 or metrics[-1].time <= metrics[0].time:
        raise ValueError(f"need two timed steps at least, got {len(metrics)}")
    first, last = metrics[0], metrics[-1]
    window = last.time - first.time
    evals = [e for e in events if isinstance(e, Eval)]
    inside = sum(e.seconds for e in evals if first.time < e.time <= last.time)
    times = [m.get("step_time") for m in metrics[1:]]
    step_time = sum(times) if times and all(isinstance(t, (int, float)) for t in times) else None
    return (last.step - first.step) / window, window, window - inside, step_time, evals


def train(model: Path, side: str, args, work: Path, tag: str) -> Leg:
    module, cls = SIDES[side]
    runs = work / f"{tag}-runs"
    env_config = {"num_prompts": NUM_PROMPTS, "eval_prompts": args.eval_prompts}
    cmd = [
        sys.executable, "-m", "grpo_tui", "train", "--model", str(model),
        "--rl-env-module", str(module), "--rl-env-class", cls, "--rl-env-config", json.dumps(env_config),
        "--rl-num-generations", "4", "--batch-size", "8", "--rl-max-new-tokens", "16", "--lr", "0.002",
        "--max-steps", str(args.steps), "--save-steps", "1000000", "--mixed-precision", "no",
        "--runs-dir", str(runs),
    ]  # fmt: skip
    if side == "eval":
        cmd += ["--eval-steps", str(args.eval_every), "--eval-generations", str(args.eval_generations)]
    if args.engine == "vllm":  # top-k off: TRL compares vLLM's processed log-probs with the trainer's (vllm-cpu.md)
        cmd += ["--use-vllm", "--vllm-mode", "colocate", "--rl-top-k", "0"]
    found = run_alone(Launch(side, cmd, work / f"{tag}.log", dict(os.environ), lambda: latest_step(runs)))
    wall, others = found["wall_s"], found["other_cpu_s"]
    found = sorted(runs.rglob("events.jsonl"))
    if len(found) != 1:
        sys.exit(f"expected one events.jsonl under {runs}, found {len(found)}")
    return Leg(*measure(read_events(found[0])), wall=wall, others=others, run=found[0].parent)


def later_evals(leg: Leg) -> list[float]:
    return [e.seconds for e in leg.evals if not e.base]


def base_eval(leg: Leg) -> float | None:
    return next((e.seconds for e in leg.evals if e.base), None)


def _s(value: float | None, fmt: str = "{:.2f}") -> str:
    return "-" if value is None else fmt.format(value)


def bench(model_dir: Path, args, work: Path) -> None:
    print("building the pre-trained tiny model (cached in its folder) ...", flush=True)
    model = build_tiny_model(model_dir, pretrain=True, for_vllm=args.engine == "vllm")
    threads = {k: os.environ[k] for k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS") if k in os.environ}
    print(
        f"{args.rounds} rounds x {args.steps} steps, evals at 0, every {args.eval_every} and the end "
        f"({args.eval_prompts} prompts x {args.eval_generations} samples); {os.cpu_count()} CPUs, "
        f"threads env {threads or 'unset'}; logs in {work}",
        flush=True,
    )
    print(
        f"{'round':>5}  {'side':<7}  {'steps/s':>7}  {'window s':>8}  {'train s':>7}  {'step_time':>9}  "
        f"{'evals':>5}  {'eval s (base; later)':>22}  {'other CPU s':>11}",
        flush=True,
    )
    legs: dict[str, list[Leg]] = {side: [] for side in SIDES}
    disturbed = 0
    for r in range(1, args.rounds + 1):
        order = list(SIDES) if r % 2 else list(reversed(SIDES))
        for side in order:
            leg = train(model, side, args, work, f"{side}-{r}")
            legs[side].append(leg)
            flag = leg.others is not None and leg.others > DISTURBED_SHARE * leg.wall
            disturbed += flag
            later = later_evals(leg)
            evals = f"{_s(base_eval(leg))}; {_s(statistics.median(later)) if later else '-'}" if leg.evals else "-"
            others = "?" if leg.others is None else f"{leg.others:.1f}" + (" !" if flag else "  ")
            print(
                f"{r:>5}  {side:<7}  {leg.rate:>7.2f}  {leg.window:>8.2f}  {leg.train:>7.2f}  "
                f"{_s(leg.step_time):>9}  {len(leg.evals):>5}  {evals:>22}  {others:>11}",
                flush=True,
            )
    summarize(legs, disturbed)
    if args.engine == "vllm":
        inside = [s for leg in legs["eval"] for s in later_evals(leg)]
        compare_engines(legs["eval"][-1].run, args.rounds, work, statistics.median(inside) if inside else None)


def one_eval(run: Path, engine: str, work: Path) -> float:
    """The seconds of one eval of ``run``'s final model with ``engine`` (its start not counted)."""
    cmd = [sys.executable, "-m", "trainer_core", "eval", str(run), "--checkpoint", "final", "--engine", engine]
    done = subprocess.run([*cmd, "--json"], capture_output=True, text=True, cwd=work)
    if done.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout[done.stdout.index("{") :])["models"][0]["seconds"]


def compare_engines(run: Path, rounds: int, work: Path, inside: float | None = None) -> None:
    """One eval of the same model, held-out set and sampling through vLLM and transformers, alternated (ABBA); and
    ``inside``, the median eval inside the runs (through their engine, its weight sync included), against the
    transformers one."""
    print(f"\none eval of {run.name}/final, each engine {rounds} times, alternated:", flush=True)
    seconds: dict[str, list[float]] = {"vllm": [], "transformers": []}
    for r in range(rounds):
        for engine in ("vllm", "transformers") if r % 2 == 0 else ("transformers", "vllm"):
            seconds[engine].append(one_eval(run, engine, work))
            print(f"  {engine:<12}  {seconds[engine][-1]:.3f} s", flush=True)
    vllm, plain = statistics.median(seconds["vllm"]), statistics.median(seconds["transformers"])
    print(f"one eval: vLLM {vllm:.3f} s, transformers {plain:.3f} s (medians)")
    print(f"eval seconds transformers / vLLM: {plain / vllm:.2f} (above 1: vLLM is faster)")
    if inside:
        print(
            f"an eval inside the run, through its engine: {inside:.3f} s; transformers / inside: {plain / inside:.2f}"
        )


def summarize(legs: dict[str, list[Leg]], disturbed: int) -> None:
    def median(side: str, value) -> float | None:
        values = [value(leg) for leg in legs[side]]
        return statistics.median(values) if values and all(v is not None for v in values) else None

    print()
    print(f"{'side':<7}  {'steps/s':>7}  {'train s':>7}  {'step_time':>9}   (medians)")
    for side in SIDES:
        row = [median(side, lambda leg: leg.rate), median(side, lambda leg: leg.train)]
        print(f"{side:<7}  {_s(row[0]):>7}  {_s(row[1]):>7}  {_s(median(side, lambda leg: leg.step_time)):>9}")
    later = [s for leg in legs["eval"] for s in later_evals(leg)]
    bases = [s for leg in legs["eval"] if (s := base_eval(leg)) is not None]
    if later:
        print(f"one eval: {statistics.median(later):.2f} s median ({len(later)} evals after step 0; ", end="")
        print(f"the base model's at step 0: {_s(statistics.median(bases) if bases else None)} s)")
    rates = median("eval", lambda leg: leg.rate), median("no-eval", lambda leg: leg.rate)
    if rates[0] and rates[1]:
        print(f"steps/s with evals / without: {rates[0] / rates[1]:.3f} (the evals' own time included)")
    times = median("eval", lambda leg: leg.train), median("no-eval", lambda leg: leg.train)
    steps = median("eval", lambda leg: leg.step_time), median("no-eval", lambda leg: leg.step_time)
    if steps[0] and steps[1]:
        print(f"summed step_time with evals / without: {steps[0] / steps[1]:.3f}")
    if disturbed:
        print(f"note: {disturbed} run(s) marked ! shared the CPUs with other work; rerun on a quiet machine.")
    if times[0] and times[1]:
        print(f"training time with evals / without, evals left out: {times[0] / times[1]:.3f} (target <= {TARGET})")


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.eval_cost", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--steps", type=int, default=150, help="optimizer steps per training run (default: 150)")
    parser.add_argument("--eval-every", type=int, default=50, help="--eval-steps of the eval side (default: 50)")
    parser.add_argument("--eval-prompts", type=int, default=8, help="held-out prompts per eval (default: 8)")
    parser.add_argument("--eval-generations", type=int, default=4, help="samples per held-out prompt (default: 4)")
    parser.add_argument("--rounds", type=int, default=3, help="eval/no-eval pairs to run (default: 3)")
    parser.add_argument(
        "--engine",
        choices=("transformers", "vllm"),
        default="transformers",
        help="generate with vLLM (colocate) and compare one eval with each engine; needs .venv-vllm",
    )
    parser.add_argument(
        "--model-dir", type=Path, default=None, help="tiny model folder, built if missing (default: in the work dir)"
    )
    parser.add_argument(
        "--work-dir", type=Path, default=None, help="keep run folders and logs in a new folder under DIR"
    )
    args = parser.parse_args()
    if args.engine == "vllm" and importlib.util.find_spec("vllm") is None:
        parser.error("--engine vllm needs vLLM: run it with .venv-vllm/bin/python (./dev vllm-env)")
    if args.steps < 2 or args.rounds < 1 or args.eval_every < 1 or args.eval_prompts < 1 or args.eval_generations < 1:
        parser.error("--steps must be >= 2; --rounds, --eval-every, --eval-prompts and --eval-generations >= 1")
    if args.work_dir is not None:
        args.work_dir.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix="eval-cost-", dir=args.work_dir)).resolve()
        bench(args.model_dir or args.work_dir / "tiny-model-pretrained", args, work)
        return
    with tempfile.TemporaryDirectory(prefix="grpo-tui-eval-cost-") as tmp:
        bench(args.model_dir or Path(tmp) / "tiny-model", args, Path(tmp))


if __name__ == "__main__":
    main()
