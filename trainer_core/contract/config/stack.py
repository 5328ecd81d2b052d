"""The training stack by name, written once: what the ``[train]`` extra adds and the app never imports.

The light install checks for it (``grpo-tui info``, the one-line "install grpo-tui[train]" refusal), a run
records its versions in ``provenance.json``, and the import contract that keeps the app light forbids it;
a test holds pyproject.toml's forbidden list to ``NEVER_IN_APP``.
"""

from __future__ import annotations

TRAINING_STACK = ("torch", "transformers", "trl", "datasets", "peft", "accelerate")
"""What the ``[train]`` extra adds, by import name: a run's processes import them; the app and the CLI never do."""

NEVER_IN_APP = (*TRAINING_STACK, "tokenizers", "vllm")
"""Every module the app's process must not load: the training stack, its tokenizers and the generation engine."""

RECORDED_VERSIONS = (*TRAINING_STACK, "vllm", "grpo-tui")
"""The distributions whose versions a run records in ``provenance.json``."""

TRL_CHECKED = ("1.16", "1.17")
"""The TRL releases the trainer was checked against, [first, last) by minor version: it reaches into
GRPOTrainer's internals (the agentic eval's swapped fields, the CPU weight sync's ``vllm_generation``), so a run
refuses any other TRL before the model loads, unless ``UNTRIED_TRL_ENV`` is set to 1."""

UNTRIED_TRL_ENV = "GRPO_TUI_UNTRIED_TRL"


def _minor(version: str) -> tuple[int, int] | None:
    parts = version.split("+")[0].split(".")
    try:
        return int(parts[0]), int("".join(c for c in parts[1] if c.isdigit()) or "x")
    except (IndexError, ValueError):
        return None


def trl_is_checked(version: str) -> bool:
    """Whether TRL ``version`` (``1.16.0``, ``1.16.3.dev0``) is within :data:`TRL_CHECKED`."""
    first, last = (_minor(v) for v in TRL_CHECKED)
    found = _minor(version)
    return found is not None and first is not None and last is not None and first <= found < last


def untried_trl(version: str, what: str) -> str:
    """The message for a TRL outside :data:`TRL_CHECKED`; ``what`` says what relies on its internals."""
    first, last = TRL_CHECKED
    return (
        f"TRL {version} is installed, and {what} relies on GRPOTrainer internals as TRL {first}.x has them: "
        f"install trl>={first},<{last} (constraints.txt pins the version checked), or set {UNTRIED_TRL_ENV}=1 to "
        "try this TRL anyway."
    )
