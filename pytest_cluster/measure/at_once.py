"""What the jobs every node runs at once on a shared filesystem (the checkpoint burst,
the data loader's reads) share: when they start, the token their files carry, and how a
node's numbers are read."""

from __future__ import annotations

import math
import secrets
import time

#: How long before a phase starts the controller names its start time, by node count
#: (every node's part is launched by then), in seconds.
LEAD_S, LEAD_PER_NODE_S, LEAD_MOST_S = 3.0, 0.02, 60.0


def start_at(nodes: int) -> float:
    """The UNIX time a phase over `nodes` nodes starts at."""
    return time.time() + min(LEAD_MOST_S, LEAD_S + LEAD_PER_NODE_S * nodes)


def token(timeout_s: float) -> str:
    """A run's file token: when none of its phases can still run (two phases' limits and
    10 minutes for clocks that differ), and 12 random hex digits."""
    return f"{int(time.time() + 2 * timeout_s + 600)}-{secrets.token_hex(6)}"


def finite_number(value: object) -> float | None:
    """A finite number of a rank's report, else None (bools are not numbers)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        return float(value) if math.isfinite(value) else None
    except OverflowError:  # an integer beyond any float
        return None
