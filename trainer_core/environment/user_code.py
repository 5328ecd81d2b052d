"""The one loader of the user's code: environment classes, reward functions, eval metrics and tools.

Every setting that points at the user's code (``rl_env_module``, ``reward_funcs``, ``eval_metric``, ``tools``)
is read by one grammar (``contract/config/code_refs.py``) and imported here, the same way for all of them:
a .py file by its path, with its folder first on ``sys.path`` so that it can import its neighbours, or a dotted
module from the current folder, as ``trl grpo`` imports one. This module is the only place grpo-tui changes
``sys.path``. What goes wrong is a :class:`UserCodeError` that names the setting, the file or module, the name
and the fix; what the user's code raised while it ran is kept, and :func:`user_traceback` shows its frames
only (grpo-tui's own frames say nothing the user can fix).
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

from trainer_core.contract.config.code_refs import CodeRef, is_file_path, missing_class, parse_code_ref

T = TypeVar("T")


class UserCodeError(RuntimeError):
    """A problem in the user's code (an environment, its dataset, a reward function, a metric, a tool).
    ``case`` and ``user_traceback`` say on what and where."""

    def __init__(self, message: str, *, case: dict | None = None, user_traceback: str | None = None):
        super().__init__(message)
        self.case = case
        self.user_traceback = user_traceback


_OWN_PACKAGES = tuple(str(Path(__file__).resolve().parents[2] / name) + os.sep for name in ("trainer_core", "grpo_tui"))


def _foreign(filename: str) -> bool:
    """A frame of the user's code (or of a library it called): not grpo-tui's, not Python's import machinery."""
    return not filename.startswith("<frozen ") and not os.path.abspath(filename).startswith(_OWN_PACKAGES)


def user_traceback(exc: UserCodeError) -> str | None:
    """The traceback of what the user's code raised (the error's cause), with the user's frames only; None when
    the error has no such cause or none of its frames is the user's (the message names the mistake)."""
    cause = exc.__cause__
    if cause is None or exc.user_traceback is None:
        return None
    frames = [f for f in traceback.extract_tb(cause.__traceback__) if _foreign(f.filename)]
    if not frames:
        return None
    lines = traceback.format_list(frames) + traceback.format_exception_only(type(cause), cause)
    return "Traceback (most recent call last):\n" + "".join(lines)


def call_user(what: str, func: Callable[..., T], *args: Any) -> T:
    """``func(*args)``, a call of the user's code (``what``: its name in the message): whatever it raises becomes
    a UserCodeError that carries the user's traceback; a UserCodeError passes as it is."""
    try:
        return func(*args)
    except UserCodeError:
        raise
    except Exception as exc:
        raise UserCodeError(
            f"{what} raised {type(exc).__name__}: {exc}", user_traceback=traceback.format_exc()
        ) from exc


def _first_on_path(folder: str) -> None:
    """The one change made to ``sys.path``: the folder the user's module is found from goes first."""
    if folder not in sys.path:
        sys.path.insert(0, folder)


def _raised(subject: str, exc: Exception) -> UserCodeError:
    return UserCodeError(
        f"importing {subject} raised {type(exc).__name__}: {exc}", user_traceback=traceback.format_exc()
    )


def import_file(path_text: str, subject: str, fix: str, *, fresh: bool = False) -> ModuleType:
    """The .py file ``path_text``, imported as ``grpo_user_<stem>`` with its folder first on ``sys.path``.

    ``subject`` names it in messages ("environment module envs/my_env.py"), ``fix`` says what to check. A file
    already imported is reused, unless ``fresh`` (it runs again). A failing import carries the user's traceback.
    """
    path = Path(path_text).expanduser().resolve()
    if not path.is_file():
        raise UserCodeError(f"{subject} not found (no file at {path}). {fix}")
    name = f"grpo_user_{path.stem}"
    module = sys.modules.get(name)
    if not fresh and module is not None and getattr(module, "__file__", None) == str(path):
        return module
    module_spec = importlib.util.spec_from_file_location(name, path)
    if module_spec is None or module_spec.loader is None:  # no loader for the suffix: not a .py file
        raise UserCodeError(f"{subject} is not a Python (.py) file. {fix}")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    _first_on_path(str(path.parent))
    try:
        module_spec.loader.exec_module(module)
    except Exception as exc:
        sys.modules.pop(name, None)
        raise _raised(subject, exc) from exc
    return module


def import_dotted(module_name: str, subject: str, fix: str) -> ModuleType:
    """The module ``pkg.module``, imported with the current folder first on ``sys.path`` (as ``trl grpo`` does)."""
    cwd = os.getcwd()
    _first_on_path(cwd)
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        if missing == module_name or module_name.startswith(missing + "."):  # the module itself, not an import in it
            raise UserCodeError(
                f"{subject} not found (no module named '{missing}' on the path; the current folder {cwd} is "
                f"searched). {fix}"
            ) from None
        raise _raised(subject, exc) from exc
    except Exception as exc:
        raise _raised(subject, exc) from exc


def import_module(where: str, noun: str, fix: str, *, fresh: bool = False) -> ModuleType:
    """``where``, a .py file or a dotted module (``is_file_path`` tells), named ``noun`` in messages."""
    if is_file_path(where):
        return import_file(where, f"{noun} {where}", fix, fresh=fresh)
    return import_dotted(where, f"{noun} '{where}'", fix)


def _defined(module: ModuleType, keep: Callable[[object], bool]) -> list[str]:
    """The public names ``module`` itself defines (not imports) whose value ``keep`` accepts."""
    return sorted(
        n
        for n, v in vars(module).items()
        if not n.startswith("_") and keep(v) and getattr(v, "__module__", None) == module.__name__
    )


def load_functions(ref: CodeRef, noun: str, fix: str) -> list[Callable]:
    """The functions ``ref`` names, in its order; its module is imported once and reused."""
    subject = f"{noun} '{ref.text}'"
    if ref.file:
        module = import_file(ref.file, subject, fix)
    else:
        module = import_dotted(ref.module, subject, fix)
    funcs = []
    for name in ref.names:
        func = getattr(module, name, None)
        if not callable(func):
            found = ", ".join(_defined(module, callable)) or "none"
            raise UserCodeError(
                f"{subject}: {ref.where} has no function '{name}'. Functions defined there: {found}. {fix}"
            )
        funcs.append(func)
    return funcs


def load_function(text: str, noun: str, fix: str) -> Callable:
    """The one function ``text`` names (``FILE.py:NAME``, ``pkg.module:NAME`` or ``pkg.module.NAME``)."""
    ref = parse_code_ref(text)
    if ref is None or len(ref.names) != 1:  # the config's checks refuse it first
        raise UserCodeError(f"{noun} '{text}' names no single function. {fix}")
    return load_functions(ref, noun, fix)[0]


def load_class(where: str, name: str, fix: str, *, fresh: bool = True) -> type:
    """The class ``name`` of the environment module ``where`` (imported anew unless not ``fresh``)."""
    module = import_module(where, "environment module", fix, fresh=fresh)
    cls = getattr(module, name, None)
    if cls is None or not inspect.isclass(cls):
        raise UserCodeError(missing_class(name, where, _defined(module, inspect.isclass)))
    return cls
