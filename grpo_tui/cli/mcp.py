"""``grpo-tui mcp``: the Model Context Protocol server over the runs, for coding agents (docs/agents-api.md).

stdio by default (how Claude Code, Cursor and Codex start a local server): stdout is the protocol and every log
line goes to stderr. ``--http [PORT]`` serves streamable HTTP on 127.0.0.1 with a bearer token. Stopping and
resuming runs are refused unless ``--allow-actions``. The SDK is the extra ``grpo-tui[mcp]``; without it the
command says how to install it and exits 2.
"""

from __future__ import annotations

import importlib.util

from .common import BadInput, add_runs_dir

INSTALL = "pip install 'grpo-tui[mcp]'"


def register(sub) -> None:
    parser = sub.add_parser(
        "mcp",
        help="serve the runs to coding agents over the Model Context Protocol (docs/agents-api.md)",
        description="A Model Context Protocol server over the runs of this machine and of the hosts in hosts.yaml: "
        "read tools (list_runs, run_summary, metric_history, health, evals, checkpoints, samples, compare_runs, "
        "logs) and, with --allow-actions, stop_run, resume_run and rollback_run. stdio by default; every log goes to "
        "stderr.",
    )
    add_runs_dir(parser)
    parser.add_argument(
        "--allow-actions",
        action="store_true",
        help="serve stop_run, resume_run and rollback_run (off by default: they answer a tool error and nothing "
        "changes)",
    )
    parser.add_argument(
        "--http",
        nargs="?",
        type=int,
        const=8765,
        default=None,
        metavar="PORT",
        help="serve streamable HTTP on 127.0.0.1:PORT/mcp instead of stdio (default port: 8765); every request "
        "needs the bearer token",
    )
    parser.add_argument(
        "--token",
        default=None,
        metavar="T",
        help="with --http: the bearer token to require (default: $GRPO_TUI_MCP_TOKEN, else one generated and "
        "printed on stderr)",
    )
    parser.set_defaults(handler=run)


def run(args) -> int:
    if importlib.util.find_spec("mcp") is None:
        raise BadInput(f"grpo-tui mcp needs the Model Context Protocol SDK, which this install lacks: {INSTALL}")
    if args.token is not None and args.http is None:
        raise BadInput("--token applies to --http only: a stdio server is reached by the client that starts it")
    if args.http is not None and not 1 <= args.http <= 65535:
        raise BadInput(f"--http {args.http}: a port from 1 to 65535 (e.g. --http 8765)")
    if args.token is not None and len(args.token) < 16:
        raise BadInput("--token: at least 16 characters (leave it out and a strong one is generated)")
    from ..mcp_server.server import build, log_to_stderr

    log_to_stderr()
    server = build(args.runs_dir, allow_actions=args.allow_actions)
    try:
        if args.http is None:
            server.run("stdio")
        else:
            from ..mcp_server.http_auth import pick_token, serve_http

            token, set_by = pick_token(args.token)
            serve_http(server, args.http, token, set_by)
    except KeyboardInterrupt:
        pass
    except OSError as exc:
        raise BadInput(str(exc)) from None
    return 0
