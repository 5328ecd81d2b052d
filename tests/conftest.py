"""Shared fixtures: one tiny offline model per test session, private runs dirs. Helpers: tests/helpers.py."""

from __future__ import annotations

from pathlib import Path

import pytest


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
