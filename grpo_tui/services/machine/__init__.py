"""This machine: its GPUs (NVML, or the fake that tests set through the environment) and the hardware
preflights a launch checks against them.
"""
