"""Where the trainer leans on TRL's internals, an untried TRL is refused before training, naming why.

The TRL a future user installs cannot be installed here, so its trainer is stood in for by objects that lack
what a renamed attribute would take away; the checks under test are the real ones.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from trainer_core.contract.config.run_config import ConfigError
from trainer_core.contract.config.stack import TRL_CHECKED, UNTRIED_TRL_ENV, trl_is_checked
from trainer_core.generation import vllm_cpu_sync
from trainer_core.generation.vllm_cpu_sync import SyncError, install
from trainer_core.training.trl_setup import check_trl

FIRST, LAST = TRL_CHECKED


@pytest.mark.parametrize(
    ("version", "checked"),
    [
        (f"{FIRST}.0", True),
        (f"{FIRST}.3.dev0", True),
        (f"{FIRST}.1+local", True),
        (f"{LAST}.0", False),
        ("0.9.6", False),
        ("2.0.0", False),
        ("nonsense", False),
    ],
)
def test_the_checked_range_is_by_minor_version(version, checked):
    assert trl_is_checked(version) is checked


def test_a_run_refuses_an_untried_trl_naming_the_version_and_the_fix(monkeypatch):
    monkeypatch.delenv(UNTRIED_TRL_ENV, raising=False)
    check_trl(f"{FIRST}.2")
    with pytest.raises(ConfigError) as caught:
        check_trl(f"{LAST}.0")
    message = str(caught.value)
    assert f"TRL {LAST}.0" in message and f"trl>={FIRST},<{LAST}" in message and UNTRIED_TRL_ENV in message
    monkeypatch.setenv(UNTRIED_TRL_ENV, "1")
    check_trl(f"{LAST}.0")


def test_the_installed_trl_is_a_checked_one():
    import trl

    assert trl_is_checked(trl.__version__), trl.__version__


def _generation(**drop):
    fields = {"mode": "colocate", "sync_weights": lambda: None, "llm": object(), "_iter_named_params": lambda: []}
    return SimpleNamespace(**{k: v for k, v in fields.items() if k not in drop})


def test_server_mode_leaves_trl_s_sync_alone():
    assert install(SimpleNamespace(), "server") is None


def test_a_trainer_without_its_colocated_engine_fails_instead_of_training_unsynced():
    with pytest.raises(SyncError, match=r"GRPOTrainer\.vllm_generation"):
        install(SimpleNamespace(), "colocate")
    with pytest.raises(SyncError, match=r"vllm_generation\.sync_weights"):
        install(SimpleNamespace(vllm_generation=_generation(sync_weights=True)), "colocate")
    with pytest.raises(SyncError, match="mode 'server'"):
        install(SimpleNamespace(vllm_generation=SimpleNamespace(**{**vars(_generation()), "mode": "server"})))


def test_the_cpu_sync_needs_the_private_parameter_iterator_and_a_checked_trl(monkeypatch):
    monkeypatch.setattr(vllm_cpu_sync, "vllm_version", lambda: "0.31.0+cpu")
    monkeypatch.delenv(vllm_cpu_sync.NO_SYNC_ENV, raising=False)
    monkeypatch.delenv(UNTRIED_TRL_ENV, raising=False)
    with pytest.raises(SyncError, match=r"vllm_generation\._iter_named_params"):
        install(SimpleNamespace(vllm_generation=_generation(_iter_named_params=True)))
    generation = _generation()
    assert install(SimpleNamespace(vllm_generation=generation)) == "cpu"
    monkeypatch.setattr(vllm_cpu_sync, "_trl_version", lambda: f"{LAST}.0")
    with pytest.raises(SyncError, match=f"TRL {LAST}.0"):
        install(SimpleNamespace(vllm_generation=_generation()))
