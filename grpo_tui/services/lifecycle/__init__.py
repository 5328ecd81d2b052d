"""A run's lifecycle from this machine: creating and launching it (and its reward inspection), the
supervisor that starts its root and stops its process tree, resuming and extending, the foreground
``train`` that prints as it goes, a Slurm run's stop, and the demo's tiny model (where it is cached, building it).
"""
