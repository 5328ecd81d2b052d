"""What each read tool answers, as plain JSON records (``schema.py`` says their shape).

Every answer is read by the services the app and the ``--json`` commands use: the executors list and find runs
(``executors/``), the catalog gives rows, held-out figures, live statuses and checkpoints (``services/catalog``),
and the folded event stream gives series, warnings and the last metrics (``services/stream``). Nothing here parses
events.jsonl a second way. Text a run holds (prompts, completions, the log, exit reasons, a config's words) goes
under ``untrusted`` (``untrusted.py``).
"""

from __future__ import annotations

import math
import os
import time
from collections import deque
from typing import Any

from grpo_tui.services.catalog.checkpoints import read_checkpoints
from grpo_tui.services.catalog.folders import held_out_evals
from grpo_tui.services.catalog.health import watcher_warnings
from grpo_tui.services.records.run_row import RunInfo
from grpo_tui.services.stream.reader import read_samples
from trainer_core.contract.run.events import Eval, HealthWarning
from trainer_core.contract.run.ledger import default_metric
from trainer_core.contract.run.rules import HealthRule, RuleGroup, rules_of
from trainer_core.contract.run.status import Status

from ..executors.base import ExecutorError
from ..executors.hosts import LOCAL
from ..safe_text import clean_line
from .history import check_max_points, history
from .runs import AnswerError, FoundRun, Runs
from .schema import VERSION
from .untrusted import RUN_TEXTS, apart, untrusted

TEXT_CAP = 2000  # characters of one prompt or completion
MAX_SAMPLES = 50
MAX_LOG_LINES = 1000
LOG_TAIL_BYTES = 512 * 1024


def answer(kind: str, **fields: Any) -> dict[str, Any]:
    """A tool's answer: its ``answer`` kind and the schema ``version`` first."""
    return {"answer": kind, "version": VERSION, **fields}


def run_row(info: RunInfo, host: str | None) -> dict[str, Any]:
    """A run as ``list_runs`` gives it: its row as ``runs --json`` writes it, the texts apart (``RUN_TEXTS``)."""
    row = apart(info.to_wire(), RUN_TEXTS, TEXT_CAP)
    row["host"] = host
    row["last_reward"] = _finite(info.last_reward)
    return row


def list_runs(runs: Runs, host: str | None = None, status: str | None = None) -> dict[str, Any]:
    wanted = None
    if status:
        wanted = Status.parse(status)
        if wanted is None:
            known = ", ".join(s.value for s in Status)
            raise AnswerError(f"status {status!r} is not a run status; use one of: {known}")
    names = [host] if host else [LOCAL, *_configured_hosts(runs)]
    rows, errors = [], []
    for name in names:
        ex = runs.executor(name)
        try:
            listed = ex.list_runs()
        except ExecutorError as exc:
            if host:
                raise AnswerError(f"host {name}: {clean_line(exc)}; check it with `grpo-tui hosts`") from None
            errors.append({"host": name, **untrusted(TEXT_CAP, error=str(exc))})
            continue
        label = None if ex.host_name is None else ex.name
        rows += [run_row(r, label) for r in listed.runs if wanted is None or r.status is wanted]
    return answer("runs", runs=rows, hosts_down=errors)


def _configured_hosts(runs: Runs) -> list[str]:
    try:
        return list(runs.registry.hosts)
    except Exception:  # a missing or broken hosts file: this machine's runs are still listed
        return []


def run_summary(runs: Runs, run: str, host: str | None = None) -> dict[str, Any]:
    found = runs.find(run, host)
    info, folder = found.info, found.folder
    stream = runs.stream(folder)
    last = stream.last_metrics
    rate = stream.rate()
    live = info.status.is_live
    remaining = None if info.total is None or info.step is None else max(0, info.total - info.step)
    eta = remaining / rate if live and rate and remaining is not None else None
    try:
        config = folder.read_config()
    except Exception:  # an unreadable config.yaml: the summary says so instead of failing
        config = None
    return answer(
        "run_summary",
        **_head(found),
        run=run_row(info, found.host),
        steps_per_second=_finite(rate),
        eta_seconds=_finite(eta),
        last_metrics=None if last is None else {"step": last.step, "values": _numbers(last.values)},
        **untrusted(TEXT_CAP, config=config),
    )


def metric_history(
    runs: Runs,
    run: str,
    keys: list[str],
    start_step: int | None = None,
    end_step: int | None = None,
    max_points: int = 500,
    host: str | None = None,
) -> dict[str, Any]:
    check_max_points(max_points)
    if not keys:
        raise AnswerError("keys is empty: name one metric or more, e.g. ['reward', 'kl'] (run_summary lists them)")
    found = runs.find(run, host)
    stream = runs.stream(found.folder)
    series = [history(stream, key, start_step, end_step, max_points) for key in dict.fromkeys(keys)]
    return answer("metric_history", **_head(found), max_points=max_points, series=series)


def health(runs: Runs, run: str, host: str | None = None) -> dict[str, Any]:
    found = runs.find(run, host)
    stream = runs.stream(found.folder)
    seen = list(stream.warnings) + watcher_warnings(found.folder, found.status())
    warnings = [_warning(w) for w in seen]
    fired = {str(w.rule) for w in seen}
    logged = set(stream.series)
    quiet = [{"rule": rule, "why": _quiet_why(rule, logged)} for rule in _judged_rules() if rule not in fired]
    return answer("health", **_head(found), warnings=warnings, quiet=quiet)


def _judged_rules() -> tuple[str, ...]:
    return rules_of(RuleGroup.METRIC, RuleGroup.WATCHER)


def _quiet_why(rule: str, logged: set[str]) -> str:
    if rule == HealthRule.KL_EXPLOSION and "kl" not in logged:
        return "kl is not logged (the KL coefficient is 0): KL is not measured, so this rule cannot fire"
    if rule in (HealthRule.TOOL_FAILURES, HealthRule.TOOL_UNUSED, HealthRule.TURN_LIMIT) and not any(
        k.startswith("tools/") for k in logged
    ):
        return "the run calls no tools: the rule does not apply"
    return "judged on the run's history and never fired"


def _warning(w: HealthWarning) -> dict[str, Any]:
    numbers = {k: v for k, v in w.evidence.items() if _is_number(v) or _numbers_list(v)}
    texts = {k: v for k, v in w.evidence.items() if k not in numbers}
    return {
        "rule": str(w.rule),
        "severity": w.severity.value,
        "step": w.step,
        "message": clean_line(w.message),
        "advice": clean_line(w.advice),
        "evidence": numbers,
        **untrusted(TEXT_CAP, evidence=texts),
    }


def evals(runs: Runs, run: str, host: str | None = None) -> dict[str, Any]:
    found = runs.find(run, host)
    by_step = held_out_evals(found.folder.events_file)
    metric = default_metric(found.folder.path, by_step) if by_step else None
    ordered = [by_step[s] for s in sorted(by_step)]
    base = next((e for e in ordered if e.base or e.step == 0), None)
    latest = ordered[-1] if ordered else None
    names = list(dict.fromkeys(n for e in ordered for n in e.headline()))
    per_metric = []
    for name in names:
        points = [(e.step, e.value(name)) for e in ordered]
        points = [(s, v) for s, v in points if v is not None]
        best = max(points, key=lambda p: (p[1], p[0]), default=None)
        per_metric.append(
            {
                "metric": name,
                "base": _point(base, name),
                "latest": _point(latest, name),
                "best": None if best is None else {"step": best[0], "value": _finite(best[1])},
            }
        )
    return answer("evals", **_head(found), ranking_metric=metric, evals=len(ordered), metrics=per_metric)


def _point(event: Eval | None, name: str) -> dict[str, Any] | None:
    value = None if event is None else event.value(name)
    return None if event is None or value is None else {"step": event.step, "value": _finite(value)}


def checkpoints(runs: Runs, run: str, host: str | None = None) -> dict[str, Any]:
    found = runs.find(run, host)
    listed = read_checkpoints(found.folder.path, from_events=not found.executor.folders_here)
    rows = [
        {
            "name": r.name,
            "step": r.step,
            "size": r.size,
            "metrics": _numbers(r.metrics),
            "marks": list(r.marks),
            "engine": r.engine,
        }
        for r in listed.rows
    ]
    return answer("checkpoints", **_head(found), metric=listed.metric, checkpoints=rows)


def samples(runs: Runs, run: str, step: int | None = None, limit: int = 8, host: str | None = None) -> dict[str, Any]:
    if not 1 <= limit <= MAX_SAMPLES:
        raise AnswerError(f"limit {limit!r}: give a whole number from 1 to {MAX_SAMPLES}")
    found = runs.find(run, host)
    kept = [s for s in read_samples(found.folder, limit=500) if isinstance(s.get("step"), int)]
    steps = sorted({s["step"] for s in kept})
    if not kept:
        return answer("samples", **_head(found), step=None, steps=[], samples=[])
    chosen = steps[-1] if step is None else step
    if chosen not in steps:
        raise AnswerError(f"step {step} has no samples kept; the steps with samples: {_steps(steps)}")
    rows = [s for s in kept if s["step"] == chosen][:limit]
    records = [
        {
            "reward": _finite(s.get("reward")) if _is_number(s.get("reward")) else None,
            **untrusted(TEXT_CAP, prompt=_text(s.get("prompt")), completion=_text(s.get("completion"))),
        }
        for s in rows
    ]
    return answer("samples", **_head(found), step=chosen, steps=steps, text_cap=TEXT_CAP, samples=records)


def compare_runs(runs: Runs, run_ids: list[str], metric: str, host: str | None = None) -> dict[str, Any]:
    if not run_ids:
        raise AnswerError("runs is empty: name two runs or more (list_runs shows them)")
    rows = []
    for ref in dict.fromkeys(run_ids):
        found = runs.find(ref, host)
        stream = runs.stream(found.folder)
        series = stream.series.get(metric)
        evals_here = held_out_evals(found.folder.events_file)
        held = [e.value(metric) for _, e in sorted(evals_here.items())]
        held = [v for v in held if v is not None]
        if (series is None or not len(series)) and not held:
            known = ", ".join(sorted(stream.series)) or "none"
            raise AnswerError(f"run {found.run_id} has no metric {metric!r}; its metrics: {known}")
        row: dict[str, Any] = {"run_id": found.run_id, "host": found.host, "status": found.status().value}
        if series is not None and len(series):
            values = series.values
            row["training"] = {
                "steps": len(series),
                "last_step": series.steps[len(series) - 1],
                "last": _finite(values[-1]),
                "min": _finite(min(values)),
                "max": _finite(max(values)),
            }
        if held:
            row["held_out"] = {"evals": len(held), "latest": _finite(held[-1]), "best": _finite(max(held))}
        rows.append(row)
    return answer("compare_runs", metric=metric, runs=rows)


def logs(runs: Runs, run: str, lines: int = 100, host: str | None = None) -> dict[str, Any]:
    if not 1 <= lines <= MAX_LOG_LINES:
        raise AnswerError(f"lines {lines!r}: give a whole number from 1 to {MAX_LOG_LINES}")
    found = runs.find(run, host)
    if found.executor.folders_here:
        text = _tail(found.folder.log_file)
    else:
        try:
            text = "".join(found.executor.logs(found.info))
        except ExecutorError as exc:
            raise AnswerError(f"host {found.executor.name}: {clean_line(exc)}") from None
    last = list(deque(text.splitlines(), maxlen=lines))
    return answer("logs", **_head(found), lines=len(last), **untrusted(TEXT_CAP, log=last))


def _tail(path: os.PathLike) -> str:
    try:
        with open(path, "rb") as fh:
            size = fh.seek(0, 2)
            fh.seek(max(0, size - LOG_TAIL_BYTES))
            return fh.read().decode(errors="replace")
    except OSError:
        return ""


def _head(found: FoundRun) -> dict[str, Any]:
    return {"run_id": found.run_id, "host": found.host, "read_at": time.time()}


def _steps(steps: list[int]) -> str:
    shown = ", ".join(map(str, steps[-20:]))
    return ("…, " if len(steps) > 20 else "") + shown


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _numbers_list(value: Any) -> bool:
    return isinstance(value, list) and all(_is_number(v) for v in value)


def _finite(value: Any) -> float | None:
    return float(value) if _is_number(value) else None


def _numbers(values: Any) -> dict[str, float | None]:
    return {str(k): _finite(v) for k, v in dict(values).items()}
