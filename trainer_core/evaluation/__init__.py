"""Held-out evaluation: the held-out set, the evaluator that samples and scores it with the run's own metrics
and seed (pass@k, mean), and agentic evals played through TRL's tool loop.
"""
