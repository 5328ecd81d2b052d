"""Where a new run runs: this machine or a host of the hosts file. Posts the chosen host's GPUs."""

from __future__ import annotations

from textual import work
from textual.message import Message
from textual.widgets import Select

from ..executors.hosts import LOCAL
from ..services.gpus import GPU, list_gpus, visible_indices


class HostPicker(Select[str]):
    """A ``Select`` of ``local`` and the hosts; on a change it reads that host's GPUs (a worker) and posts
    ``Chosen``. ``executor()`` is the chosen host's (one per host, reused)."""

    class Chosen(Message):
        def __init__(self, host: str, gpus: list[GPU], error: str | None = None):
            super().__init__()
            self.host, self.gpus, self.error = host, gpus, error

    def __init__(self, hosts: dict, **kwargs):
        super().__init__([("this machine", LOCAL), *((name, name) for name in hosts)], value=LOCAL,
                         allow_blank=False, compact=True, **kwargs)
        self.hosts = hosts
        self._executors: dict = {}

    @property
    def host(self) -> str:
        return str(self.value)

    def executor(self, host: str | None = None):
        from ..executors.ssh import SshExecutor

        host = host or self.host
        if host not in self._executors:
            self._executors[host] = SshExecutor(self.hosts[host])
        return self._executors[host]

    def on_select_changed(self, event: Select.Changed) -> None:
        event.stop()
        if self.host == LOCAL:
            visible = visible_indices()
            self.post_message(self.Chosen(LOCAL, [g for g in list_gpus() if g.index in visible]))
        else:
            self.read_gpus(self.host)

    @work(thread=True, exclusive=True, exit_on_error=False, group="host-gpus")
    def read_gpus(self, host: str) -> None:
        from ..executors.hosts import HostError

        try:
            info = self.executor(host).info()
        except HostError as exc:
            self.post_message(self.Chosen(host, [], str(exc)))
            return
        try:
            gpus = [GPU.from_dict(g) for g in info.get("gpus") or []]
        except (TypeError, ValueError) as exc:
            self.post_message(self.Chosen(host, [], f"host {host}: bad GPU list: {exc}"))
            return
        self.post_message(self.Chosen(host, gpus))
