"""Health rules: what can go wrong in a GRPO run, judged from its metrics and its folder.

Owns the thresholds and the facts rules share (``core``), the trainer's per-step rules (``monitor`` and the
families it runs: ``hacking``, ``drift``, ``tools``), the statistics of scored samples (``sample_stats``) and
where a remedy rolls a run back to (``remedy_plan``); a resumed leg's monitor starts from the run's live history
(``seeding``).
The names and advice of the rules are part of the run format (``run/rules.py``); the rules only a viewer judges
(a stall, a filling disk) are the app's (``grpo_tui/services/catalog/watch_rules.py``); docs/health.md is the user's
page.

May import: ``run/``, the standard library.
"""
