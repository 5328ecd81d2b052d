"""The contract layer: what the trainer and every reader of a run folder share, by domain.

- ``run/``: the run folder as a format (layout, state, events, statuses, rule names, checkpoints, disk
  faults, crash verdicts, process identity). Imports no other domain.
- ``health/``: the health rules judged over a run's metrics and folder. Imports ``run/``.
- ``config/``: RunConfig and its checks, placement, ports, hardware and disk preflights, notify URLs as a
  config value, the user's settings files. Imports ``run/`` and ``health/``.
- ``alerts/``: where a run's alerts go, the body each target gets, one attempt at sending one. Imports the
  domains below it.
- ``recipes/``: ``trl grpo`` recipes read into a RunConfig. Imports the domains below it.

Both sides import it, so it imports neither: only the standard library, psutil, PyYAML, orjson and apprise
(lazily, for alerts). The layers and these rules are import contracts in pyproject.toml (see docs/architecture.md).
"""
