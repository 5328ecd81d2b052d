"""Agentic episodes: the user's tools and per-rollout environments as TRL's tool loop calls them, each call
bounded in time, and an episode's turns and transcript as samples.jsonl keeps them.
"""
