"""Shared fixtures: one tiny offline model per test session (per pytest-xdist worker), private runs dirs; the
real-vLLM environment built in the background from the start of a session that needs it (tests/vllm_env.py); one
torch thread per process. Helpers: tests/helpers.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from . import vllm_env
from .helpers import time_scale

# The suite's processes share the machine's cores: two pytest-xdist workers, the trainers they start, servers. With
# torch's default of one thread per core each, two tiny-model trainings at once took 58 s where one took 16 s (two
# cores); with one thread each, 14 s for both, and one alone is as fast. Set before anything imports torch here,
# inherited by every process the tests start.
os.environ.setdefault("OMP_NUM_THREADS", "1")


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """GRPO_TUI_TEST_TIME_SCALE lengthens pytest-timeout's limit for each test as it does every wait (tests/helpers.py):
    else a slow machine's longer waits would be cut short by the limit. Before pytest-timeout reads it."""
    scale = time_scale()
    base = getattr(config.option, "timeout", None)
    if base is None:
        try:
            ini = config.getini("timeout")
        except ValueError:  # pytest-timeout is not installed
            ini = None
        base = float(ini) if ini else None
    if scale != 1 and base:
        config.option.timeout = base * scale


def pytest_collection_finish(session: pytest.Session) -> None:
    vllm_env.start(session)


def pytest_sessionfinish(session: pytest.Session) -> None:
    vllm_env.stop(session)


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory) -> str:
    """Random weights: byte soup that never ends, which the health-rule thresholds in the tests are set against."""
    from trainer_core.commands.tiny_model import build_tiny_model

    return str(build_tiny_model(tmp_path_factory.mktemp("tiny-model"), pretrain=False))


@pytest.fixture(scope="session")
def pretrained_tiny_model(tmp_path_factory) -> str:
    """The demo's model: pre-trained for a few seconds, it writes short sentences and ends them."""
    from trainer_core.commands.tiny_model import build_tiny_model

    return str(build_tiny_model(tmp_path_factory.mktemp("pretrained-tiny-model"), pretrain=True))


@pytest.fixture
def runs_dir(tmp_path) -> Path:
    return tmp_path / "runs"
