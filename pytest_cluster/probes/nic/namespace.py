"""Whether the /sys read is this process's network namespace's."""

from __future__ import annotations

import socket

from .sysfs import MAX_ENTRIES

#: The most interface names a namespace mismatch names of each side.
MAX_NAMED = 8


def listed(names: set[str]) -> str:
    """'eth0, lo, rail1' (at most MAX_NAMED, then how many more), 'none'."""
    shown = sorted(names)
    more = len(shown) - MAX_NAMED
    return ", ".join(shown[:MAX_NAMED]) + (f" and {more} more" if more > 0 else "") \
        if shown else "none"


#: The error kind of a reading of another namespace's /sys: the tool measured in the wrong
#: place, so it judges nothing (never the node; the verdict's TOOL_ERROR).
WRONG_NAMESPACE = "wrong_namespace"


def namespace_mismatch(sysfs: list[str], namespace: list[str]) -> str:
    """'' when the interfaces sysfs lists are those of this process's network namespace
    (socket.if_nameindex()); else why not, naming each side. A process that entered a
    namespace with `nsenter --net` or `unshare --net` still sees the /sys mounted for
    another one (`ip netns exec` remounts it): its ports are not this node's."""
    shown, own = set(sysfs), set(namespace)
    if shown == own:
        return ""
    return (f"/sys/class/net belongs to another network namespace: it shows "
            f"{listed(shown)}; this process's namespace has {listed(own)} "
            f"(socket.if_nameindex()); no port read (nsenter --net or unshare keep the "
            f"/sys of the namespace they left: ip netns exec remounts it)")


def own_interfaces() -> list[str]:
    """The interfaces of this process's network namespace, as the kernel names them."""
    return [name for _, name in socket.if_nameindex()][:MAX_ENTRIES]
