"""Health rules: what can go wrong in a GRPO run, judged from its metrics and its folder.

Owns the thresholds and the facts rules share (``core``), the trainer's per-step rules (``monitor`` and the
families it runs: ``hacking``, ``drift``, ``tools``), the statistics of scored samples (``sample_stats``) and
the rules only a watcher can judge (``watch``: a stall, a filling disk). The names and advice of the rules
are part of the run format (``run/rules.py``); docs/health.md is the user's page.

May import: ``run/``, the standard library.
"""
