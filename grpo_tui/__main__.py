"""Entry point of the ``grpo-tui`` command (and ``python -m grpo_tui``)."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
