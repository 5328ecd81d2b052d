"""Generation through vLLM: the run's ``trl vllm-serve`` server (bound to 127.0.0.1, stopped as a process
group) and the weight sync that makes TRL's colocate mode exact on a CPU engine.
"""
