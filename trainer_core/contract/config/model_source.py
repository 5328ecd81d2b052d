"""Whether ``model`` names a model this machine can load: checked before a run or inspection folder is written.

``from_pretrained`` takes a local folder or a Hub id, and says what it got wrong only after the run folder exists
and the training stack has loaded: a missing path surfaced as transformers' ``OSError: Repo id must be in the
form …`` traceback and a failed run. This module reads ``model`` the way transformers will, with the standard
library only (the app process never imports huggingface_hub), so the CLI, the app's form and an inspection refuse
it with the field, the value and the fix:

- a name that looks like a path (absolute, ``./``, ``../``, ``~``, or anything that exists) must be a model
  folder, one holding ``config.json`` (TRL reads it before the weights);
- anything else is a Hub id, which must look like one (``name`` or ``org/name``: letters, digits, ``-``, ``_``,
  ``.``, as huggingface_hub's ``validate_repo_id`` allows);
- with the Hub offline (``HF_HUB_OFFLINE`` or ``TRANSFORMERS_OFFLINE`` true), a Hub id must be in the Hugging
  Face cache: ``models--org--name/snapshots/*/config.json`` under the cache folder huggingface_hub resolves
  (``HF_HUB_CACHE``, ``HUGGINGFACE_HUB_CACHE``, ``HF_HOME/hub``, ``$XDG_CACHE_HOME/huggingface/hub``,
  ``~/.cache/huggingface/hub``).

It checks the machine it runs on: a run on another host is checked by that host's grpo-tui, where its paths
are paths. Online, a well-formed Hub id is not looked up (that would need the network): the trainer downloads it.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Mapping
from pathlib import Path

from trainer_core.contract.config.checks import ConfigError

FIRST_TRY = "for a first try, build the tiny CPU model with `grpo-tui tiny-model DIR` and pass --model DIR"
HUB_EXAMPLE = "Qwen/Qwen2.5-0.5B-Instruct"
PATH_PREFIXES = ("/", "./", "../", "~")
_HUB_PART = re.compile(r"[A-Za-z0-9_.-]{1,96}")
_TRUE = {"1", "ON", "YES", "TRUE"}  # huggingface_hub's constants.ENV_VARS_TRUE_VALUES
_SHOWN = 4  # entries of a folder named in a message


def looks_like_path(model: str) -> bool:
    """A name transformers reads as a folder: absolute, ``./``, ``../``, ``~``, or something that exists."""
    return model.startswith(PATH_PREFIXES) or model in (".", "..") or os.path.lexists(os.path.expanduser(model))


def hub_id_problem(model: str) -> str | None:
    """Why ``model`` is not a Hub id by huggingface_hub's rules (``validate_repo_id``), or None."""
    parts = model.split("/")
    if len(parts) > 2:
        return f"a Hub id has at most one '/', this has {len(parts) - 1}"
    for part in parts:
        if not _HUB_PART.fullmatch(part):
            bad = sorted({c for c in part if not re.fullmatch(r"[A-Za-z0-9_.-]", c)})
            if bad:
                return f"a Hub id uses only letters, digits, '-', '_' and '.', this has {' '.join(map(repr, bad))}"
            return "each part of a Hub id has 1 to 96 characters"
        if part[0] in "-." or part[-1] in "-.":
            return "no part of a Hub id starts or ends with '-' or '.'"
    if "--" in model or ".." in model:
        return "a Hub id never holds '--' or '..'"
    if model.endswith(".git"):
        return "a Hub id does not end in '.git'"
    return None


def hub_offline(env: Mapping[str, str]) -> str | None:
    """``NAME=VALUE`` of the variable that makes the Hub offline, as huggingface_hub reads it, or None."""
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        value = env.get(name)
        if value:  # huggingface_hub: HF_HUB_OFFLINE, else TRANSFORMERS_OFFLINE, whichever is set first
            return f"{name}={value}" if value.upper() in _TRUE else None
    return None


def _expand(path: str) -> Path:
    return Path(os.path.expandvars(os.path.expanduser(path)))


def hub_cache(env: Mapping[str, str]) -> Path:
    """The cache folder huggingface_hub (and so transformers) reads models from (its ``constants.HF_HUB_CACHE``)."""
    for name in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if env.get(name):
            return _expand(env[name])
    return _hf_home(env) / "hub"


def _hf_home(env: Mapping[str, str]) -> Path:
    if env.get("HF_HOME"):
        return _expand(env["HF_HOME"])
    return _expand(env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")) / "huggingface"


def cached_snapshot(cache: Path, repo_id: str) -> Path | None:
    """A snapshot of ``repo_id`` in ``cache`` that holds config.json (``models--org--name/snapshots/*/``), or None."""
    snapshots = cache / ("models--" + repo_id.replace("/", "--")) / "snapshots"
    try:
        found = sorted(p for p in snapshots.iterdir() if (p / "config.json").is_file())
    except OSError:
        return None
    return found[0] if found else None


def _machine() -> str:
    return f"this machine ({os.uname().nodename})"


def _listing(folder: Path) -> list[str]:
    try:
        names = [p.name + ("/" if p.is_dir() else "") for p in folder.iterdir()]
        return sorted(names, key=lambda n: (n.startswith("."), n))  # hidden entries last
    except OSError:
        return []


def _folder_problem(model: str, path: Path) -> str | None:
    if path.is_dir():
        if (path / "config.json").is_file():
            return None
        entries = _listing(path)
        inner = [e for e in entries if e.endswith("/") and (path / e / "config.json").is_file()]
        for name in ("checkpoints/",):  # a run folder: its checkpoints hold models too
            if name in entries:
                inner += [f"{name}{e}" for e in _listing(path / name) if (path / name / e / "config.json").is_file()]
        if inner:
            best = "final/" if "final/" in inner else inner[-1]
            hint = f"; {', '.join(inner[:_SHOWN])} {'do' if len(inner) > 1 else 'does'}: pass --model {path / best}"
        elif "adapter_config.json" in entries:
            hint = (
                "; it holds a LoRA adapter (adapter_config.json), not a full model: give the base model it was "
                "trained from, or a merged copy (`grpo-tui merge RUN`)"
            )
        else:
            hint = ". Give the folder that holds config.json and the weights, or a Hub id such as " + HUB_EXAMPLE
        shown = ", ".join(entries[:_SHOWN]) + (f" and {len(entries) - _SHOWN} more" if len(entries) > _SHOWN else "")
        return (
            f"model {model!r} is a folder without config.json (it holds {shown or 'nothing'}), so it is not a "
            f"model transformers can load{hint}; {FIRST_TRY}."
        )
    if path.exists():
        return (
            f"model {model!r} is a file, not a model folder: give the folder that holds config.json and the "
            f"weights, or a Hub id such as {HUB_EXAMPLE}; {FIRST_TRY}."
        )
    parent = path.parent
    names = [e.rstrip("/") for e in _listing(parent)[:2000]]
    close = difflib.get_close_matches(path.name, names, n=1) if path.name else []
    nearest = parent
    while not nearest.is_dir() and nearest != nearest.parent:
        nearest = nearest.parent
    found = (
        f"did you mean {str(parent / close[0])!r}?"
        if close
        else f"nothing is at that path (the nearest folder that exists is {nearest})"
    )
    return (
        f"model {model!r} does not exist on {_machine()}: {found}. Give a model folder (one holding config.json) "
        f"or a Hub id such as {HUB_EXAMPLE}; {FIRST_TRY}."
    )


def _offline_problem(model: str, env: Mapping[str, str], offline: str) -> str | None:
    cache = hub_cache(env)
    if cached_snapshot(cache, model) is not None:
        return None
    others = dict.fromkeys(
        p / "hub"
        for p in (
            _hf_home(env),
            _expand(env.get("XDG_CACHE_HOME") or "~/.cache") / "huggingface",
            _expand("~/.cache/huggingface"),
        )
    )
    elsewhere = [p for p in others if p != cache and cached_snapshot(p, model) is not None]
    folder = "models--" + model.replace("/", "--")
    if elsewhere:
        found = (
            f"it is cached in {elsewhere[0]}, but transformers reads the cache {cache} (HF_HUB_CACHE / HF_HOME): "
            f"point HF_HUB_CACHE at {elsewhere[0]}"
        )
    else:
        partial = " (a partial download without config.json)" if (cache / folder).exists() else ""
        found = (
            f"it is not in the Hugging Face cache{partial}: no {folder}/snapshots/*/config.json under {cache}. "
            f"Download it where the network is reachable (`hf download {model}`), unset {offline.split('=')[0]}"
        )
    return (
        f"model {model!r} is a Hub id and the Hub is offline here ({offline}), but {found}, or give a local model "
        f"folder; {FIRST_TRY}."
    )


def model_problem(model: object, env: Mapping[str, str] | None = None) -> str | None:
    """Why ``model`` cannot be loaded on this machine, with what was found and the fix; None when it can (or is
    empty: RunConfig's own check asks for one). ``env``: the environment the run gets (default this process's)."""
    env = os.environ if env is None else env
    if model is None or model == "":
        return None
    if not isinstance(model, str):
        return f"model must be a folder path or a Hub id (text), got {model!r}."
    if model != model.strip():
        return f"model {model!r} starts or ends with whitespace: remove it."
    if looks_like_path(model):
        return _folder_problem(model, Path(os.path.expanduser(model)))
    why = hub_id_problem(model)
    if why is not None:
        return (
            f"model {model!r} is neither a folder on {_machine()} (nothing is at that path) nor a Hub model id "
            f"(name or org/name: {why}). Give a model folder (one holding config.json) or a Hub id such as "
            f"{HUB_EXAMPLE}; {FIRST_TRY}."
        )
    offline = hub_offline(env)
    return _offline_problem(model, env, offline) if offline else None


def model_problems(model: object, env: Mapping[str, str] | None = None) -> list[ConfigError]:
    """``model_problem`` as the list of ConfigErrors a form shows under its ``model`` field."""
    problem = model_problem(model, env)
    return [] if problem is None else [ConfigError("model", problem)]


def require_model(model: object, env: Mapping[str, str] | None = None) -> None:
    """Raise ConfigError (field ``model``) when ``model`` cannot be loaded on this machine."""
    for problem in model_problems(model, env):
        raise problem
