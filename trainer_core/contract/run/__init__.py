"""The run folder as a format: what a trainer writes and every reader relies on.

Owns the folder's layout and its atomic files (``folder``, ``atomic_files``), the one reader of state.json
(``state``: typed fields or a named error, whatever the file holds), the typed events and the
events file (``events``, ``event_log``), the statuses and their legal transitions (``status``), severities
and the names and advice of every health rule (``severity``, ``rules``: a warning event's ``rule``), a
finished run's summary and crash verdict (``summary``, ``crash``), a resumed run's legs and the pauses between
them (``legs``), which lines a rewind to an older checkpoint abandoned (``rewinds``), checkpoints and which are complete
(``checkpoints``), disk faults and the reserve (``disk``), process identity (``process``) and what a Slurm
job tells the trainer (``slurm_job``). The format is public: docs/run-format.md.

May import: the standard library, psutil, PyYAML, orjson. No other domain of the contract: everything else
builds on this one.
"""
