"""Benchmarks of grpo-tui, each run as a module from a checkout: ``python -m bench.NAME`` (see bench/README.md)."""
