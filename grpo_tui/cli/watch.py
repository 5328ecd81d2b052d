"""``grpo-tui watch``: the monitor in a terminal, a plain live view when piped or with ``--once``.

With ``--host`` the run is watched through a local copy of its folder that one stream from the host keeps
current (``executors/mirror.py``); a dropped connection is picked up again where the copy ends.
"""

from __future__ import annotations

from .common import BadInput, add_host, add_run_ref, add_theme, interactive, resolve, run_app


def register(sub) -> None:
    parser = sub.add_parser("watch", help="live view of a run's metrics, warnings and state")
    add_run_ref(parser)
    add_host(parser)
    parser.add_argument("--once", action="store_true", help="print the current view once (plain text) and exit")
    add_theme(parser)
    parser.set_defaults(handler=run)


def run(args) -> int:
    from .remote import is_remote

    if is_remote(args):
        return watch_remote(args)
    folder = resolve(args)
    if interactive() and not args.once:
        return run_app(args.runs_dir, args.theme, watch=folder.path, start="watch")
    from ..services.live_view import watch

    try:
        watch(folder, once=args.once)
    except KeyboardInterrupt:
        pass
    return 0


def watch_remote(args) -> int:
    from ..executors.hosts import HostError
    from ..services.live_view import watch
    from .remote import executor

    ex = executor(args)
    try:
        run = ex.find(args.run)
        if interactive() and not args.once:
            return run_app(args.runs_dir, args.theme, start="watch", remote=(ex, run))
        mirror = ex.mirror(run)
        if args.once:
            mirror.sync()
            watch(mirror.folder, once=True)
            return 0
        mirror.start()
        try:
            if not mirror.wait_ready(120):
                raise HostError(f"host {ex.name}: run {run.run_id} sent nothing within 120s")
            watch(mirror.folder)
        except KeyboardInterrupt:
            pass
        finally:
            mirror.stop()
    except HostError as exc:
        raise BadInput(str(exc)) from None
    return 0
