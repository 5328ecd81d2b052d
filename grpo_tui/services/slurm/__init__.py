"""Slurm as a launch option: the batch script and its submission, and the queue read in one batched
``squeue`` per poll. Stopping a Slurm run is a lifecycle step (``lifecycle/slurm_stop.py``).
"""
