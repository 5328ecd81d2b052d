"""The trainer's one-shot commands besides training: the reward inspection before launch, ``merge``,
``eval`` of a run's checkpoints, and the tiny offline model the demo and the tests build.
"""
