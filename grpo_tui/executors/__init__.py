"""Where a run lives and how to reach it: one ``Executor`` protocol (``base.py``) for every place, and one
``ExecutorRegistry`` (``registry.py``) that gives the executor of a host. This machine is ``local.py`` (run
folders read in place, ``services/`` underneath); a remote host is ``ssh.py`` (its own grpo-tui over SSH),
watched through a mirrored folder (``mirror.py``); Slurm (``slurm.py``) is a way to start a run on either."""
