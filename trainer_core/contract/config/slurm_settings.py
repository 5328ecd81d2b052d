"""A run's ``slurm:`` settings: their names, their checks, and the ``#SBATCH`` options they become.

One place for what the config file's ``slurm:`` section, ``launch --slurm`` flags and the launch form may
say, so every way in gets the same errors (naming the key, the value and the fix, as config_checks does).
"""

from __future__ import annotations

import difflib
import re

from trainer_core.contract.run.json_values import is_whole

KEYS = ("partition", "time", "nodes", "gpus_per_node", "sbatch_args", "grace")
DEFAULT_GRACE_S = 300  # a step plus a checkpoint save, as the graceful stop's timeout
_TIME = re.compile(r"(\d+|\d+-\d{1,2}(:\d{2}){0,2}|\d{1,2}(:\d{2}){1,2})\Z")
_NAME = re.compile(r"[A-Za-z0-9_.,-]+\Z")


def slurm_problems(settings) -> list[str]:
    """What is wrong with a ``slurm`` mapping ({} means: not a Slurm run), one message each."""
    if not isinstance(settings, dict):
        return [(f"slurm must be a mapping of setting: value ({', '.join(KEYS)}), got {settings!r}.")]
    found = []
    for key, value in settings.items():
        if key not in KEYS:
            close = difflib.get_close_matches(str(key), KEYS, n=1)
            hint = f" Did you mean '{close[0]}'?" if close else f" Known settings: {', '.join(KEYS)}."
            found.append(f"slurm sets unknown setting '{key}'.{hint}")
        elif key == "partition" and not (isinstance(value, str) and _NAME.match(value)):
            found.append(f"slurm partition must be a partition name (letters, digits, _.,-), got {value!r}.")
        elif key == "time" and not (is_whole(value, 1) or (isinstance(value, str) and _TIME.match(value))):
            found.append(f"slurm time must be minutes (e.g. 90) or [D-]HH:MM:SS (e.g. 1-12:00:00), got {value!r}.")
        elif key in ("nodes", "gpus_per_node", "grace") and not _count(value, low=1 if key == "nodes" else 0):
            low = "at least 1" if key == "nodes" else "0 or more"
            found.append(f"slurm {key} must be a whole number, {low}; got {value!r}.")
        elif key == "sbatch_args" and not _args(value):
            found.append(
                f"slurm sbatch_args must be a list of sbatch options such as "
                f"'--account=lab', each one line starting with '-'; got {value!r}."
            )
    limit = time_seconds(settings.get("time")) if not found else None
    if limit is not None and grace(settings) >= limit:
        which = f"{settings['grace']} s" if "grace" in settings else f"{DEFAULT_GRACE_S} s, the default"
        found.append(
            f"slurm grace ({which}) must be shorter than the time limit ({limit} s), or the warning comes "
            "at the start: set a smaller grace (--slurm-grace) or a longer time."
        )
    return found


def time_seconds(value) -> int | None:
    """Slurm's --time as seconds: minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS."""
    if is_whole(value, None):
        return value * 60
    if not isinstance(value, str) or not _TIME.match(value):
        return None
    days, _, rest = value.rpartition("-")
    parts = [int(p) for p in rest.split(":")]
    if days:
        hours, minutes, seconds = [*parts, 0, 0][:3]
    elif len(parts) == 1:
        hours, minutes, seconds = 0, parts[0], 0
    elif len(parts) == 2:
        hours, minutes, seconds = 0, parts[0], parts[1]
    else:
        hours, minutes, seconds = parts
    return ((int(days or 0) * 24 + hours) * 60 + minutes) * 60 + seconds


def _count(value, low: int) -> bool:
    return is_whole(value, low)


def _args(value) -> bool:
    return isinstance(value, list) and all(
        isinstance(a, str) and a.startswith("-") and "\n" not in a and "\r" not in a for a in value
    )


def sbatch_options(settings: dict) -> list[str]:
    """The ``#SBATCH`` options of these settings (checked), besides those grpo-tui always sets."""
    options = []
    if settings.get("partition"):
        options.append(f"--partition={settings['partition']}")
    if settings.get("time"):
        options.append(f"--time={settings['time']}")
    nodes = settings.get("nodes") or 1
    options.append(f"--nodes={nodes}")
    if settings.get("gpus_per_node"):
        options.append(f"--gpus-per-node={settings['gpus_per_node']}")
    options += list(settings.get("sbatch_args") or [])
    return options


def grace(settings: dict) -> int:
    value = settings.get("grace")
    return value if is_whole(value, None) else DEFAULT_GRACE_S
