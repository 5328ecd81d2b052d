"""How often do the health rules cry wolf? Trains the healthy CPU demo (the pre-trained tiny model on
examples/pattern_env.py, the demo's own config) over several seeds, learning-rate schedules and KL
coefficients (the demo's, the 0.1 of a calm run that once raised a false kl_explosion, TRL's default beta 0),
and counts every warning by rule and severity. Then it judges seeded healthy held-out eval sequences
(bench/health_false_alarms_evals.py) for reward_task_divergence, which the demo's runs are too short to
exercise, and adds its warnings to the count.

A false alarm on a rule that takes a remedy is a rollback, so the rules of health/remedy_plan.py's
REMEDY_RULES are counted on their own: their target is 0 critical (and 0 warn, for --remedy-severity warn).

    python -m bench.health_false_alarms                       # 5 seeds x 120 steps x 2 schedules x 3 betas
    python -m bench.health_false_alarms --seeds 2 --steps 60  # a quick look
    python -m bench.health_false_alarms --schedules constant --betas 0.1 --lr 5e-5   # the calm run's settings
    python -m bench.health_false_alarms --seeds 0             # the held-out eval sequences only

Target: 0 warn or critical. Info warnings (kl_not_measured at beta 0) are listed but are not alarms.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from bench.health_false_alarms_evals import count_remedies, eval_false_alarms
from grpo_tui.resources import demo_config_file, demo_env_file
from trainer_core.commands.tiny_model import build_tiny_model
from trainer_core.contract.config.run_config import RunConfig
from trainer_core.contract.health.monitor import Thresholds, replay
from trainer_core.contract.health.remedy_plan import REMEDY_RULES
from trainer_core.contract.run.event_log import read_events
from trainer_core.contract.run.events import HealthWarning, Metrics
from trainer_core.training.runner import train


def main() -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.health_false_alarms",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--first-seed", type=int, default=0, help="the seeds are FIRST_SEED .. FIRST_SEED+SEEDS-1")
    parser.add_argument("--steps", type=int, default=120)
    parser.add_argument("--betas", default="demo,0.1,0", help="comma-separated: 'demo' (the config's) and/or numbers")
    parser.add_argument(
        "--schedules", default="constant,linear", help="comma-separated learning-rate schedules (transformers names)"
    )
    parser.add_argument("--lr", default="demo", help="the learning rate: 'demo' (the config's) or a number")
    parser.add_argument("--work-dir", type=Path, default=None)
    parser.add_argument("--eval-sequences", type=int, default=1000, help="healthy held-out eval runs to judge")
    parser.add_argument("--eval-seed", type=int, default=0)
    args = parser.parse_args()
    alarms: Counter[tuple[str, str]] = Counter()
    infos: Counter[str] = Counter()
    unfloored: Counter[str] = Counter()
    remedies: Counter[str] = Counter()
    steps_seen = _train_demo_runs(args, alarms, infos, unfloored, remedies) if args.seeds else 0
    eval_alarms, evals_seen = eval_false_alarms(args.eval_sequences, args.eval_seed, remedies=remedies)
    alarms.update(eval_alarms)
    total = sum(alarms.values())
    runs = f"{args.seeds} seeds x {len(args.schedules.split(','))} schedules x {len(args.betas.split(','))} betas"
    print(f"\n{steps_seen} logged steps over {runs}")
    print(
        f"{evals_seen} held-out evals over {args.eval_sequences} healthy eval runs (seed {args.eval_seed}): "
        f"{sum(eval_alarms.values())} warn or critical "
        f"({sum(eval_alarms.values()) / max(args.eval_sequences, 1):.4f} per run)"
    )
    print(f"warn or critical: {total} ({total / max(steps_seen + evals_seen, 1):.4f} per step or eval); target 0")
    for (rule, severity), n in sorted(alarms.items()):
        print(f"  {rule} {severity}: {n}")
    for rule, n in sorted(infos.items()):
        print(f"  info {rule}: {n}")
    remedy_critical = sum(
        n for (rule, severity), n in alarms.items() if rule in REMEDY_RULES and severity == "critical"
    )
    remedy_warn = sum(n for (rule, severity), n in alarms.items() if rule in REMEDY_RULES and severity == "warn")
    print(
        f"kl_explosion replayed without kl_growth_floor (the growth branch's old floor, kl_high / 2): "
        f"{unfloored['warn']} warn, {unfloored['critical']} critical"
    )
    print(f"rules that take a remedy ({', '.join(REMEDY_RULES)}): {remedy_critical} critical, {remedy_warn} warn")
    print(
        f"warnings a remedy on every such rule would roll back for: {remedies['critical']} at --remedy-severity "
        f"critical, {remedies['warn']} at warn; target 0"
    )
    return 0 if total == 0 else 1


def _train_demo_runs(
    args: argparse.Namespace, alarms: Counter, infos: Counter, unfloored: Counter, remedies: Counter
) -> int:
    """Train the demo over schedules, betas and seeds, counting its warnings into ``alarms`` and ``infos`` (and
    ``remedies``: those a remedy would act on), and the kl_explosion warnings a replay without the growth branch's
    floor gives into ``unfloored``; logged steps."""
    work = args.work_dir or Path(tempfile.mkdtemp(prefix="grpo-false-alarms-"))
    model = build_tiny_model(work / "tiny-model", pretrain=True)
    steps_seen = 0
    print(f"{'schedule':>8} {'lr':>7} {'beta':>6} {'seed':>4} {'steps':>5} {'s':>5}  warnings (rule severity step)")
    settings = [(sched, beta) for sched in args.schedules.split(",") for beta in args.betas.split(",")]
    for schedule, beta, seed in [
        (sched, beta, seed) for sched, beta in settings for seed in range(args.first_seed, args.first_seed + args.seeds)
    ]:
        config = RunConfig.load(demo_config_file())
        config.model, config.rl_env_module = str(model), str(demo_env_file())
        config.seed, config.max_steps, config.save_steps = seed, args.steps, 10**6
        config.scheduler = schedule
        if beta != "demo":
            config.rl_kl_coef = float(beta)
        if args.lr != "demo":
            config.lr = float(args.lr)
        began = time.monotonic()
        result = train(config, runs_dir=work / "runs")
        events = read_events(result.path / "events.jsonl")
        warnings = [e for e in events if isinstance(e, HealthWarning)]
        metrics = [e for e in events if isinstance(e, Metrics)]
        steps = len(metrics)
        old_floor = Thresholds.from_mapping(config.health)
        old_floor.kl_growth_floor = old_floor.kl_high / 2
        unfloored.update(str(w.severity) for w in replay(metrics, old_floor) if w.rule == "kl_explosion")
        steps_seen += steps
        for w in warnings:
            count_remedies(w, remedies)
            if w.severity.alarming:
                alarms[(str(w.rule), str(w.severity))] += 1
            else:
                infos[str(w.rule)] += 1
        shown = ", ".join(f"{w.rule} {w.severity} {w.step}" for w in warnings) or "-"
        took = time.monotonic() - began
        print(
            f"{schedule:>8} {config.lr:>7.2g} {config.rl_kl_coef:>6} {seed:>4} {steps:>5} {took:>5.0f}  {shown}",
            flush=True,
        )
    return steps_seen


if __name__ == "__main__":
    sys.exit(main())
