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

from trainer_core.contract.config import RunConfig
from trainer_core.contract.run_folder import RunFolder, resolve_runs_dir

from .safe_text import clean, clean_line
from .theming import DEFAULT_THEME, theme_data


class GrpoApp(App):
    TITLE = "grpo-tui"
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("R", "show_runs", "Runs"),
        Binding("N", "new_run", "New run"),
    ]

    def __init__(self, runs_dir: Path, *, theme: str | None = None, watch: Path | None = None,
                 launch_config: RunConfig | None = None, start: str = "runs", remote=None, hosts=None):
        super().__init__()
        self.runs_dir = runs_dir
        self.remote = remote  # (executor, run) of `watch --host`
        self.hosts = hosts if hosts is not None else {}  # executors/hosts.py: the hosts file's hosts
        self.start = start
        self.watch_path = watch
        self.launch_config = launch_config
        self.requested_theme = theme or DEFAULT_THEME

    def on_mount(self) -> None:
        for data in theme_data():
            self.register_theme(Theme(**data))
        self.theme = self.requested_theme
        from .screens.runs import RunsScreen

        self.push_screen(RunsScreen(self.runs_dir, self.hosts))
        if self.start == "watch" and self.remote is not None:
            self.open_remote(*self.remote)
        elif self.start == "watch" and self.watch_path is not None:
            self.open_monitor(self.watch_path)
        elif self.start == "launch":
            self.open_launch(self.launch_config)

    def notify(self, message: str, *, title: str = "", severity="information", timeout: float | None = None,
               markup: bool = True) -> None:
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
            yield SystemCommand(binding.description, f"{binding.description} (key: {binding.key})",
                                partial(self._run_palette_action, target, action))

    def _run_palette_action(self, target, action: str) -> None:
        self.call_later(target.run_action, action)

    def open_monitor(self, path: Path) -> None:
        from .screens.monitor import MonitorScreen

        self.push_screen(MonitorScreen(RunFolder(Path(path))))

    def open_remote(self, executor, run) -> None:
        """The monitor of a run on another host, once its local copy has config and state (a worker waits)."""
        self.notify(f"connecting to {executor.name} for run {run.run_id}…", timeout=3)
        self._open_remote(executor, run)

    @work(thread=True, group="remote", exit_on_error=False)
    def _open_remote(self, executor, run) -> None:
        from .executors.hosts import HostError
        from .executors.remote_run import RemoteRun

        try:
            remote = RemoteRun.open(executor, run)
        except HostError as exc:
            self.call_from_thread(self.notify, str(exc), severity="error", timeout=10)
            return
        self.call_from_thread(self._push_remote, remote)

    def _push_remote(self, remote) -> None:
        from .screens.monitor import MonitorScreen

        self.push_screen(MonitorScreen(remote.mirror.folder, remote=remote))

    def open_launch(self, config: RunConfig | None = None) -> None:
        from .screens.launch import LaunchScreen

        self.push_screen(LaunchScreen(self.runs_dir, config, hosts=self.hosts))

    def action_show_runs(self) -> None:
        from .screens.runs import RunsScreen

        while len(self.screen_stack) > 2:
            self.pop_screen()
        if not isinstance(self.screen, RunsScreen):
            self.push_screen(RunsScreen(self.runs_dir, self.hosts))

    def action_new_run(self) -> None:
        self.open_launch()


def make_app(runs_dir=None, *, theme: str | None = None, watch: Path | None = None,
             launch_config: RunConfig | None = None, start: str = "runs", remote=None, hosts=None) -> GrpoApp:
    """The app as the CLI starts it; ``runs_dir`` follows --runs-dir, $GRPO_TUI_RUNS_DIR, ./runs. ``hosts``:
    the hosts whose runs it lists too (default: the hosts file's; a bad hosts file raises HostError)."""
    from .executors.hosts import load_hosts

    return GrpoApp(resolve_runs_dir(runs_dir).resolve(), theme=theme or os.environ.get("GRPO_TUI_THEME"), watch=watch,
                   launch_config=launch_config, start=start, remote=remote,
                   hosts=load_hosts() if hosts is None else hosts)
