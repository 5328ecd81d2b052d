"""``grpo-tui watch``: the monitor in a terminal, a plain live view when piped or with ``--once``.

With ``--host`` the run is watched through a local copy of its folder that one stream from the host keeps
current (``executors/mirror.py``); a dropped connection is picked up again where the copy ends. Either way the
run is found and its folder given by its executor (a run here is watched in its own folder). The plain view
ends with the held-out panel (``watch_evals.py``): with ``--once`` under the frame, piped when the run ends.
"""

from __future__ import annotations

from .common import BadInput, add_host, add_run_ref, add_theme, interactive, run_app


def register(sub) -> None:
    parser = sub.add_parser(
        "watch",
        help="live view of a run's metrics, warnings and state",
        description="Live view of a run's metrics, warnings and state, until the run ends. Lines of events.jsonl "
        "that are no event are skipped and counted: those at its end when the view starts (its last 64 KiB), and "
        "those appended while it is open, and where the first is.",
    )
    add_run_ref(parser)
    add_host(parser)
    parser.add_argument(
        "--once",
        action="store_true",
        help="print the current view once (plain text) and exit; a line says how many lines at the end of "
        "events.jsonl (its last 64 KiB) were no event and were skipped, and where the first is",
    )
    add_theme(parser)
    parser.set_defaults(handler=run)


def run(args) -> int:
    from grpo_tui.services.stream.live_view import plain_console, watch

    from ..executors.base import ExecutorError
    from ..executors.watched_run import wait_ready
    from .remote import executor
    from .watch_evals import eval_panel

    ex = executor(args)  # this machine's without --host
    try:
        run = ex.find(args.run)
        if interactive() and not args.once:
            return run_app(args.runs_dir, args.theme, start="watch", watch_run=(ex, run))
        copy = ex.mirror(run)  # a run here: its own folder
        try:
            if args.once:
                copy.sync()
                watch(copy.folder, once=True)
                plain_console().print(eval_panel(copy.folder))
                return 0
            copy.start()
            try:
                wait_ready(copy, ex, run)
                watch(copy.folder)
                plain_console().print(eval_panel(copy.folder))
            finally:
                copy.stop()
        except KeyboardInterrupt:
            pass
    except ExecutorError as exc:
        raise BadInput(str(exc)) from None
    return 0
