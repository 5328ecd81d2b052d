"""``trl grpo`` recipes: TRL's and open-r1's YAML read as they are into a RunConfig.

Owns the reader (``reader``) and the table of keys that TRL, transformers and open-r1 renamed or retired
(``keys``). The way back, a run exported as a recipe, is the app's (``grpo_tui/services/trl_export.py``).

May import: ``config/``, ``run/``, the standard library and PyYAML.
"""
