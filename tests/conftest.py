"""Shared fixtures: one tiny offline model per test session, private runs dirs; the real-vLLM environment built
in the background from the start of a session that needs it (tests/vllm_env.py). Helpers: tests/helpers.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from . import vllm_env


def pytest_collection_finish(session: pytest.Session) -> None:
    vllm_env.start(session)


def pytest_sessionfinish(session: pytest.Session) -> None:
    vllm_env.stop(session)


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory) -> str:
    """Random weights: byte soup that never ends, which the health-rule thresholds in the tests are set against."""
    from trainer_core.tiny_model import build_tiny_model

    return str(build_tiny_model(tmp_path_factory.mktemp("tiny-model"), pretrain=False))


@pytest.fixture(scope="session")
def pretrained_tiny_model(tmp_path_factory) -> str:
    """The demo's model: pre-trained for a few seconds, it writes short sentences and ends them."""
    from trainer_core.tiny_model import build_tiny_model

    return str(build_tiny_model(tmp_path_factory.mktemp("pretrained-tiny-model"), pretrain=True))


@pytest.fixture
def runs_dir(tmp_path) -> Path:
    return tmp_path / "runs"
