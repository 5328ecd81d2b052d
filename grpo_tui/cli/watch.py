"""``grpo-tui watch``: the monitor in a terminal, a plain live view when piped or with ``--once``."""

from __future__ import annotations

from .common import add_run_ref, add_theme, interactive, resolve, run_app


def register(sub) -> None:
    parser = sub.add_parser("watch", help="live view of a run's metrics, warnings and state")
    add_run_ref(parser)
    parser.add_argument("--once", action="store_true", help="print the current view once (plain text) and exit")
    add_theme(parser)
    parser.set_defaults(handler=run)


def run(args) -> int:
    folder = resolve(args)
    if interactive() and not args.once:
        return run_app(args.runs_dir, args.theme, watch=folder.path, start="watch")
    from ..services.live_view import watch

    try:
        watch(folder, once=args.once)
    except KeyboardInterrupt:
        pass
    return 0
