"""What the GPU probes read of NVML alike: its strings, and the throttle bits among its
clocks event reasons."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:  # not imported when it runs: typing doubles a probe's start-up
    from typing import Any

#: The clocks event reasons that slow a GPU down (nvmlClocksEventReason*), by name.
THROTTLE_BITS = {"hw_slowdown": 0x8, "sw_thermal": 0x20, "hw_thermal": 0x40,
                 "power_brake": 0x80}


def text(value: Any) -> str:
    """NVML's bytes (older bindings) or str, as str."""
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)

