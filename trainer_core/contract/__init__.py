"""The contract layer: what the trainer and every reader of a run folder share.

RunConfig and its checks, the flags generated from it, the typed event schema and the events file, the
run folder with its statuses, severities, health and watcher rules, placement and process identity.
Both sides import it, so it imports neither: only the standard library, psutil, PyYAML and orjson
(enforced by the import contracts in pyproject.toml; see docs/architecture.md).
"""
