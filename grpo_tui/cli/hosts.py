"""``grpo-tui hosts``: the configured hosts, whether each answers, its grpo-tui version and GPU count."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

from ..executors.base import ExecutorError
from ..executors.hosts import HostError, find_host, hosts_file, load_hosts
from ..executors.registry import ExecutorRegistry
from .common import BadInput, interactive


def register(sub) -> None:
    parser = sub.add_parser(
        "hosts",
        help="list the hosts of the hosts file: reachable, grpo-tui version, GPUs",
        description=f"Check every host of the hosts file ({hosts_file()}; $GRPO_TUI_HOSTS names "
        "another), or those given with --host. In a terminal this is also where a password or 2FA "
        "prompt is answered once: the connection it opens is shared by the app and every command.",
    )
    parser.add_argument(
        "--host", action="append", default=None, metavar="NAME", help="check only this host (repeatable)"
    )
    parser.add_argument("--json", action="store_true", help="print the list as JSON")
    parser.set_defaults(handler=run)


def check(name: str, executors: ExecutorRegistry) -> dict:
    host = find_host(name, executors.hosts)
    row = {
        "name": host.name,
        "ssh": host.destination,
        "reachable": False,
        "version": None,
        "run_format": None,
        "gpus": None,
        "runs_dir": None,
        "error": None,
    }
    try:
        info = executors.get(host.name).info()
    except ExecutorError as exc:
        row["error"] = str(exc)
        return row
    row.update(
        reachable=True, version=info.version, run_format=info.run_format, gpus=len(info.gpus), runs_dir=info.runs_dir
    )
    return row


def run(args) -> int:
    try:
        hosts = load_hosts()
    except HostError as exc:
        raise BadInput(str(exc)) from None
    names = args.host or list(hosts)
    if not names:
        print(f"no hosts: add them to {hosts_file()} (see docs/hosts.md), or pass --host user@machine")
        return 0
    prompt = interactive() and not args.json
    executors = ExecutorRegistry(hosts=hosts, interactive=prompt)
    if prompt:  # one prompt at a time on the terminal
        rows = [check(name, executors) for name in names]
    else:
        with ThreadPoolExecutor(max_workers=min(8, len(names))) as pool:
            rows = list(pool.map(lambda name: check(name, executors), names))
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        for row in rows:
            if row["reachable"]:
                print(
                    f"{row['name']:<16} ok   grpo-tui {row['version']}  {row['gpus']} GPU(s)  runs: {row['runs_dir']}"
                )
            else:
                print(f"{row['name']:<16} FAIL {row['error']}")
    return 0 if all(r["reachable"] for r in rows) else 1
