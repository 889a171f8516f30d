"""inventory.json: exactly what a run tested, node by node.

Assembled on the controller at the end of the run from the probes' answers: the host
probe (CPU, memory, OS, kernel, versions), the GPU probe (every GPU by index, UUID, serial,
board part number, VBIOS, PCI bus id, and the driver through NVML), the inventory probe
(machine id, DMI serial and UUID, the block devices behind each filesystem of the
contract), the NIC probe (network interfaces and InfiniBand HCAs, as the fabric clauses
read them) and, when this run measured the GPUs, the NCCL torch loads. What could not be
read says why ({"unreadable": why}); nothing is guessed.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict, cast

from pytest_cluster.measure.cache import write_object
from pytest_cluster.measure.calls import gpu_call, gpu_perf_call
from pytest_cluster.measure.inventory_file import (
    GPU_FIELDS,
    INVENTORY,
    UNREADABLE,
    CpuRecord,
    GpuRecord,
    HcaRecord,
    InterfaceRecord,
    InventoryDocument,
    NodeRecord,
    SoftwareRecord,
    Unreadable,
    is_unreadable,
    unreadable,
)
from pytest_cluster.measure.network import fabric
from pytest_cluster.measure.network.fabric import NIC_START
from pytest_cluster.probes import ProbeCall
from pytest_cluster.units import utc

if TYPE_CHECKING:
    from pytest_cluster.contract.model import Spec
    from pytest_cluster.launchers import ProbeResult
    from pytest_cluster.measure.prober import Prober
    from pytest_cluster.probes.nic import NicData, Port

def inventory_call(spec: Spec) -> ProbeCall:
    """The inventory probe with every filesystem of the contract."""
    args: list[str] = []
    for fs in spec.storage:
        args += ["--path", fs.path]
    return ProbeCall("inventory", tuple(args))


INTERRUPTED = "not recorded: the run was interrupted before the {what} probe ran on this node"
NOT_RUN = "the {what} probe did not run on this node"


def _no_payload(why: str) -> dict[str, Any]:
    """In place of a probe's payload: {"unreadable": why} (see is_unreadable)."""
    return {UNREADABLE: why}


def _payload(result: ProbeResult | None, what: str, missing: str = NOT_RUN) -> dict[str, Any]:
    """The result's payload (a node's answer: read with care), or {"unreadable": why}
    when there is none."""
    if result is None:
        return _no_payload(missing.format(what=what))
    if not result.ok:
        return _no_payload(result.describe())
    payload = result.payload()
    if "error" in payload:
        return _no_payload(str(payload["error"]))
    return payload


class _Nvml(TypedDict, total=False):
    driver: str | None
    cuda_driver: str | None


def _gpus(gpu: ProbeResult | None, missing: str) -> tuple[list[GpuRecord] | Unreadable,
                                                          _Nvml]:
    """(the GPUs as the record lists them or why not, NVML's driver and CUDA)."""
    payload = _payload(gpu, "GPU", missing)
    if is_unreadable(payload):
        return payload, {}
    listed = [cast("GpuRecord", {name: entry.get(name) for name in GPU_FIELDS})
              for entry in payload["gpus"]]
    return listed, {"driver": payload.get("driver"), "cuda_driver": payload.get("cuda_driver")}


#: Where the host probe looks for each version (probes/host.py), for one it did not find.
LOOKED = {"python": "the interpreter the spec names", "torch": "package metadata of torch",
          "cuda": "torch/version.py (no torch, or a CPU build)",
          "driver": "/sys/module/nvidia/version and /proc/driver/nvidia/version (no NVIDIA "
                    "driver loaded)"}


def _found(versions: dict[str, Any], name: str) -> str | Unreadable:
    value = versions.get(name)
    return value if value else unreadable(f"not found: looked in {LOOKED[name]}")


def _nccl(host: dict[str, Any], perf: ProbeResult | None) -> tuple[Any, str]:
    if perf is not None and perf.ok and perf.payload().get("nccl"):
        return perf.payload()["nccl"], "torch.cuda.nccl.version() in the GPU measurements"
    versions = host.get("versions", {})
    if versions.get("nccl"):
        return versions["nccl"], str(host.get("sources", {}).get("nccl"))
    return unreadable("no NCCL package installed for the node's Python, and this run did "
                      "not measure the GPUs with torch"), ""


#: inventory.json's words for a link layer (as it has always written them)
LAYER_WORDS = {"Ethernet": "ethernet", "InfiniBand": "infiniband"}


def _read(port: Port, value: Any, path: str) -> Any:
    """A field the NIC probe read, or {"unreadable": "PATH: why"} when it could not."""
    if value is not None:
        return value
    return unreadable(f"{path}: {(port.get('unreadable') or {}).get(path, 'not present')}")


def _interface(root: str, port: Port) -> InterfaceRecord:
    base = f"{root}/class/net/{port['name']}"
    layer = port.get("link_layer")
    mtu = port.get("mtu")
    entry: InterfaceRecord = {
        "name": port["name"], "address": _read(port, port.get("address"), f"{base}/address"),
        "link_layer": _read(port, LAYER_WORDS.get(str(layer), layer), f"{base}/type"),
        "state": _read(port, port.get("state"), f"{base}/operstate"),
        "rate_gbps": _read(port, port.get("rate_gbit"), f"{base}/speed"),
        "mtu": _read(port, None if mtu is None else str(mtu), f"{base}/mtu"),
        "pci": port.get("pci")}
    error, driver = port.get("ethtool_error"), port.get("driver")
    if error:
        entry["unreadable"] = error
    elif driver:
        entry.update({"driver": driver,
                      "driver_version": port.get("driver_version") or "",
                      "firmware": port.get("firmware")
                      or unreadable(f"the {driver} driver reports none"),
                      "bus": port.get("bus") or ""})
    return entry


def nic_data(payload: Mapping[str, object]) -> NicData:
    """The NIC probe's answer (ProbeResult.payload_as), its ports checked as every reader
    of them relies on (fabric.ports_of; ValueError says what is wrong): a node's answer
    is untrusted."""
    fabric.ports_of(payload)
    return cast("NicData", payload)


def nic_parts(payload: NicData) -> tuple[list[InterfaceRecord], list[HcaRecord]]:
    """inventory.json's `interfaces` and `infiniband` from the NIC probe's ports: the one
    reader of a node's sysfs that the fabric clauses read too."""
    root = str(payload.get("sysfs", "/sys"))
    interfaces: list[InterfaceRecord] = []
    hcas: dict[str, HcaRecord] = {}
    for port in fabric.ports_of(payload):
        if port.get("kind") != "rdma":
            interfaces.append(_interface(root, port))
            continue
        device = str(port["device"])
        base = f"{root}/class/infiniband/{device}"
        hca = hcas.get(device)
        if hca is None:
            hca = hcas[device] = {
                "name": device,
                "node_guid": _read(port, port.get("node_guid"), f"{base}/node_guid"),
                "sys_image_guid": _read(port, port.get("sys_image_guid"),
                                        f"{base}/sys_image_guid"),
                "firmware": _read(port, port.get("firmware"), f"{base}/fw_ver"),
                "board_id": _read(port, port.get("board_id"), f"{base}/board_id"),
                "hca_type": _read(port, port.get("hca_type"), f"{base}/hca_type"),
                "netdevs": port.get("netdevs") or [], "ports": []}
        where = f"{base}/ports/{port['port']}"
        hca["ports"].append({
            "port": str(port["port"]),
            "state": _read(port, port.get("state"), f"{where}/state"),
            "rate": _read(port, port.get("rate_text"), f"{where}/rate"),
            "link_layer": _read(port, port.get("link_layer"), f"{where}/link_layer")})
    return interfaces, list(hcas.values())


def node_record(host_result: ProbeResult | None, gpu: ProbeResult | None,
                inventory: ProbeResult | None, perf: ProbeResult | None,
                with_gpus: bool, missing: str = NOT_RUN,
                nic: ProbeResult | None = None) -> NodeRecord:
    """One node's entry of inventory.json; `missing` says why a probe has no result."""
    host = _payload(host_result, "host", missing)
    simulated = any(r.simulated for r in (host_result, gpu, inventory) if r is not None)
    if is_unreadable(host):
        return cast("NodeRecord", {"simulated": simulated, **host})
    found = _payload(inventory, "inventory", missing)
    machine = found.get("machine", found)
    versions = dict(host.get("versions", {}))
    record: NodeRecord = {
        "simulated": simulated,
        "hostname": host.get("hostname"),
        "machine_id": machine.get("machine_id", machine),
        "dmi": machine.get("dmi", machine),
        "cpu": cast("CpuRecord", {key: host.get("cpu", {}).get(key)
                                  for key in ("model", "sockets", "cores", "threads")}),
        "memory_bytes": host.get("memory", {}).get("total_bytes"),
        "os": host.get("os"), "kernel": versions.get("kernel"),
    }
    nccl, nccl_source = _nccl(host, perf)
    software: SoftwareRecord = {"python": _found(versions, "python"),
                                "torch": _found(versions, "torch"),
                                "cuda": _found(versions, "cuda"), "nccl": nccl,
                                "driver": _found(versions, "driver")}
    if with_gpus:
        gpus, nvml = _gpus(gpu, missing)
        record["gpus"] = gpus
        software["driver"] = nvml.get("driver") or software["driver"]
        software["cuda_driver"] = nvml.get("cuda_driver") or unreadable(
            "NVML gave no CUDA driver version" if nvml else "no answer from NVML")
    record["software"] = software
    record["nccl_source"] = nccl_source
    ports = _payload(nic, "NIC", missing)
    if nic is not None and not is_unreadable(ports):
        try:
            record["interfaces"], record["infiniband"] = nic_parts(nic.payload_as(nic_data))
        except (ValueError, KeyError, TypeError) as exc:  # a node's answer: untrusted
            ports = _no_payload(f"the NIC probe's answer: {str(exc)[:200]}")
    if is_unreadable(ports):
        record["interfaces"] = record["infiniband"] = ports
    record["filesystems"] = found.get("filesystems", found)
    return record


def take(cluster: Prober, may_probe: bool) -> InventoryDocument:
    """Every node's record. Results this run already has are used as they are; with
    `may_probe`, what is missing is asked for (the inventory probe only of the nodes that
    answered the host probe: an unreachable node is not waited for twice). Without (the
    run was interrupted), a node with nothing recorded says so."""
    spec = cluster.spec

    def results(call: ProbeCall | None, nodes: tuple[str, ...]) -> dict[str, ProbeResult]:
        if call is None:
            return {}
        found = cluster.cache.peek(call)
        if found is None and may_probe and nodes:
            found = cluster.launcher.run(call, nodes, spec.cluster.probe_timeout_s)
        return found or {}

    hosts = results(ProbeCall("host"), cluster.nodes)
    answered = tuple(node for node in cluster.nodes if node in hosts and hosts[node].ok)
    gpus = results(gpu_call(spec.gpus), answered) if spec.gpus is not None else {}
    perf_call = gpu_perf_call(spec.gpus) if spec.gpus is not None else None
    perf = (cluster.cache.peek(perf_call) if perf_call is not None else None) or {}
    found = results(inventory_call(spec), answered)
    nics = results(NIC_START, answered)  # the fabric checks' reading, when the run took it
    nodes: dict[str, NodeRecord] = {}
    for node in cluster.nodes:
        nodes[node] = node_record(hosts.get(node), gpus.get(node), found.get(node),
                                  perf.get(node), spec.gpus is not None,
                                  NOT_RUN if may_probe else INTERRUPTED, nics.get(node))
    return {"schema": 1, "cluster": spec.cluster.name,
            "simulated": any(entry.get("simulated") for entry in nodes.values()),
            "taken_at": utc(time.time()),
            "complete": may_probe, "nodes": nodes}


def write(run_dir: Path, document: InventoryDocument) -> Path:
    """inventory.json in the run's directory, a node a line (a thousand nodes' GPUs are
    megabytes)."""
    path = run_dir / INVENTORY
    head = {key: value for key, value in document.items() if key != "nodes"}
    with path.open("x", encoding="utf-8") as out:
        out.write(json.dumps(head, sort_keys=True, allow_nan=False)[:-1] + ', "nodes": ')
        write_object(out, document["nodes"].items())
        out.write("}\n")
    return path
