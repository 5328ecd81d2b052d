"""A run's configuration: RunConfig, every check of it, and what a machine must offer to run it.

Owns RunConfig (``run_config``) and its checks with their messages (``checks``, ``tool_specs``,
``slurm_settings``), the values far outside their usual range that a launch warns of (``usual_values``), the names of its TRL keys (``trl_names``), placement on GPUs and processes
(``placement``, ``ports``), the hardware, disk and model preflights (``hardware``, ``disk_estimate``,
``model_source``: a model folder or Hub id this machine can load, without huggingface_hub), the key of a
reward inspection (``inspection_key``), the training stack by name and the TRL releases checked (``stack``), notify URLs as a config value (``notify_urls``: checked, masked, kept
out of config.yaml) and the user's own settings files (``user_files``).

May import: ``run/``, ``health/`` (the thresholds ``--health`` sets, the rules ``--stop-on`` names), the
standard library and PyYAML.
"""
