"""A compromised host's grpo-tui: installed as a host's ``command:``, it answers what this machine asks with rows
and stream lines built to escape the mirror cache or crash a parser.

Standard library only, and independent of grpo-tui's own sender: it writes the wire by hand, as an attacker
would. ``runs --json`` lists hostile rows around one good row (``good-run``); ``events PATH --mirror`` sends a
valid start (header, config, state, a first event) and then the hostile line of the scenario named by PATH's
last component (``SCENARIOS``), then an ``end`` that must never be applied. ``good-run`` gets
``traversal-file`` right after the header, before its copy has anything to show. ``$HOSTILE_SENTINEL`` is a folder an absolute run id points into; ``$HOSTILE_RUN_FORMAT`` the run
format to claim.
"""

from __future__ import annotations

import base64
import json
import os
import sys


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


EVENT = b'{"type": "run_started", "time": 1.0}\n'
STATE = json.dumps({"format_version": 1, "status": "running", "started": 1.0}).encode()


def rows(runs_dir: str) -> list:
    sentinel = os.environ.get("HOSTILE_SENTINEL", "/nonexistent")
    good = {
        "run_id": "good-run",
        "path": f"{runs_dir}/good-run",
        "project": "fine",
        "model": "tiny",
        "status": "running",
        "step": 3,
        "total": 10,
        "last_reward": 0.5,
        "started": 1.0,
        "ended": None,
        "duration": 2.0,
        "warnings": 0,
        "last_warning": None,
        "exit_reason": None,
        "alerts": [],
        "host": None,
        "queue_reason": None,
    }
    return [
        {**good, "run_id": "../../../../x", "path": f"{runs_dir}/x"},  # lands four folders above the host's cache
        {**good, "run_id": f"{sentinel}/absolute", "path": f"{sentinel}/absolute"},
        {**good, "run_id": "wrong-types", "step": "12", "last_reward": "high"},
        {**good, "run_id": 7},
        "not a row",
        {**good, "run_id": "bad-alert", "alerts": [{"rule": ["stall"], "severity": "warn"}]},
        {**good, "run_id": "negative", "duration": -5, "total": -1},
        good,
        {**good, "project": "listed twice"},
    ]


SCENARIOS = {
    "traversal-file": {"file": "../../../../x/config.yaml", "data": b64(b"owned: true\n")},
    "absolute-file": {"file": "/tmp/owned-config.yaml", "data": b64(b"owned: true\n")},
    "traversal-append": {"append": "../../../../x/events.jsonl", "offset": 0, "data": b64(EVENT)},
    "negative-offset": {"append": "events.jsonl", "offset": -5, "data": b64(EVENT)},
    "huge-offset": {"append": "trainer.log", "offset": 1 << 62, "data": b64(b"x\n")},
    "offset-past-end": {"append": "events.jsonl", "offset": 1 << 20, "data": b64(EVENT)},
    "string-offset": {"append": "events.jsonl", "offset": str(len(EVENT)), "data": b64(EVENT)},
    "bad-base64": {"append": "events.jsonl", "offset": len(EVENT), "data": "!!not base64!!"},
    "not-object": ["append", "events.jsonl"],
    "not-json": "{not json",
    "status-number": {"status": 3, "alerts": []},
    "alerts-string": {"status": "running", "alerts": "stall"},
    "gpus-strings": {"gpus": [{"index": "0", "name": "GPU", "memory_total": "80", "memory_used": 0, "utilization": 0}]},
    "state-not-object": {"file": "state.json", "data": b64(b"[1, 2]")},
    "reset-path": {"reset": "/etc/passwd"},
    "other-run": {"run": {"run_id": "someone-else", "path": "/runs/someone-else", "format_version": 1}},
}


def line(message) -> None:
    text = message if isinstance(message, str) else json.dumps(message)
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def mirror(path: str) -> int:
    run_id = path.rstrip("/").rsplit("/", 1)[-1]
    scenario = "traversal-file" if run_id == "good-run" else run_id
    if scenario not in SCENARIOS:
        print(f"error: no run {path!r}", file=sys.stderr)
        return 2
    line({"run": {"run_id": run_id, "path": path, "format_version": int(os.environ.get("HOSTILE_RUN_FORMAT", "1"))}})
    if run_id == "good-run":
        line(SCENARIOS[scenario])
    line({"file": "config.yaml", "data": b64(b"model: tiny\n")})
    line({"file": "state.json", "data": b64(STATE)})
    line({"append": "events.jsonl", "offset": 0, "data": b64(EVENT)})
    line(SCENARIOS[scenario])
    line({"end": "completed"})
    return 0


def main(argv: list[str]) -> int:
    command = argv[0] if argv else ""
    runs_dir = argv[argv.index("--runs-dir") + 1] if "--runs-dir" in argv else "runs"
    words = [w for i, w in enumerate(argv[1:], 1) if not w.startswith("-") and argv[i - 1] != "--runs-dir"]
    if command == "info":
        line(
            {
                "version": "0.0-hostile",
                "run_format": int(os.environ.get("HOSTILE_RUN_FORMAT", "1")),
                "hostname": "hostile",
                "runs_dir": runs_dir,
                "python": "3",
                "gpus": [],
            }
        )
        return 0
    if command == "runs":
        listed = rows(runs_dir)
        if words and words != ["latest"]:
            listed = [
                r
                for r in listed
                if isinstance(r, dict)
                and isinstance(r["run_id"], str)
                and any(r["run_id"].startswith(w) for w in words)
            ][:1]  # a ref names one run
        line(listed)
        return 0
    if command == "events" and "--mirror" in argv:
        return mirror(words[0])
    if command == "stop":
        line({"run_id": "good-run", "left": "none", "message": 5})
        return 0
    print(f"error: the hostile host does not do {command!r}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
