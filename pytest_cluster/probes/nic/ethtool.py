"""An interface's driver, its version, firmware and bus, as `ethtool -i` prints them
(ETHTOOL_GDRVINFO)."""

from __future__ import annotations

import socket
import struct

SIOCETHTOOL = 0x8946
ETHTOOL_GDRVINFO = 0x3
DRVINFO_BYTES = 196  # struct ethtool_drvinfo
IFREQ_BYTES = 40  # struct ifreq on 64-bit Linux


def drvinfo(name: str) -> dict[str, str]:
    """Driver, its version, firmware and bus of interface `name` (ETHTOOL_GDRVINFO, what
    `ethtool -i` prints); {"error": why} if not answered."""
    import array  # noqa: PLC0415 - only here
    import fcntl  # noqa: PLC0415

    buffer = array.array("B", struct.pack("I", ETHTOOL_GDRVINFO) + bytes(DRVINFO_BYTES - 4))
    address, _ = buffer.buffer_info()
    request = struct.pack("16sP", name.encode()[:15], address)
    request += bytes(IFREQ_BYTES - len(request))
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            fcntl.ioctl(sock.fileno(), SIOCETHTOOL, request)
    except OSError as exc:
        return {"error": f"ethtool drvinfo of {name}: {exc.strerror or exc}"}
    raw = buffer.tobytes()

    def string(index: int) -> str:
        return raw[4 + 32 * index: 4 + 32 * (index + 1)].split(b"\0", 1)[0].decode(
            errors="replace")

    return {"driver": string(0), "driver_version": string(1), "firmware": string(2),
            "bus": string(3)}
