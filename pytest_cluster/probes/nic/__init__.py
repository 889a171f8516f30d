"""NIC probe: every network port of this node, as the kernel's sysfs ABI shows it.

For each RDMA (InfiniBand or RoCE) device and port, `<sysfs>/class/infiniband/DEV/ports/N`
(Documentation/ABI/stable/sysfs-class-infiniband): state, phys_state, rate, link_layer,
LID, whether GID 0 is set, the network interface that carries it (RoCE, IPoIB) and its MTU,
the device's firmware, and the port's error counters (`counters/`, and `hw_counters/` where
the driver has them). For each network interface but the loopback, `<sysfs>/class/net/IF`
(Documentation/ABI/testing/sysfs-class-net): operstate, carrier, speed, mtu,
carrier_changes, the error statistics, whether it is a device (or virtual: a veth, a
bridge), and its driver and firmware (ETHTOOL_GDRVINFO, what `ethtool -i` prints).
For each port its PCI device's PCI Express link (`device/current_link_speed`,
`max_link_speed`, `current_link_width`, `max_link_width`: Documentation/ABI/testing/
sysfs-bus-pci) as `pcie`: generation and width now and at most, the speeds as written;
and whether the device is an SR-IOV virtual function (`virtual_function`: its `physfn`
link, or a VF's PCI ID; its link is then the host's); `pcie` is null for a port with no
PCI Express device (a virtual interface).

Reading this machine's /sys, it first checks that /sys/class/net lists the interfaces of
its own network namespace (socket.if_nameindex()): a process that entered a namespace with
`nsenter --net` or `unshare` still sees another namespace's /sys; then it says so, naming
both, and reads no port. `--sysfs ROOT` reads another tree (a capture, a test's tree, a
simulated node's); `--when LABEL` names the reading (a run reads at its start and at its
end, to compare counters). A file that cannot be read is named with the reason in the
port's `unreadable`, never guessed.

The tree is not trusted: a file is read only if it is a regular file (never a fifo, which
would block), its real path inside the tree (sysfs's own links stay inside it; a link out
of it is named, not followed), at most a page of it; a number is a whole number of at most
20 digits; at most MAX_PORTS ports are read (`ports_left_out` counts the rest), and an
entry that is no device or port (a port directory named `x`) is named in the reading's
`skipped`. The document printed is at most MAX_OUTPUT bytes.
Runs ON a node with only the standard library; shipped as one program (probes/_shipping.py)
of these modules: sysfs (the tree, read as untrusted), rdma and net (each kind of port),
pcie (a port's PCI Express link), ethtool, namespace, reading (the whole reading, the
document bounded), payload (its types); __main__ runs it. Prints one JSON document:
{"probe": "nic", "schema": 1, "data": {"ports": [...], ...}}.
"""

from __future__ import annotations

from .namespace import MAX_NAMED, WRONG_NAMESPACE, listed, namespace_mismatch, own_interfaces
from .reading import MAX_OUTPUT, bounded, read_ports
from .sysfs import MAX_ENTRIES, MAX_NAME, MAX_PORTS, Reader, whole_number

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .payload import Document as Document
    from .payload import NicData as NicData
    from .payload import Port as Port

__all__ = ["MAX_ENTRIES", "MAX_NAME", "MAX_NAMED", "MAX_OUTPUT", "MAX_PORTS", "WRONG_NAMESPACE",
           "Reader", "bounded", "listed", "namespace_mismatch", "own_interfaces", "read_ports",
           "whole_number"]
