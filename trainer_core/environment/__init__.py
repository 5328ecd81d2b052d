"""The user's environment: the class named by --rl-env-module/--rl-env-class (or a dataset run's prompts),
loaded, configured with --rl-env-config and checked; its dataset, its scores and the user's own tracebacks.
Imports only the contract layer and the training stack's data libraries.
"""
