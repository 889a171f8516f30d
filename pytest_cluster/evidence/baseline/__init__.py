"""The accepted baseline: a run's evidence handed in again (files.py reads it, every byte
untrusted and bounded) and what changed since (compare.py)."""
