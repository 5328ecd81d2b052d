"""The Textual app: screen routing, themes and global bindings. Screens do the work.

``make_app`` is shared by the CLI and the tests, so what the tests drive is what users run.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from functools import partial
from pathlib import Path

from textual import work
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import Screen
from textual.theme import Theme
from textual.worker import WorkerFailed

from grpo_tui.services.serving.web_mode import control, read_only_from_env
from trainer_core.contract.config.run_config import RunConfig
from trainer_core.contract.run.folder import RunFolder, resolve_runs_dir

from .executors.base import Executor, ExecutorError, RunAt, RunRef
from .executors.hosts import Host, load_hosts
from .executors.registry import ExecutorRegistry
from .executors.watched_run import WatchedRun
from .safe_text import clean, clean_line
from .terminal_alert import DEFAULT_ALERT, AlertMode, alert_sequence, parse_mode
from .theming import DEFAULT_THEME, series_variables, theme_data


class GrpoApp(App):
    TITLE = "grpo-tui"
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("R", "show_runs", "Runs"),
        Binding("N", "new_run", "New run"),
    ]

    def __init__(
        self,
        runs_dir: Path,
        *,
        theme: str | None = None,
        watch: Path | None = None,
        launch_config: RunConfig | None = None,
        start: str = "runs",
        watch_run: tuple[Executor, RunRef] | None = None,
        hosts: dict[str, Host] | None = None,
        alert: AlertMode = DEFAULT_ALERT,
        read_only: bool = False,
    ):
        super().__init__()
        self.read_only = (
            read_only  # served to a browser without --allow-control: watch only (services/serving/web_mode.py)
        )
        self.alert_mode: AlertMode = alert  # what a critical warning does at the terminal (terminal_alert.py)
        self.runs_dir = runs_dir
        self.watch_run = watch_run  # (executor, run) of `watch RUN`: the run the app opens on
        self.hosts = hosts if hosts is not None else {}  # executors/hosts.py: the hosts file's hosts
        self.executors = ExecutorRegistry(runs_dir, self.hosts)  # one executor per host, for every screen
        self.start = start
        self.watch_path = watch
        self.launch_config = launch_config
        self.requested_theme = theme or DEFAULT_THEME

    def alert_critical(self, rule: str, step: int, message: str) -> None:
        """Ring the bell, or send an OSC 9 desktop notification, for a critical warning that just arrived."""
        text = f"grpo-tui: {rule} at step {step}: {message}"
        sequence = alert_sequence(self.alert_mode, text, in_tmux=bool(os.environ.get("TMUX")))
        if sequence and self._driver is not None:
            self._driver.write(sequence)
            self._driver.flush()

    def _handle_exception(self, error: Exception) -> None:
        """An uncaught exception ends the app with exit code 1, as Textual's does, but the terminal gets a
        notice without data values and the traceback (no locals) goes to a private file (crash_report.py)."""
        from .crash_report import crash_notice, write_crash

        self._return_code = 1
        if self._exception is None:  # Pilot re-raises the first one in the test that drives the app
            self._exception = error
            self._exception_event.set()
        cause = error.error if isinstance(error, WorkerFailed) else error  # a worker's: raised in its thread
        self._exit_renderables.append(crash_notice(cause, write_crash(cause)))
        self.bell()
        self._close_messages_no_wait()

    def get_theme_variable_defaults(self) -> dict[str, str]:
        """The variables our stylesheets use beyond Textual's, for a theme that lacks them (Textual's own)."""
        return {**super().get_theme_variable_defaults(), **series_variables()}

    def on_mount(self) -> None:
        for data in theme_data():
            self.register_theme(Theme(**data))
        self.theme = self.requested_theme
        from .screens.runs import RunsScreen

        self.push_screen(RunsScreen(self.runs_dir, self.executors))
        if self.start == "watch" and self.watch_run is not None:
            self.open_run(*self.watch_run)
        elif self.start == "watch" and self.watch_path is not None:
            self.open_monitor(self.watch_path)
        elif self.start == "launch":
            self.open_launch(self.launch_config)

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity="information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        """Every notification is literal text: what it says may come from a run, a dataset or a host."""
        super().notify(clean(message), title=clean_line(title), severity=severity, timeout=timeout, markup=False)

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        """The palette offers every key binding of the current screen, so nothing needs remembering."""
        yield from super().get_system_commands(screen)
        seen = set()
        for binding in [*screen.BINDINGS, *self.BINDINGS]:
            if not isinstance(binding, Binding) or not binding.description or binding.action in seen:
                continue
            seen.add(binding.action)
            target = self if binding.action.startswith("app.") or binding in self.BINDINGS else screen
            action = binding.action.removeprefix("app.")
            yield SystemCommand(
                binding.description,
                f"{binding.description} (key: {binding.key})",
                partial(self._run_palette_action, target, action),
            )

    def _run_palette_action(self, target, action: str) -> None:
        self.call_later(target.run_action, action)

    def open_monitor(self, path: Path) -> None:
        """The monitor of the run folder at ``path``, on this machine."""
        folder = RunFolder(Path(path))
        local = self.executors.local
        run = RunAt(folder.run_id, folder.path)
        self._push_monitor(WatchedRun(local, run, local.mirror(run)))

    def open_run(self, executor: Executor, run: RunRef) -> None:
        """The monitor of ``run`` on ``executor``. A folder of this machine opens at once; another's copy first
        gets config and state from its host (a worker waits)."""
        if executor.folders_here:
            self._push_monitor(WatchedRun(executor, run, executor.mirror(run)))
            return
        self.notify(f"connecting to {executor.name} for run {run.run_id}…", timeout=3)
        self._open_copy(executor, run)

    @work(thread=True, group="remote", exit_on_error=False)
    def _open_copy(self, executor: Executor, run: RunRef) -> None:
        try:
            watched = WatchedRun.open(executor, run)
        except ExecutorError as exc:
            self.call_from_thread(self.notify, str(exc), severity="error", timeout=10)
            return
        self.call_from_thread(self._push_monitor, watched)

    def _push_monitor(self, watched: WatchedRun) -> None:
        from .screens.monitor import MonitorScreen

        self.push_screen(MonitorScreen(watched))

    def open_launch(self, config: RunConfig | None = None) -> None:
        from .screens.launch import LaunchScreen

        self.push_screen(LaunchScreen(self.runs_dir, config, executors=self.executors))

    def action_show_runs(self) -> None:
        from .screens.runs import RunsScreen

        while len(self.screen_stack) > 2:
            self.pop_screen()
        if not isinstance(self.screen, RunsScreen):
            self.push_screen(RunsScreen(self.runs_dir, self.executors))

    @control
    def action_new_run(self) -> None:
        self.open_launch()


def make_app(
    runs_dir=None,
    *,
    theme: str | None = None,
    watch: Path | None = None,
    launch_config: RunConfig | None = None,
    start: str = "runs",
    watch_run: tuple[Executor, RunRef] | None = None,
    hosts: dict[str, Host] | None = None,
    alert: str | None = None,
    read_only: bool | None = None,
) -> GrpoApp:
    """The app as the CLI starts it; ``runs_dir`` follows --runs-dir, $GRPO_TUI_RUNS_DIR, ./runs. ``hosts``:
    the hosts whose runs it lists too (default: the hosts file's; a bad hosts file raises HostError).
    ``watch_run``: (executor, run) to open the monitor of, with ``start="watch"``. ``alert``: bell, desktop or
    off (default: $GRPO_TUI_ALERT, else bell); a bad value raises ValueError naming it. ``read_only``: refuse
    launch, stop, resume and extend (default: $GRPO_TUI_READ_ONLY=1, which ``grpo-tui serve`` sets)."""
    chosen = alert or os.environ.get("GRPO_TUI_ALERT")
    source = "alert" if alert else "$GRPO_TUI_ALERT"

    return GrpoApp(
        resolve_runs_dir(runs_dir).resolve(),
        theme=theme or os.environ.get("GRPO_TUI_THEME"),
        watch=watch,
        launch_config=launch_config,
        start=start,
        watch_run=watch_run,
        hosts=load_hosts() if hosts is None else hosts,
        alert=parse_mode(chosen, source) if chosen else DEFAULT_ALERT,
        read_only=read_only_from_env() if read_only is None else read_only,
    )
