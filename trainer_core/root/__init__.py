"""The run's root process, one per machine: placement, the vLLM server, the trainer's launch and its exit
code, the final record, and the stall watch that judges a hung trainer with nobody watching.
"""
