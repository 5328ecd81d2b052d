"""Local ports for the servers a run starts, always on 127.0.0.1, and how the trainer finds its server."""

from __future__ import annotations

import socket

from trainer_core.contract.config.checks import ConfigError

SERVER_URL_ENV = "GRPO_TUI_VLLM_SERVER_URL"  # the root tells the trainer where its server listens
SERVE_OVERRIDE_ENV = "GRPO_TUI_VLLM_SERVE"  # another executable serves in server mode (a test stand-in, no GPU)


def check_port(port: int) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            raise ConfigError(
                "vllm_port",
                f"port {port} on 127.0.0.1 is already taken; pass another --vllm-port "
                "or leave it out to pick a free one.",
            ) from None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
