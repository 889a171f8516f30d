"""The probe's reading of a tree, and the document printed, bounded."""

from __future__ import annotations

import json
import time

from .namespace import WRONG_NAMESPACE, namespace_mismatch
from .net import net_ports
from .rdma import rdma_ports
from .sysfs import Budget

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from .payload import Document, NicData
    from .sysfs import Reader


MAX_OUTPUT = 2 * 2**20  # bytes of the JSON document printed: ports past it are left out


def read_ports(reader: Reader, ethtool: bool,
               namespace: Callable[[], list[str]] | None = None) -> NicData:
    """The probe's data: every port the tree of `reader` has. `namespace`: the interfaces
    of the namespace the tree must belong to (this machine's /sys: own_interfaces); when
    the tree's differ, an error naming both, and no port (never another host's)."""
    data: NicData = {"sysfs": reader.root, "read_at": time.time()}
    net = reader.path("class", "net")
    if not reader.names(net):
        data["error"] = f"{net} is not present: no sysfs to read"
        return data
    if namespace is not None:
        try:
            why = ""
            for attempt in range(2):  # an interface added or removed between the reads
                if attempt:
                    time.sleep(0.2)
                sysfs, own = reader.directories(net), namespace()
                why = namespace_mismatch(sysfs, own)
                if not why:
                    break
        except OSError as exc:  # no if_nameindex: nothing to compare with, said
            data["namespace_unchecked"] = f"socket.if_nameindex(): {exc.strerror or exc}"
        else:
            if why:
                data["error"] = why
                data["error_kind"] = WRONG_NAMESPACE
                data["interfaces"] = {"sysfs": sysfs, "namespace": own}
                return data
    budget = Budget()
    data["ports"] = rdma_ports(reader, budget) + net_ports(reader, ethtool, budget)
    data["ports_left_out"] = budget.left_out
    # not `unreadable`: a payload with that key reads as {"unreadable": why}, no reading
    data["skipped"] = reader.skipped
    if reader.skipped_more:
        data["skipped_more"] = reader.skipped_more
    return data


def bounded(document: Document) -> str:
    """`document` as JSON of at most MAX_OUTPUT bytes: the ports that do not fit are left
    out, and counted."""
    text = json.dumps(document)
    data = document["data"]
    ports = data.get("ports")
    if len(text) <= MAX_OUTPUT or not ports:
        return text
    room = MAX_OUTPUT - (len(text) - len(json.dumps(ports))) - 256  # the count's digits
    kept = 0
    for port in ports:
        room -= len(json.dumps(port)) + 2
        if room < 0:
            break
        kept += 1
    data["ports_left_out"] += len(ports) - kept
    data["ports"] = ports[:kept]
    data["output_cut"] = f"{len(ports) - kept} port(s) left out: more than {MAX_OUTPUT} " \
                         "bytes of output"
    return json.dumps(document)
