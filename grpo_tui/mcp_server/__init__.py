"""``grpo-tui mcp``: a Model Context Protocol server over the runs, for coding agents.

An agent asks what a person asks the app (how a run is doing, whether the held-out metric beat the base, which
checkpoint to ship) and gets typed JSON answers read by the same services the app and ``--json`` commands use
(``services/catalog``, ``services/stream``, the executors). Text that comes from a run (prompts, completions,
logs, hosts' messages) is returned under an ``untrusted`` key of its own (``untrusted.py``), never in the tool's
own words. Actions (stop, resume) exist only when the server starts with ``--allow-actions``. Every answer's
shape is in one JSON Schema (``schema.py``, published as ``docs/answers.schema.json``).

The official ``mcp`` SDK is the optional extra ``grpo-tui[mcp]``; only ``server.py`` imports it.
"""
