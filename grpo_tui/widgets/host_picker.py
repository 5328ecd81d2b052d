"""Where a new run runs: this machine or a host of the hosts file. Posts the chosen place's GPUs."""

from __future__ import annotations

from textual import work
from textual.message import Message
from textual.widgets import Select

from grpo_tui.services.machine.gpus import GPU

from ..executors.base import ExecutorError
from ..executors.hosts import LOCAL
from ..executors.registry import ExecutorRegistry


class HostPicker(Select[str]):
    """A ``Select`` of ``local`` and the hosts; on a change it asks that place's executor (the app's registry:
    one per host) for the GPUs a run there can use, in a worker, and posts ``Chosen``."""

    class Chosen(Message):
        def __init__(self, host: str, gpus: list[GPU], error: str | None = None):
            super().__init__()
            self.host, self.gpus, self.error = host, gpus, error

    def __init__(self, executors: ExecutorRegistry, **kwargs):
        super().__init__(
            [("this machine", LOCAL), *((name, name) for name in executors.hosts)],
            value=LOCAL,
            allow_blank=False,
            compact=True,
            **kwargs,
        )
        self.executors = executors

    @property
    def host(self) -> str:
        return str(self.value)

    def on_select_changed(self, event: Select.Changed) -> None:
        event.stop()
        self.read_gpus(self.host)

    @work(thread=True, exclusive=True, exit_on_error=False, group="host-gpus")
    def read_gpus(self, host: str) -> None:
        try:
            gpus = self.executors.get(host).gpus()
        except ExecutorError as exc:
            self.post_message(self.Chosen(host, [], str(exc)))
            return
        self.post_message(self.Chosen(host, gpus))
