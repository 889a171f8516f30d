"""Which round of a soak this process runs (--cluster-soak): the soak's driver sets it in
each round's environment, and the simulator reads it (a fault may start at a round).
A run outside a soak is round 1."""

from __future__ import annotations

import os

ENV = "PYTEST_CLUSTER_SOAK_ROUND"


def current() -> int:
    raw = os.environ.get(ENV, "")
    return int(raw) if raw.isdigit() and int(raw) > 0 else 1
