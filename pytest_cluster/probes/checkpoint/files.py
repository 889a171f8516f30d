"""The burst's files: each rank's name, whose file a rank reads, and the removal of a
burst's files (its own at the end, an earlier one's after its expiry)."""

from __future__ import annotations

import contextlib
import os
import re
import time

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .payload import Leftover, RankData


PREFIX = ".pytest-cluster-ckpt-"
TOKEN = re.compile(r"^(?P<expires>\d{1,12})-[0-9a-f]{12}$")
NAME = re.compile(r"^(?P<token>\d{1,12}-[0-9a-f]{12})-\d{1,7}$")


def file_of(path: str, token: str, rank: int) -> str:
    return os.path.join(path, f"{PREFIX}{token}-{rank}")


def sweep(path: str, now: float, token: str = "") -> list[Leftover]:
    """Remove the files of bursts whose expiry has passed (a killed run's); those of
    another burst (not `token`'s) whose expiry is to come are said, left alone (a burst
    that may still be running, or one cut off before its end)."""
    found: list[Leftover] = []
    for name in sorted(os.listdir(path)):
        match = NAME.match(name[len(PREFIX):]) if name.startswith(PREFIX) else None
        if match is None or match["token"] == token:
            continue
        expires = int(TOKEN.match(match["token"])["expires"])  # type: ignore[index]
        full = os.path.join(path, name)
        if expires >= now:  # a burst that may still be running
            with contextlib.suppress(OSError):
                found.append({"path": full, "bytes": os.lstat(full).st_size,
                              "removed": False, "why": _running(expires)})
            continue
        try:
            size = os.lstat(full).st_size
            os.unlink(full)
        except FileNotFoundError:
            continue
        except OSError as exc:
            found.append({"path": full, "bytes": 0, "removed": False, "why": str(exc)})
            continue
        stamp = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(expires))
        found.append({"path": full, "bytes": size, "removed": True,
                      "why": f"its checkpoint burst ended by {stamp}; the run was cut off "
                             "before removing it"})
    return found


def _running(expires: float) -> str:
    stamp = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(expires))
    return (f"another burst's, which may still be running until {stamp}: left alone, "
            "removed by a later burst after that")


def remove(path: str, token: str) -> RankData:
    removed = []
    for name in sorted(os.listdir(path)):
        match = NAME.match(name[len(PREFIX):]) if name.startswith(PREFIX) else None
        if match is not None and match["token"] == token:
            try:
                os.unlink(os.path.join(path, name))
                removed.append(name)
            except FileNotFoundError:
                pass
    return {"removed": len(removed)}


def writer_of(rank: int, world: int, per_node: int, write_nodes: list[int] | None) -> int:
    """Whose file `rank` reads: the same writer of the next node (of the write job's nodes
    that wrote, `write_nodes`: the write job's index of each node of this job)."""
    nodes = write_nodes or list(range(max(1, world // per_node)))
    here, local = divmod(rank, per_node)
    return nodes[(here + 1) % len(nodes)] * per_node + local
