"""The reward functions of a run: the environment's ``score_episode`` (or an agentic episode's reward) and the
extra functions named by --reward-functions, each score checked, each completion sampled for the run folder.
"""
