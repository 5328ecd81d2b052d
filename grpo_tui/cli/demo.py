"""``grpo-tui demo``: train the tiny offline model on the demo environment and show it.

In a terminal the run is launched detached and its monitor opens; piped, its metrics print line by line.
The config and the environment ship as package data (``grpo_tui/resources``). ``--pathology kl`` runs the
same demo with a learning rate far too high, for people evaluating the health warnings: KL explodes, the
``kl_explosion`` warning fires with its advice, and the run stops itself with a checkpoint; with ``--remedy`` it
recovers instead: the run's root rolls it back to its checkpoint from before the explosion and goes on at a
learning rate that the task tolerates (``--remedy kl_explosion=rollback``), and the run finishes. ``--agent`` runs
the agentic demo instead: the model books hotel rooms through tools that TRL calls while it generates
(``hotel_agent_env.py``), and learns to use them; piped, it ends with how often a tool call succeeded in its
first and last steps. Both demos evaluate the model on held-out prompts (at step 0 and every few steps);
piped, they end with each held-out task metric at the base model and at the last eval, and a run that a rule
stopped (the KL demo) says so: the score of the policy it stopped is no success, however high.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from grpo_tui.services.catalog.status import is_live, live_status
from grpo_tui.services.lifecycle.foreground import run_foreground
from grpo_tui.services.lifecycle.supervisor import start_root
from trainer_core.contract.config.run_config import RunConfig

from ..resources import demo_config_file, demo_env_file
from .common import BadInput, add_runs_dir, add_theme, interactive, needs_trainer, run_app
from .starting import create, options
from .tiny_model import cached_tiny_model


def register(sub) -> None:
    parser = sub.add_parser("demo", help="train the tiny model on an example environment and print live metrics")
    add_runs_dir(parser)
    parser.add_argument(
        "--max-steps",
        type=int,
        default=None,
        help="steps to train (default: the demo config's 120, under a minute on a laptop CPU)",
    )
    parser.add_argument(
        "--pathology",
        choices=tuple(PATHOLOGIES),
        default=None,
        help="show a run going wrong: kl = a learning rate far too high, so KL explodes and the run "
        "stops itself (--stop-on kl_explosion) with a checkpoint",
    )
    parser.add_argument(
        "--remedy",
        action="store_true",
        help="with --pathology kl: recover instead of stopping; the run rolls itself back to its checkpoint from "
        "before the explosion and goes on at a lower learning rate (--remedy kl_explosion=rollback, "
        f"--remedy-lr-scale {REMEDY['remedy_lr_scale']:g}), then finishes",
    )
    parser.add_argument(
        "--agent",
        action="store_true",
        help="the agentic demo: the model books hotel rooms through tools called while it generates "
        "(check_availability, book_room) and learns to use them; its transcripts are in the Completions tab, "
        "its held-out bookings (booked_right, tool_success) in the evals (default 50 steps, a few minutes on a "
        "laptop CPU)",
    )
    add_theme(parser)
    parser.set_defaults(handler=run)


# what each pathology changes in the demo's config
PATHOLOGIES = {
    "kl": {
        "lr": 1e-2,
        "stop_on": "kl_explosion",
        "project_name": "cpu-demo-kl-explosion",
        "name": "demo: KL explodes at lr 1e-2",
        "tags": ["demo", "pathology", "kl"],
    }
}
# what --remedy changes on top of the KL pathology: checkpoints early enough to go back to, and a rollback whose
# learning rate the task tolerates (the demo's own, 4e-5, is 1e-2 x 0.004)
REMEDY = {
    "stop_on": "",
    "remedy": {"kl_explosion": "rollback"},
    "remedy_lr_scale": 0.004,
    "save_steps": 10,
    "name": "demo: KL explodes at lr 1e-2; the run rolls itself back",
    "tags": ["demo", "pathology", "kl", "remedy"],
}
# each demo's name and tags, so the runs list, the monitor and Compare say which demo a run is
LABELS = {
    "pattern": {"name": "demo: write a's", "tags": ["demo", "pattern"]},
    "agent": {"name": "demo: book hotel rooms with tools", "tags": ["demo", "agent", "tools"]},
}


def demo_config(
    model_dir: Path,
    max_steps: int | None = None,
    pathology: str | None = None,
    agent: bool = False,
    remedy: bool = False,
) -> RunConfig:
    config = RunConfig.load(demo_config_file(agent))
    config.model = str(model_dir)
    config.rl_env_module = str(demo_env_file(agent))
    if max_steps is not None:
        config.max_steps = max_steps
    for name, value in LABELS["agent" if agent else "pattern"].items():
        setattr(config, name, list(value) if isinstance(value, list) else value)
    for name, value in {**PATHOLOGIES.get(pathology or "", {}), **(REMEDY if remedy else {})}.items():
        setattr(config, name, value)
    return config


def run(args) -> int:
    needs_trainer("demo")
    if args.agent and args.pathology:
        raise BadInput("--pathology applies to the pattern demo; drop it or --agent")
    if args.remedy and args.pathology != "kl":
        raise BadInput("--remedy shows the KL pathology's recovery: add --pathology kl")
    model = cached_tiny_model("agent" if args.agent else None)
    config = demo_config(model, args.max_steps, args.pathology, args.agent, args.remedy)
    start = argparse.Namespace(
        runs_dir=args.runs_dir, gpus=None, num_processes=None, accelerate_config=None, vllm_port=None, vllm_timeout=None
    )
    folder, placement = create(config, start)
    if not interactive():
        code = run_foreground(folder, placement, options(start))
        if args.agent:
            print(tool_success_summary(folder.path))
        print(heldout_summary(folder.path))
        return code
    start_root(folder, placement, options(start))
    code = run_app(args.runs_dir, args.theme, watch=folder.path, start="watch")
    status = live_status(folder)
    if is_live(status):
        print(f"the demo run {folder.run_id} goes on in the background; stop it with: grpo-tui stop {folder.run_id}")
    else:
        print(f"the demo run {folder.run_id} is {status}; see it again with: grpo-tui watch {folder.run_id}")
    return code


SUCCESS_SPAN = 20  # steps at each end of the agentic demo that its summary compares


def tool_success_summary(run: Path) -> str:
    """How often an episode's tool use succeeded (a call without an error, and a score of at least 0.5:
    ``samples/tool_success``) in the first and the last ``SUCCESS_SPAN`` steps of the run's metrics."""
    from trainer_core.contract.health.sample_stats import TOOL_SUCCESS
    from trainer_core.contract.run.event_log import EventTail
    from trainer_core.contract.run.events import Metrics

    values = [
        e.values[TOOL_SUCCESS]
        for e in EventTail(run / "events.jsonl").poll()
        if isinstance(e, Metrics) and TOOL_SUCCESS in e.values
    ]
    if len(values) < 2:
        return "tool-call success: too few steps to compare"
    span = min(SUCCESS_SPAN, len(values) // 2)
    first, last = sum(values[:span]) / span, sum(values[-span:]) / span
    return (
        f"tool-call success (episodes that called a tool without an error and scored 0.5 or more): {first:.0%} in the first "
        f"{span} steps, "
        f"{last:.0%} in the last {span}"
    )


def heldout_summary(run: Path) -> str:
    """Each held-out task metric at the base model's eval and at the last one; for a run a health rule stopped,
    a second line that says so, and that the score of the policy it stopped is no success (``rule_stop_note``)."""
    from trainer_core.contract.run.event_log import EventTail
    from trainer_core.contract.run.events import Eval
    from trainer_core.contract.run.rewinds import live

    events = EventTail(run / "events.jsonl").poll()
    stopped = "\n".join(filter(None, [rewind_note(events), rule_stop_note(events, run.name)]))
    evals = [e for e in live(events) if isinstance(e, Eval)]
    if len(evals) < 2:
        return "held-out evaluation: too few evals to compare" + (f"\n{stopped}" if stopped else "")
    first, last = evals[0], evals[-1]
    names = [*first.task_metrics, *(n for n in ("tool_success",) if n in first.metrics)]
    parts = []
    for name in names:
        before, after = first.value(name), last.value(name)
        if before is not None and after is not None:
            parts.append(f"{name} {before:.0%} at step {first.step}, {after:.0%} at step {last.step}")
    line = f"held-out ({first.prompts} prompts x {first.generations}): " + "; ".join(parts)
    return line + (f"\n{stopped}" if stopped else "")


def rewind_note(events: list) -> str | None:
    """One line per rollback of the run: by which rule (or who), from which step to which checkpoint, and with
    which settings it went on; None for a run that never went back."""
    from trainer_core.contract.run.events import Rewound

    lines = []
    for event in (e for e in events if isinstance(e, Rewound)):
        who = f"the {event.rule} remedy" if event.rule else f"a rollback by {event.by}"
        changes = ", ".join(f"{k} {v.get('from')!r} -> {v.get('to')!r}" for k, v in event.changes.items())
        lines.append(
            f"recovered: {who} took the run back from step {event.from_step} to {event.checkpoint}"
            + (f" and it went on with {changes}" if changes else "")
            + " (the steps after it are abandoned, drawn faint in the monitor)"
        )
    return "\n".join(lines) or None


AUTO_STOP = re.compile(r"auto-stop: (?P<rule>[\w-]+)(?: at step (?P<step>\d+))?")  # the trainer's stop reason
# rules that fire when the policy runs away from the model it started from
DIVERGENCE = ("kl_explosion", "entropy_collapse", "mode_collapse", "non_finite", "grad_norm_spike", "loss_spike")


def rule_stop_note(events: list, run_id: str) -> str | None:
    """Why a run that a health rule stopped (``--stop-on``) scores what it scores: the rule, its evidence and
    advice, and that the held-out score of a diverged policy is no success; None for any other run.

    The KL demo ends on a perfect held-out score: the policy it stopped writes rows of the letter for every
    prompt, which the metric scores as right. Said without this line, the failed run reads as the best one."""
    from trainer_core.contract.run.events import HealthWarning, RunFinished, StopRequested
    from trainer_core.contract.run.status import Status

    ends = [e for e in events if isinstance(e, RunFinished)]
    if not ends or ends[-1].status is not Status.STOPPED:
        return None
    reasons = [ends[-1].reason, *(e.reason for e in reversed(events) if isinstance(e, StopRequested))]
    found = next((m for r in reasons if r and (m := AUTO_STOP.search(r))), None)
    if found is None:
        return None  # stopped by a person, the app or a host: its score is what it is
    rule, step = found["rule"], found["step"] or str(ends[-1].step)
    warned = [e for e in events if isinstance(e, HealthWarning) and str(e.rule) == rule]
    evidence = f", which warned: {warned[-1].message.rstrip('.')}" if warned else ""
    advice = f" {warned[-1].advice}" if warned and warned[-1].advice else ""
    what = "a diverged policy" if rule in DIVERGENCE else f"a policy the {rule} rule judged broken"
    return (
        f"not a success: the {rule} rule stopped this run at step {step} (--stop-on {rule}){evidence}. Its "
        f"held-out score is that of {what}, which can collapse onto one kind of output that the metric happens "
        f"to score well: read its completions before trusting any score (grpo-tui watch {run_id}, Completions "
        f"tab).{advice}"
    )
