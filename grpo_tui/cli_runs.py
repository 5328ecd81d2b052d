"""grpo-tui commands that act on existing runs: runs, stop, logs, watch, inspect, merge."""

from __future__ import annotations

import json
import os
import sys

from trainer_core.run_folder import RUNS_DIR_ENV

from .cli_common import BadInput, command, config_of, creating, interactive, resolve, run_app

@command("runs")
def cmd_runs(args) -> int:
    from rich.console import Console

    from .services.registry import format_table, list_runs

    runs = list_runs(args.runs_dir)
    if args.json:
        print(json.dumps([r.to_dict() for r in runs], indent=2))
        return 0
    if not runs:
        print(f"no runs in {args.runs_dir or os.environ.get(RUNS_DIR_ENV) or './runs'}")
        return 0
    Console().print(format_table(runs))
    return 0


@command("stop")
def cmd_stop(args) -> int:
    from .services.supervisor import stop_run

    folder = resolve(args)
    if not args.force:
        print(f"stopping run {folder.run_id}: finishing the current step and saving a checkpoint "
              f"(up to {args.timeout:.0f}s, then forced) ...", flush=True)
    report = stop_run(folder, force=args.force, timeout=args.timeout)
    print(report.describe())
    return 1 if report.left else 0


@command("logs")
def cmd_logs(args) -> int:
    from .services.live_view import follow_log

    folder = resolve(args)
    follow_log(folder, follow=args.follow)
    return 0


@command("watch")
def cmd_watch(args) -> int:
    folder = resolve(args)
    if interactive() and not args.once:
        return run_app(args.runs_dir, args.theme, watch=folder.path, start="watch")
    from .services.live_view import watch

    try:
        watch(folder, once=args.once)
    except KeyboardInterrupt:
        pass
    return 0


@command("inspect")
def cmd_inspect(args) -> int:
    import subprocess

    from rich.console import Console

    from .inspect_report import report
    from .services import inspections

    config = config_of(args)
    with creating():
        inspection = inspections.create(config, args.runs_dir)
    print(f"inspecting {args.samples} completions into {inspection.path} ...", flush=True)
    code = subprocess.call(inspections.command(inspection, args.samples))
    summary = inspection.summary()
    if not summary:
        raise BadInput(f"the inspection wrote no report (exit code {code})")
    Console(soft_wrap=False).print(report(summary, inspection.records()))
    print(f"report: {inspection.path / 'summary.json'}  samples: {inspection.path / 'inspection.jsonl'}")
    if summary.get("failed") or code:
        return 1
    return 4 if any(f["severity"] == "critical" for f in summary.get("flags", [])) else 0


@command("merge")
def cmd_merge(args) -> int:
    import subprocess

    folder = resolve(args)
    cmd = [sys.executable, "-m", "trainer_core", "merge", str(folder.path), "--output", str(args.output)]
    if args.checkpoint is not None:
        cmd += ["--checkpoint", str(args.checkpoint)]
    return subprocess.call(cmd)


