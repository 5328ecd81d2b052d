"""grpo-tui: configure, launch, watch and stop GRPO fine-tuning runs from a terminal.

This package is the user-facing side. It never imports torch, transformers, trl, datasets or peft: it
reads run folders written by ``trainer_core`` and starts or signals trainer processes.
"""

__version__ = "0.1.0"
