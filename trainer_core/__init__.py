"""trainer_core: the headless GRPO runner that writes run folders.

``trainer_core.contract`` is the light layer every reader of a run folder shares (RunConfig, the typed
events, statuses); ``train`` imports torch, transformers and TRL when it is called, not when this package
is imported.
"""

from .contract.config.run_config import ConfigError, RunConfig

__all__ = ["ConfigError", "RunConfig", "train"]


def train(config, runs_dir=None, **kwargs):
    """Run GRPO in this process; see ``trainer_core.runner.train``."""
    from .runner import train as _train

    return _train(config, runs_dir, **kwargs)
