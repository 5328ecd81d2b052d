"""The runs of a folder: finding one (id, prefix, ``latest``), listing them as rows, each run's live status
(a recorded process, the Slurm queue or a host's report), the warnings only a viewer judges, and the
checkpoint list.
"""
