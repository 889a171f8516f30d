"""Fabric clauses, per node: how many ports are active, at which rate, link layer and MTU,
and the same NIC firmware on every node. The NIC probe reads the kernel's sysfs; the ports
counted are the spec's `fabric.devices` (measure/network/fabric.py). A failure names the node and
each port at fault (`mlx5_3/1`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from pytest_cluster.evidence.verdict.blame import VIRTUAL_PORT
from pytest_cluster.hostlist import compress_hostlist
from pytest_cluster.measure.network import fabric
from pytest_cluster.measure.network.fabric import NIC_END, NIC_START
from pytest_cluster.measure.network.node_search import COULD_NOT_DECIDE, FAILED, OK, SLOW, UNDECIDED
from pytest_cluster.measure.network.rails import searches as rail_searches
from pytest_cluster.run.contract_tests import checks
from pytest_cluster.units import Dim, format_number, format_value

if TYPE_CHECKING:
    from pytest_cluster.contract.model import Clause, FabricSpec, Rule, Spec
    from pytest_cluster.evidence.record.check import Evidence
    from pytest_cluster.launchers.result import ProbeResult
    from pytest_cluster.measure.cluster import Cluster
    from pytest_cluster.probes.nic import Port

METHOD = "sysfs /sys/class/infiniband/*/ports/* and /sys/class/net/* (NIC probe)"


def _fabric(spec: Spec) -> FabricSpec:
    assert spec.fabric is not None, "the spec has no fabric section"
    return spec.fabric


def _ports(evidence: Evidence, result: ProbeResult, promise: Clause | Rule,
           spec: FabricSpec) -> list[Port]:
    """The counted ports of the node, or fail saying there are none to judge."""
    payload = evidence.require(result, promise)
    if "error" in payload:
        # another namespace's /sys read is the tool's error, not the node's (never drained)
        kind = ("wrong_namespace" if payload.get("error_kind") == "wrong_namespace"
                else "cannot_measure")
        evidence.cannot_measure(promise, str(payload["error"])[:400], raw=payload, kind=kind)
    try:
        every = fabric.ports_of(payload)
    except ValueError as exc:  # the node's answer is none a real NIC gives
        evidence.cannot_measure(promise, str(exc), raw=None, kind="bad_output")
    ports = fabric.counted(every, spec.devices)
    if not ports:
        names = [str(p.get("name")) for p in every]
        seen = ", ".join(names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8
                                       else "") if names else "none"
        evidence.cannot_measure(promise, f"no port among {fabric.which(spec.devices)} "
                                f"(the node has: {seen})", raw=payload)
    return ports


def _readable(evidence: Evidence, result: ProbeResult, clause: Clause, spec: FabricSpec,
              field: str, what: str, files: tuple[str, ...],
              active_only: bool = True) -> list[Port]:
    """The counted ports (the active ones: `active_only`), each with its `field` read;
    else fail saying which port has none, and why (the probe names the file)."""
    active = [p for p in _ports(evidence, result, clause, spec)
              if p.get("active") or not active_only]
    if not active:
        evidence.cannot_measure(clause, "no counted port is active", raw=None)
    missing = [fabric.unreadable(p, what, files) for p in active if p.get(field) is None]
    if missing:
        evidence.cannot_measure(clause, "; ".join(missing[:4]),
                                raw=_raw(active, field, "unreadable"))
    return active


def _clause(spec: FabricSpec, key: str) -> Clause:
    clause = spec.clause(key)
    assert clause is not None, f"fabric.{key} is not in the contract"
    return clause


def _raw(ports: list[Port], *fields: str) -> dict[str, Any]:
    return {p["name"]: {f: p.get(f) for f in fields} for p in ports}


@checks("fabric.ports")
def test_fabric_ports(cluster_spec: Spec, cluster: Cluster, node: str,
                      evidence: Evidence) -> None:
    """How many counted ports are active (state ACTIVE and LinkUp; an interface: up)."""
    spec = _fabric(cluster_spec)
    clause = _clause(spec, "ports")
    result = cluster.probe(NIC_START, node)
    ports = _ports(evidence, result, clause, spec)
    down = fabric.inactive(ports)
    evidence.check(clause, len(ports) - len(down), result=result,
                   method=f"active among {fabric.which(spec.devices)}: {METHOD}",
                   raw=_raw(ports, "state", "phys_state", "active"),
                   note=f"not active: {', '.join(down)}" if down else "")


@checks("fabric.rate")
def test_fabric_rate(cluster_spec: Spec, cluster: Cluster, node: str,
                     evidence: Evidence) -> None:
    """Each active counted port's rate (the slowest is the measured figure); every port
    below the bound is named."""
    spec = _fabric(cluster_spec)
    clause = _clause(spec, "rate")
    result = cluster.probe(NIC_START, node)
    active = _readable(evidence, result, clause, spec, "rate_gbit", "rate",
                       ("rate", "speed"))
    rates = {p["name"]: fabric.rate_bytes(p) or 0.0 for p in active}
    slow = [f"{name} at {rate / fabric.GBIT:g} Gb/s" for name, rate in rates.items()
            if not clause.requirement.holds(rate)]
    evidence.check(clause, min(rates.values()), result=result,
                   method=f"each active port's rate (sysfs rate, speed): {METHOD}",
                   raw=_raw(active, "rate_gbit"),
                   note=f"{len(slow)} of {len(active)} port(s) below it: {', '.join(slow)}"
                   if slow else "")


@checks("fabric.link_layer")
def test_fabric_link_layer(cluster_spec: Spec, cluster: Cluster, node: str,
                           evidence: Evidence) -> None:
    """Every counted port on the promised link layer (InfiniBand, or Ethernet: RoCE)."""
    spec = _fabric(cluster_spec)
    rule = spec.rule("link_layer")
    assert rule is not None and spec.link_layer is not None
    result = cluster.probe(NIC_START, node)
    ports = _ports(evidence, result, rule, spec)
    other = [f"{p['name']} ({p.get('link_layer')})" for p in ports
             if p.get("link_layer") != spec.link_layer]
    layers = sorted({str(p.get("link_layer")) for p in ports})
    evidence.check_rule(rule, not other, ", ".join(layers), result=result,
                        problem=f"{len(other)} of {len(ports)} port(s) not on "
                                f"{spec.link_layer}: {', '.join(other)}",
                        method=METHOD, raw=_raw(ports, "link_layer"))


@checks("fabric.mtu")
def test_fabric_mtu(cluster_spec: Spec, cluster: Cluster, node: str,
                    evidence: Evidence) -> None:
    """Each counted port's interface MTU, a port down included (it is configured: the port
    comes up with it). RoCE's path MTU follows it; an IB port without an interface has none
    to read."""
    spec = _fabric(cluster_spec)
    clause = _clause(spec, "mtu")
    result = cluster.probe(NIC_START, node)
    active = _readable(evidence, result, clause, spec, "mtu", "MTU (no network interface)",
                       ("mtu",), active_only=False)
    mtus = {p["name"]: int(cast("int", p["mtu"])) for p in active}  # read: _readable
    low = [f"{name} ({mtu})" for name, mtu in mtus.items()
           if not clause.requirement.holds(mtu)]
    evidence.check(clause, min(mtus.values()), result=result,
                   method=f"each active port's interface mtu: {METHOD}",
                   raw=_raw(active, "netdev", "mtu"),
                   note=f"below it: {', '.join(low)}" if low else "")


@checks("fabric.pcie")
def test_fabric_pcie(cluster_spec: Spec, cluster: Cluster, node: str,
                     evidence: Evidence) -> None:
    """Each counted port's NIC at its maximum PCIe generation and width, a port down
    included (its card's link is up), each PCI device once. Read at rest: a NIC's link
    keeps the speed it trained to (a GPU's drops while idle). A link that could not be
    read is said, never passed. An SR-IOV virtual function's link (a cloud VM's port) is
    its host's, and a virtual interface (a veth, a bond) has none: left out, said; a node
    whose every counted port is one is NOT CHECKED."""
    spec = _fabric(cluster_spec)
    rule = spec.rule("pcie")
    assert rule is not None
    result = cluster.probe(NIC_START, node)
    ports = _ports(evidence, result, rule, spec)
    links = fabric.pcie_links(ports)
    raw = _raw(ports, "pci", "pcie")
    if links.left_out and not links.judged:  # a VM's: nothing it can read was measured
        which = "a VM" if not links.no_device else "virtual interfaces" \
            if not links.virtual else "ports with no PCIe link of their own"
        evidence.cannot_measure(rule, f"not checked: {links.left_out} (write fabric.pcie: "
                                f"false for {which})", raw=raw, kind=VIRTUAL_PORT)
    unread = "; ".join(links.unread[:4]) + (f" and {len(links.unread) - 4} more"
                                             if len(links.unread) > 4 else "")
    left_out = f"; left out: {links.left_out}" if links.left_out else ""
    if links.unread and not links.below:
        evidence.cannot_measure(rule, unread + left_out, raw=raw)
    evidence.check_rule(rule, not links.below, links.measured + left_out, result=result,
                        problem=f"{len(links.below)} of {links.judged} NIC(s) below their "
                                f"maximum PCIe link: {'; '.join(links.below)}"
                                + (f"; not read: {unread}" if unread else "") + left_out,
                        method=f"each counted port's PCI device, once: device/"
                               f"current_link_speed, max_link_speed, current_link_width, "
                               f"max_link_width at the run's start: {METHOD}", raw=raw)


@checks("fabric.same_firmware")
def test_fabric_same_firmware(cluster_spec: Spec, cluster: Cluster,
                              evidence: Evidence) -> None:
    """The counted ports' firmware versions, the same on every node."""
    spec = _fabric(cluster_spec)
    rule = spec.rule("same_firmware")
    assert rule is not None
    groups: dict[str, list[str]] = {}
    unanswered: dict[str, str] = {}
    none: list[str] = []  # the nodes that answered without a firmware version
    for node, result in cluster.probe_all(NIC_START).items():
        evidence.saw(result)
        payload = result.payload() if result.ok else {}
        if not result.ok or "error" in payload:
            unanswered[node] = result.describe() if not result.ok else str(payload["error"])
            continue
        try:
            every = fabric.ports_of(payload)
        except ValueError as exc:
            unanswered[node] = str(exc)
            continue
        versions = fabric.firmware(fabric.counted(every, spec.devices))
        if not versions:
            unanswered[node] = f"no firmware version among {fabric.which(spec.devices)}"
            none.append(node)
            continue
        groups.setdefault(versions, []).append(node)
    if not groups and none:  # they answered, with nothing to compare: never a pass
        evidence.cannot_measure(rule, f"no counted port reports a firmware version on "
                                f"{compress_hostlist(none)} (a virtual NIC has none)",
                                node="all", raw={"unanswered": unanswered})
    evidence.check_same(rule.key, rule.line, "NIC firmware", groups, unanswered,
                        method=METHOD)


@checks("fabric.counters")
def test_fabric_counters(cluster_spec: Spec, cluster: Cluster, node: str,
                         evidence: Evidence) -> None:
    """No counted port's error counters grow between the run's first reading (before its
    first case) and its last (after every other case, no load running), each growth named
    with both numbers."""
    spec = _fabric(cluster_spec)
    rule = spec.rule("counters")
    assert rule is not None
    before = cluster.probe(NIC_START, node)
    first = _ports(evidence, before, rule, spec)
    after = cluster.probe(NIC_END, node)
    last = _ports(evidence, after, rule, spec)
    grew = fabric.grown(first, last)
    shown = f"{len(grew)} counter(s) grew" if grew else \
        f"no error counter grew on {len(last)} port(s)"
    evidence.check_rule(rule, not grew, shown, result=after,
                        problem=f"during the run: {'; '.join(grew[:8])}"
                                + (f" and {len(grew) - 8} more" if len(grew) > 8 else ""),
                        method=f"the NIC probe before the first case and after the last: "
                               f"{', '.join(fabric.MUST_NOT_GROW)}",
                        raw={"grew": grew, "read_at": [before.payload().get("read_at"),
                                                       after.payload().get("read_at")]})


@checks("fabric.symbol_errors")
def test_fabric_symbol_errors(cluster_spec: Spec, cluster: Cluster, node: str,
                              evidence: Evidence) -> None:
    """Each counted port's symbol errors between the run's first NIC reading and its last,
    per unit of time (the worst port is the measured figure); every port above the bound
    is named with its count."""
    spec = _fabric(cluster_spec)
    clause = _clause(spec, "symbol_errors")
    before = cluster.probe(NIC_START, node)
    first = _ports(evidence, before, clause, spec)
    after = cluster.probe(NIC_END, node)
    last = _ports(evidence, after, clause, spec)
    start, end = before.payload().get("read_at"), after.payload().get("read_at")
    if not isinstance(start, (int, float)) or not isinstance(end, (int, float)) \
            or end <= start:
        evidence.cannot_measure(clause, f"the NIC readings carry no usable times (start "
                                f"{str(start)[:32]}, end {str(end)[:32]})", raw=None)
    seconds = float(end) - float(start)
    rates = fabric.symbol_rates(first, last, seconds)
    if not rates:
        evidence.cannot_measure(clause, "no counted port has a readable symbol_error "
                                "counter in both readings", raw=None)
    high = [f"{name}: {taken} in {format_number(seconds)} s"
            for name, (taken, rate) in rates.items() if not clause.requirement.holds(rate)]
    evidence.check(clause, max(rate for _, rate in rates.values()), result=after,
                   method=f"symbol_error growth per port between the NIC probe before the "
                          f"first case and after the last ({format_number(seconds)} s apart): "
                          f"{METHOD}",
                   raw={name: taken for name, (taken, _) in rates.items()},
                   note=f"{len(high)} of {len(rates)} port(s) above it: {', '.join(high)}"
                   if high else "")


@checks("fabric.rail_busbw")
def test_fabric_rail_busbw(cluster_spec: Spec, cluster: Cluster, node: str,
                           evidence: Evidence) -> None:
    """Each rail of this node alone: the slow-node search's all_reduce (one rank per
    node, search_payload) run once per rail with every job bound to that port, so a slow
    port is named with its node. A node is slow on a rail only against a partner that
    reached the bar on it with other nodes; it passes only when every rail was measured
    at the bar. A rail whose search could not decide (no known-good node) is no fault of
    this node: when nothing else failed it is `undecided` (NOT CHECKED, never drained), as
    interconnect.busbw[node_network] is."""
    spec = _fabric(cluster_spec)
    clause = _clause(spec, "rail_busbw")
    rails = rail_searches(cluster)
    evidence.saw(cluster.probe_all(NIC_START).get(node))  # its rails are the ports read
    if node in rails.unread:
        evidence.cannot_measure(clause, f"its NIC or host probe failed: "
                                f"{rails.unread[node]}", raw=None)
    unit = clause.requirement.unit
    raw: dict[str, Any] = {}
    slow: list[str] = []
    slow_rates: list[float] = []
    unmeasured = [f"{name}: {why}" for name, why in rails.errors.items()]
    undecided: dict[str, list[str]] = {}  # why -> the rails whose search could not decide
    figures: dict[str, float] = {}
    for name, search in rails.searches.items():
        evidence.saw(search)
        verdict = search.verdicts.get(node)
        if verdict is None:
            unmeasured.append(f"{name}: not in the search")
            continue
        raw[name] = {"status": verdict.status, "busbw": verdict.busbw,
                     "partners": list(verdict.partners), "round": verdict.round,
                     **rails.bound.get(name, {})}
        if verdict.status in (OK, SLOW):
            figures[name] = verdict.busbw
            if verdict.status == SLOW:
                slow_rates.append(verdict.busbw)
                partners = ", ".join(verdict.partners)
                slow.append(f"{name} {format_value(verdict.busbw, Dim.RATE, unit)} with "
                            f"{partners} (round {verdict.round} of {len(search.rounds)}; "
                            f"{partners} reached the bar on {name} with other nodes)")
        elif verdict.status == UNDECIDED:  # no known-good node on it: not this node's fault
            undecided.setdefault(verdict.why, []).append(name)
        else:
            said = rails.why_failed(name, [node, *verdict.partners]) \
                if verdict.status == FAILED else ""
            unmeasured.append(f"{name}: {verdict.why or verdict.status}"
                              + (f" ({said})" if said else ""))
    method = rails.method
    not_decided = [f"{', '.join(names)}: {COULD_NOT_DECIDE}: {why}"
                   for why, names in undecided.items()]
    if not slow and not unmeasured and not_decided:  # as interconnect.busbw[node_network]
        evidence.undecided(clause, "; ".join(not_decided), raw=raw)
    unmeasured += not_decided
    if not slow and (unmeasured or not figures):
        evidence.cannot_measure(clause, "; ".join(unmeasured[:6]) or "no rail to measure",
                                raw=raw)
    worst = min(slow_rates or figures.values())
    if not slow:  # the worst rail's group figure: bounded by partners not known good
        shared = next((v.bounded_by for n, s in rails.searches.items()
                       if (v := s.verdicts.get(node)) is not None and figures.get(n) == worst),
                      ())
        if shared:
            evidence.record(bounded_by=compress_hostlist(shared))
    evidence.check(clause, worst,
                   result=None, method=method, raw=raw,
                   note="; ".join([*(f"slow rail {text}" for text in slow),
                                   *(f"not measured: {text}" for text in unmeasured[:4])]))
