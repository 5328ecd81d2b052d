"""Where a run lives and how to reach it. This machine's runs are read in place (``services/``); a remote
host's through its own grpo-tui over SSH (``ssh.py``), watched through a mirrored folder (``mirror.py``)."""
