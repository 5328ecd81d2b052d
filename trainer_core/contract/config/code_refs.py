"""How a setting names the user's code: a module (a .py file or a dotted import path) and names in it.

``rl_env_module``, ``reward_funcs``, ``eval_metric`` and ``tools`` all point at the user's code. One grammar
reads them all, so a name a reward accepts is one a tool accepts, a config is refused for its shape before
anything heavy loads, and the trainer's loader (``trainer_core/environment/user_code.py``) imports exactly
what was accepted here. Stdlib only, like the rest of config/.

- a module is a file when it looks like one (``*.py`` or a path), else a dotted import path;
- a function is ``FILE.py:NAME``, ``pkg.module:NAME`` or ``pkg.module.NAME``; after a colon, several names
  may follow (``FILE.py:fn,fn2``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class CodeRef:
    """Functions of the user's: ``file`` (a .py path) or ``module`` (dotted), and the ``names`` in it."""

    text: str
    names: tuple[str, ...]
    file: str = ""
    module: str = ""

    @property
    def where(self) -> str:
        return self.file or self.module


def is_file_path(where: str) -> bool:
    """A module named by its file (a ``*.py`` name or a path) rather than by a dotted import path."""
    return where.endswith(".py") or os.sep in where or "/" in where


def is_dotted(text: str) -> bool:
    """``pkg.module`` (or one name): identifiers joined by dots."""
    return bool(text) and all(part.isidentifier() for part in text.split("."))


def parse_code_ref(text: str) -> CodeRef | None:
    """``FILE.py:NAME[,NAME…]``, ``pkg.module:NAME[,NAME…]`` or ``pkg.module.NAME``; None for anything else."""
    where, colon, names_text = text.rpartition(":")
    if colon:
        names = tuple(n.strip() for n in names_text.split(","))
        if not all(n.isidentifier() for n in names):
            return None
        if where.endswith(".py"):
            return CodeRef(text, names, file=where)
        if is_dotted(where):
            return CodeRef(text, names, module=where)
        return None
    module, _, name = text.rpartition(".")
    if is_dotted(module) and name.isidentifier():
        return CodeRef(text, (name,), module=module)
    return None


def missing_class(name: str, module: str, classes: list[str]) -> str:
    """The message for an environment class that ``module`` does not define, with the ones it does."""
    return (
        f"class '{name}' not found in environment module '{module}'. Classes defined there: "
        f"{', '.join(classes) or 'none'}. Fix: set --rl-env-class (rl_env_class in a config file) to one of them."
    )
