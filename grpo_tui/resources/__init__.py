"""Files the installed package needs at run time: themes, the demo's environment and config, presets.

Read with ``importlib.resources``, never relative to a source checkout. The copies under ``themes/`` and
``examples/`` in the repository point here.

The demo files are handed to other processes (the trainer imports the environment by file path), so they
must be real files: that holds for an installed or editable package, not for one imported from a zip.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

DEMO_CONFIG = "cpu_demo.yaml"
DEMO_ENV = "pattern_env.py"
DEMO_ENV_CLASS = "PatternEnv"
AGENT_DEMO_CONFIG = "agent_demo.yaml"
AGENT_DEMO_ENV = "hotel_agent_env.py"


def _demo_file(name: str) -> Path:
    path = Path(str(resources.files(__name__) / "demo" / name))
    if not path.is_file():
        raise FileNotFoundError(f"grpo-tui's demo file {name} is missing from {path.parent}; reinstall grpo-tui.")
    return path


def demo_config_file(agent: bool = False) -> Path:
    """The demo's run settings (``cpu_demo.yaml``; the agentic demo's ``agent_demo.yaml``), as a path on disk."""
    return _demo_file(AGENT_DEMO_CONFIG if agent else DEMO_CONFIG)


def demo_env_file(agent: bool = False) -> Path:
    """The demo's environment module (``pattern_env.py``, class ``PatternEnv``; the agentic demo's
    ``hotel_agent_env.py``, class ``HotelAgentEnv``), as a path on disk."""
    return _demo_file(AGENT_DEMO_ENV if agent else DEMO_ENV)
