"""The training process: the runner around TRL's GRPOTrainer, its set-up from a RunConfig, the callbacks that
write events and stop it on request or by rule (the held-out eval's callback too), and the run's
provenance.
"""
