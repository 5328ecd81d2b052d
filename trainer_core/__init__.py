"""trainer_core: the headless GRPO runner that writes run folders.

``trainer_core.contract`` is the light layer every reader of a run folder shares (RunConfig, the typed
events, statuses); ``train`` imports torch, transformers and TRL when it is called, not when this package
is imported.
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .contract.config.run_config import ConfigError, RunConfig

__all__ = ["ConfigError", "RunConfig", "train"]


def __getattr__(name: str):
    """RunConfig and ConfigError on first use: a reader of run folders that needs neither (the monitor's backlog
    child) starts without the config layer."""
    if name in ("ConfigError", "RunConfig"):
        from .contract.config import run_config

        return getattr(run_config, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def train(config, runs_dir=None, **kwargs):
    """Run GRPO in this process; see ``trainer_core.training.runner.train``."""
    from trainer_core.training.runner import train as _train

    return _train(config, runs_dir, **kwargs)
