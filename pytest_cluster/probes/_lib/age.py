"""How long ago something was made, in words a leftover's report gives."""

from __future__ import annotations


def ago(seconds: float) -> str:
    """'3 h', '12 min', '40 s' (never negative)."""
    if seconds >= 7200:
        return f"{seconds / 3600:.0f} h"
    if seconds >= 120:
        return f"{seconds / 60:.0f} min"
    return f"{max(seconds, 0):.0f} s"
