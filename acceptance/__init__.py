"""The contract as tests, installed as pytest_cluster.acceptance.

Each test reads one probe result and compares it with one clause of the spec.
"""
