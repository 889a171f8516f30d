"""GPU clauses: per node (count, one model, one driver) and per GPU (model and form factor,
memory, usable memory, ECC, row remaps, PCIe, NVLink, throttling, temperature, power,
XID errors, matmul TFLOPS, memory, host<->device and GPU<->GPU bandwidth).

Every per-GPU case records the GPU's index, UUID and serial with its evidence.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_cluster.cluster import Cluster
from pytest_cluster.evidence import Evidence, Promise
from pytest_cluster.gpu_facts import gib, nvml_gpu, p2p_for, perf_gpu, xids_for
from pytest_cluster.gpu_models import MODELS, model_of_nvml_name
from pytest_cluster.launchers.base import ProbeResult
from pytest_cluster.spec.model import Clause, GpuSpec, Rule, Spec
from pytest_cluster.units import Dim

UNIFORM = Rule("gpus.uniform", 0, "every GPU of a node is the same model")
SAME_DRIVER = Rule("gpus.same_driver", 0, "the same NVIDIA driver on every node")


def _gpus(spec: Spec) -> GpuSpec:
    assert spec.gpus is not None, "gpus is not in the contract"
    return spec.gpus


def _clause(spec: Spec, name: str) -> Clause:
    item = _gpus(spec).item(name)
    assert isinstance(item, Clause), f"gpus.{name} is not in the contract"
    return item


def _rule(spec: Spec, name: str) -> Rule:
    item = _gpus(spec).item(name)
    assert isinstance(item, Rule), f"gpus.{name} is not in the contract"
    return item


def _node_payload(evidence: Evidence, result: ProbeResult, node: str,
                  promise: Promise, gpu: int | None = None) -> dict[str, Any]:
    payload = evidence.require(result, promise, gpu=gpu)
    if "error" in payload:
        evidence.cannot_measure(node, promise, payload["error"], gpu=gpu, raw=payload)
    return payload


def _nvml(evidence: Evidence, result: ProbeResult, node: str, gpu: int,
          promise: Promise) -> dict[str, Any]:
    """GPU `gpu`'s NVML entry; records its UUID and serial; fails if the node lacks it."""
    evidence.record(gpu=gpu)
    payload = _node_payload(evidence, result, node, promise, gpu)
    entry = nvml_gpu(payload, gpu)
    if entry is None:
        evidence.cannot_measure(
            node, promise, f"the node has no GPU {gpu}: NVML lists {payload.get('count')} "
            f"GPU(s)", gpu=gpu,
            kind="missing_gpu")
    evidence.record(gpu_uuid=entry.get("uuid"), gpu_serial=entry.get("serial"))
    return entry


def _perf_section(result: ProbeResult | None, nvml: dict[str, Any], gpu: int,
                  part: str) -> dict[str, Any] | str:
    """Section `part` of the torch probe's entry for this GPU, or why there is none."""
    if result is None:
        return "the torch probe was not run"
    if not result.ok:
        return result.describe()
    payload = result.payload()
    if "error" in payload:
        return str(payload["error"])
    entry = perf_gpu(payload, nvml, gpu)
    if entry is None:
        return f"torch found no GPU with UUID {nvml.get('uuid')} (CUDA_VISIBLE_DEVICES?)"
    if "error" in entry:
        return str(entry["error"])
    section = entry.get(part)
    if not isinstance(section, dict):
        return f"no {part} result"
    if "error" in section:
        return str(section["error"])
    return section


def _perf(evidence: Evidence, result: ProbeResult | None, node: str, gpu: int,
          promise: Promise, nvml: dict[str, Any], part: str) -> dict[str, Any]:
    """Section `part` of the torch probe's entry for this GPU, or fail saying why not."""
    assert result is not None, "the gpu_perf probe is not needed by this spec"
    evidence.require(result, promise, gpu=gpu)  # the probe's own failure, with its kind
    found = _perf_section(result, nvml, gpu, part)
    if isinstance(found, str):
        evidence.cannot_measure(node, promise, found, gpu=gpu)
    return found


# -- per node ----------------------------------------------------------------------------

@pytest.mark.clause("gpus.count")
def test_gpu_count(cluster_spec: Spec, node: str, gpu_result: ProbeResult,
                   evidence: Evidence) -> None:
    clause = _gpus(cluster_spec).count
    payload = _node_payload(evidence, gpu_result, node, clause)
    gpus = payload.get("gpus", [])
    evidence.check(clause, payload["count"], node=node, result=gpu_result,
                   method="nvmlDeviceGetCount",
                   raw={"gpus": [{k: g.get(k) for k in ("index", "name", "uuid", "serial",
                                                         "pci_bus_id")} for g in gpus]})


@pytest.mark.clause("gpus.uniform")
def test_gpus_same_model(node: str, gpu_result: ProbeResult, evidence: Evidence) -> None:
    payload = _node_payload(evidence, gpu_result, node, UNIFORM)
    models: dict[str, list[int]] = {}
    for entry in payload.get("gpus", []):
        models.setdefault(str(entry.get("name")), []).append(int(entry["index"]))
    found = "; ".join(f"{len(ix)} x {name} (gpu {', '.join(map(str, ix))})"
                      for name, ix in models.items())
    evidence.check_rule(UNIFORM, len(models) <= 1, found or "no GPUs", node=node,
                        result=gpu_result, problem=f"GPUs of different models: {found}",
                        method="nvmlDeviceGetName")


@pytest.mark.clause("gpus.same_driver")
def test_gpu_driver_same_on_all_nodes(cluster: Cluster, evidence: Evidence) -> None:
    results = cluster.gpu_all()
    drivers: dict[str, list[str]] = {}
    unanswered: dict[str, str] = {}
    for name, result in results.items():
        evidence.saw(result)
        data = result.data if result.ok else None
        if data is None or "driver" not in data:
            unanswered[name] = result.describe() if not result.ok else (
                f"{name}: NVML gave no driver version")
            continue
        version = f"driver {data['driver']}, CUDA {data.get('cuda_driver')}"
        drivers.setdefault(version, []).append(name)
    found = "; ".join(f"{v} on {', '.join(nodes)}" for v, nodes in drivers.items())
    evidence.check_same(SAME_DRIVER.key, SAME_DRIVER.line, "driver", drivers, unanswered,
                        found, method="nvmlSystemGetDriverVersion, "
                        "nvmlSystemGetCudaDriverVersion",
                        raw={"drivers": drivers, "unanswered": unanswered})


# -- per GPU: identity and health (NVML) -------------------------------------------------

@pytest.mark.clause("gpus.model")
def test_gpu_model(cluster_spec: Spec, node: str, gpu: int, gpu_result: ProbeResult,
                   evidence: Evidence) -> None:
    """The GPU is the promised model and form factor (an H100 PCIe is not an H100 SXM)."""
    gpus = _gpus(cluster_spec)
    assert gpus.model is not None
    promised = MODELS[gpus.model]
    rule = Rule("gpus.model", gpus.model_line,
                f"{promised.key} ({promised.form_factor}, NVML name "
                f"{' or '.join(promised.nvml_names)})")
    entry = _nvml(evidence, gpu_result, node, gpu, rule)
    name = str(entry.get("name"))
    found = model_of_nvml_name(name)
    shown = f"{name} ({found.key}, {found.form_factor})" if found else f"{name} (unknown model)"
    evidence.check_rule(rule, name in promised.nvml_names, shown, node=node, gpu=gpu,
                        result=gpu_result, method="nvmlDeviceGetName",
                        problem=f"is {shown}, the contract says {promised.key} "
                                f"({promised.form_factor})",
                        raw={"name": name, "board_part": entry.get("board_part")})


@pytest.mark.clause("gpus.memory")
def test_gpu_memory(cluster_spec: Spec, node: str, gpu: int, gpu_result: ProbeResult,
                    evidence: Evidence) -> None:
    clause = _clause(cluster_spec, "memory")
    entry = _nvml(evidence, gpu_result, node, gpu, clause)
    memory = entry["memory"]
    if "error" in memory:
        evidence.cannot_measure(node, clause, memory["error"], gpu=gpu)
    evidence.check(clause, memory["total"], node=node, gpu=gpu, result=gpu_result,
                   method="nvmlDeviceGetMemoryInfo total", raw=memory)


@pytest.mark.clause("gpus.usable_memory")
def test_gpu_memory_usable(cluster_spec: Spec, node: str, gpu: int, gpu_result: ProbeResult,
                           gpu_perf_result: ProbeResult | None, evidence: Evidence) -> None:
    """What a job can really allocate (torch, until out of memory), not the datasheet."""
    clause = _clause(cluster_spec, "usable_memory")
    entry = _nvml(evidence, gpu_result, node, gpu, clause)
    assert gpu_perf_result is not None
    section = _perf(evidence, gpu_perf_result, node, gpu, clause, entry, "usable_memory")
    allocated = float(section["allocated_bytes"])
    total = float(entry["memory"].get("total") or section["cuda_total_bytes"])
    holders = [p for p in entry.get("processes", []) if isinstance(p, dict)]
    note = ""
    if holders:
        note = "held by other processes: " + ", ".join(
            f"pid {p.get('pid')} ({gib(p['used_bytes']) if p.get('used_bytes') else '?'})"
            for p in holders)
    measured = allocated / total if clause.requirement.bound.dim is Dim.FRACTION else allocated
    evidence.check(clause, measured, node=node, gpu=gpu, result=gpu_perf_result,
                   method=f"{section.get('method')}: {gib(allocated)} of {gib(total)}",
                   raw={**section, "nvml_total_bytes": total, "processes": holders},
                   note=note)


@pytest.mark.clause("gpus.ecc_uncorrected")
def test_gpu_ecc(cluster_spec: Spec, node: str, gpu: int, gpu_result: ProbeResult,
                 evidence: Evidence) -> None:
    """ECC is on and uncorrectable errors since the driver loaded are within the limit."""
    clause = _clause(cluster_spec, "ecc_uncorrected")
    _ecc(clause, "uncorrected", node, gpu, gpu_result, evidence)


@pytest.mark.clause("gpus.ecc_corrected")
def test_gpu_ecc_corrected(cluster_spec: Spec, node: str, gpu: int, gpu_result: ProbeResult,
                           evidence: Evidence) -> None:
    clause = _clause(cluster_spec, "ecc_corrected")
    _ecc(clause, "corrected", node, gpu, gpu_result, evidence)


def _ecc(clause: Clause, kind: str, node: str, gpu: int, result: ProbeResult,
         evidence: Evidence) -> None:
    entry = _nvml(evidence, result, node, gpu, clause)
    ecc = entry["ecc"]
    mode = ecc.get("mode", {})
    if mode.get("current") == 0:
        evidence.cannot_measure(node, clause, "ECC is disabled on this GPU, so memory "
                                "errors are neither corrected nor counted", gpu=gpu,
                                raw=ecc, kind="ecc_disabled")
    count = ecc["volatile"][kind]
    if isinstance(count, dict):
        evidence.cannot_measure(node, clause, count["error"], gpu=gpu, raw=ecc)
    evidence.check(clause, count, node=node, gpu=gpu, result=result, raw=ecc,
                   method=f"nvmlDeviceGetTotalEccErrors({kind.upper()}, VOLATILE): since "
                          f"the driver loaded; lifetime (aggregate) in raw")


@pytest.mark.clause("gpus.row_remap")
def test_gpu_row_remap(cluster_spec: Spec, node: str, gpu: int, gpu_result: ProbeResult,
                       evidence: Evidence) -> None:
    """No row remap pending (needs a GPU reset) or failed (the GPU needs replacing)."""
    rule = _rule(cluster_spec, "row_remap")
    entry = _nvml(evidence, gpu_result, node, gpu, rule)
    remap = entry["row_remap"]
    if "error" in remap:
        pages = remap.get("retired_pages", {})
        pending = pages.get("pending")
        if not isinstance(pending, int):
            evidence.cannot_measure(node, rule, f"{remap['error']}; retired pages: {pages}",
                                    gpu=gpu, raw=remap)
        evidence.check_rule(rule, not pending, f"retired pages pending: {bool(pending)}",
                            node=node, gpu=gpu, result=gpu_result, raw=remap,
                            problem="retired memory pages are pending (reset the GPU)",
                            method="nvmlDeviceGetRetiredPagesPendingStatus (pre-Ampere)")
        return
    problems = []
    if remap["pending"]:
        problems.append("a row remap is pending (the GPU needs a reset)")
    if remap["failure"]:
        problems.append("a row remap failed (the GPU needs replacing)")
    shown = (f"pending {remap['pending']}, failure {remap['failure']}, "
             f"{remap['uncorrected_rows']} rows remapped for uncorrectable errors, "
             f"{remap['corrected_rows']} for correctable")
    evidence.check_rule(rule, not problems, shown, node=node, gpu=gpu, result=gpu_result,
                        problem="; ".join(problems), method="nvmlDeviceGetRemappedRows",
                        raw=remap)


@pytest.mark.clause("gpus.pcie")
def test_gpu_pcie(cluster_spec: Spec, node: str, gpu: int, gpu_result: ProbeResult,
                  gpu_perf_result: ProbeResult | None, evidence: Evidence) -> None:
    """The PCIe link runs at its maximum generation and width - under load, because an
    idle GPU lowers its link speed to save power."""
    rule = _rule(cluster_spec, "pcie")
    entry = _nvml(evidence, gpu_result, node, gpu, rule)
    pcie = entry["pcie"]
    for key in ("gen", "max_gen", "width", "max_width"):
        if not isinstance(pcie.get(key), int):
            evidence.cannot_measure(node, rule, f"PCIe {key}: {pcie.get(key)}", gpu=gpu,
                                    raw=pcie)
    gen, width, when = pcie["gen"], pcie["width"], "idle"
    load_error = ""
    load = _perf_section(gpu_perf_result, entry, gpu, "load")
    if isinstance(load, dict) and isinstance(load.get("pcie_gen_max"), int):
        gen, width = load["pcie_gen_max"], load["pcie_width_max"]
        when = "under load"
    elif isinstance(load, str):
        load_error = load
    at_max = gen >= pcie["max_gen"] and width >= pcie["max_width"]
    if not at_max and when == "idle":
        evidence.cannot_measure(
            node, rule, f"the link is at Gen{gen} x{width} while idle, below Gen"
            f"{pcie['max_gen']} x{pcie['max_width']}; GPUs lower link speed when idle, so "
            f"it must be read under load, which failed: {load_error or 'no load was run'}",
            gpu=gpu, raw=pcie)
    shown = f"Gen{gen} x{width} ({when}), maximum Gen{pcie['max_gen']} x{pcie['max_width']}"
    evidence.check_rule(
        rule, at_max, shown, node=node, gpu=gpu,
        result=gpu_perf_result if when == "under load" and gpu_perf_result else gpu_result,
        problem=f"PCIe link at Gen{gen} x{width} {when}, below its maximum Gen"
                f"{pcie['max_gen']} x{pcie['max_width']}",
        method="nvmlDeviceGetCurrPcieLinkGeneration/Width, highest seen while the torch "
               "probe ran" if when == "under load" else "nvmlDeviceGetCurrPcieLinkGeneration"
               "/Width at idle", raw={**pcie, "under_load": load})


@pytest.mark.clause("gpus.nvlink")
def test_gpu_nvlink(cluster_spec: Spec, node: str, gpu: int, gpu_result: ProbeResult,
                    evidence: Evidence) -> None:
    gpus = _gpus(cluster_spec)
    promise: Promise = gpus.nvlink_count or _rule(cluster_spec, "nvlink")
    entry = _nvml(evidence, gpu_result, node, gpu, promise)
    links = entry["nvlink"]
    down = [i for i, up in enumerate(links.get("links", [])) if not up]
    if gpus.nvlink_count is not None:
        evidence.check(gpus.nvlink_count, links["up"], node=node, gpu=gpu, result=gpu_result,
                       method="nvmlDeviceGetNvLinkState per link", raw=links)
        return
    assert isinstance(promise, Rule)
    model = MODELS.get(gpus.model or "")
    expected = model.nvlinks if model else None  # links NVML does not list are not up
    problems = []
    if down:
        problems.append(f"{len(down)} of {links['total']} NVLink links down "
                        f"(links {', '.join(map(str, down))})")
    if expected is not None and links["total"] < expected:
        problems.append(f"NVML lists {links['total']} NVLink links, the contract's "
                        f"{model.key if model else ''} has {expected}")
    shown = f"{links['up']} of {links['total']} links up"
    evidence.check_rule(promise, not problems, shown, node=node, gpu=gpu, result=gpu_result,
                        problem="; ".join(problems),
                        method="nvmlDeviceGetNvLinkState per link", raw=links)


@pytest.mark.clause("gpus.throttle")
def test_gpu_throttle(cluster_spec: Spec, node: str, gpu: int, gpu_result: ProbeResult,
                      gpu_perf_result: ProbeResult | None, evidence: Evidence) -> None:
    """No HW slowdown, thermal or power-brake throttling while all GPUs run matmuls."""
    rule = _rule(cluster_spec, "throttle")
    entry = _nvml(evidence, gpu_result, node, gpu, rule)
    load = _perf(evidence, gpu_perf_result, node, gpu, rule, entry, "load")
    if not load.get("load_samples"):
        evidence.cannot_measure(node, rule, "no NVML sample was taken under load", gpu=gpu,
                                raw=load)
    assert gpu_perf_result is not None
    reasons = list(load.get("throttle", []))
    shown = (", ".join(reasons) or "none") + (
        f" in {load['load_samples']} samples under load (max {load.get('temperature_max_c')}"
        f" C, {load.get('power_max_w')} W, SM clock down to {load.get('sm_clock_min_mhz')} "
        f"MHz)")
    evidence.check_rule(rule, not reasons, shown, node=node, gpu=gpu,
                        result=gpu_perf_result,
                        problem=f"throttled under load: {', '.join(reasons)} (clocks event "
                                f"reasons {load.get('reasons_mask', 0):#x}, SM clock down to "
                                f"{load.get('sm_clock_min_mhz')} MHz, max "
                                f"{load.get('temperature_max_c')} C)",
                        method="nvmlDeviceGetCurrentClocksEventReasons sampled every 0.1 s "
                               "while every GPU of the node ran matmuls", raw=load)


@pytest.mark.clause("gpus.temperature")
def test_gpu_temperature(cluster_spec: Spec, node: str, gpu: int, gpu_result: ProbeResult,
                         gpu_perf_result: ProbeResult | None, evidence: Evidence) -> None:
    """The hottest the GPU got under load (at idle only if no load could be run)."""
    clause = _clause(cluster_spec, "temperature")
    entry = _nvml(evidence, gpu_result, node, gpu, clause)
    load = _perf_section(gpu_perf_result, entry, gpu, "load")
    if isinstance(load, dict) and load.get("temperature_max_c") is not None:
        assert gpu_perf_result is not None
        evidence.check(clause, float(load["temperature_max_c"]), node=node, gpu=gpu,
                       result=gpu_perf_result, raw=load,
                       method="nvmlDeviceGetTemperature, highest while all GPUs ran matmuls")
        return
    temp = entry.get("temperature_c")
    if not isinstance(temp, (int, float)):
        evidence.cannot_measure(node, clause, f"{temp}; under load: {load}", gpu=gpu)
    evidence.check(clause, float(temp), node=node, gpu=gpu, result=gpu_result,
                   method=f"nvmlDeviceGetTemperature at idle (no load: {load})", raw=entry)


@pytest.mark.clause("gpus.power_limit")
def test_gpu_power_limit(cluster_spec: Spec, node: str, gpu: int, gpu_result: ProbeResult,
                         evidence: Evidence) -> None:
    """The enforced power limit (a GPU capped below its rating runs slower)."""
    clause = _clause(cluster_spec, "power_limit")
    entry = _nvml(evidence, gpu_result, node, gpu, clause)
    limit = entry.get("power_limit_w")
    if not isinstance(limit, (int, float)):
        evidence.cannot_measure(node, clause, str(limit), gpu=gpu)
    evidence.check(clause, float(limit), node=node, gpu=gpu, result=gpu_result,
                   method="nvmlDeviceGetEnforcedPowerLimit",
                   raw={k: entry.get(k) for k in ("power_limit_w", "power_default_limit_w",
                                                  "power_w")})


@pytest.mark.clause("gpus.xid")
def test_gpu_xid(cluster_spec: Spec, node: str, gpu: int, gpu_result: ProbeResult,
                 evidence: Evidence) -> None:
    """No critical XID error: NVML events over a window, and the kernel log if readable."""
    rule = _rule(cluster_spec, "xid")
    entry = _nvml(evidence, gpu_result, node, gpu, rule)
    payload = gpu_result.payload()
    found, unreadable = xids_for(payload, entry)
    xid = payload.get("xid") or {}
    sources = 1 + isinstance(xid.get("kernel_log"), dict)
    if len(unreadable) == sources:
        evidence.cannot_measure(node, rule, "; ".join(unreadable), gpu=gpu, raw=xid)
    critical = [x for x in found if x.critical]
    shown = ", ".join(f"XID {x.xid} ({x.source})" for x in found) or "none"
    read = "; ".join(unreadable)
    evidence.check_rule(rule, not critical, shown + (f"; unreadable: {read}" if read else ""),
                        node=node, gpu=gpu, result=gpu_result,
                        problem="critical XID errors: " + ", ".join(
                            f"XID {x.xid} ({x.source})" for x in critical),
                        method="NVML XID events" + (", kernel log" if sources > 1 else ""),
                        raw={"found": [x.__dict__ for x in found], "unreadable": unreadable})


# -- per GPU: measured with torch --------------------------------------------------------

@pytest.mark.clause("gpus.matmul")
def test_gpu_matmul(cluster_spec: Spec, node: str, gpu: int, dtype: str,
                    gpu_result: ProbeResult, gpu_perf_result: ProbeResult | None,
                    evidence: Evidence) -> None:
    """Achieved matmul TFLOPS, every GPU of the node loaded at once (mamf-style)."""
    clause = dict(_gpus(cluster_spec).matmul)[dtype]
    entry = _nvml(evidence, gpu_result, node, gpu, clause)
    matmul = _perf(evidence, gpu_perf_result, node, gpu, clause, entry, "matmul")
    found = matmul.get(dtype)
    if not isinstance(found, dict) or "error" in found:
        reason = found["error"] if isinstance(found, dict) else f"no {dtype} result"
        evidence.cannot_measure(node, clause, reason, gpu=gpu, raw=found)
    assert gpu_perf_result is not None
    m, n, k = found["shape"]
    evidence.check(clause, found["tflops_median"] * 1e12, node=node, gpu=gpu,
                   result=gpu_perf_result, raw=found,
                   method=f"{found.get('method')}; {m}x{n}x{k} {dtype}, median of "
                          f"{found.get('iterations')}, max {found['tflops_max']:.1f} TFLOPS")


def _bandwidth(spec: Spec, name: str, part: str, node: str, gpu: int,
               gpu_result: ProbeResult, perf: ProbeResult | None,
               evidence: Evidence) -> None:
    clause = _clause(spec, name)
    entry = _nvml(evidence, gpu_result, node, gpu, clause)
    section = _perf(evidence, perf, node, gpu, clause, entry, part)
    assert perf is not None
    evidence.check(clause, float(section["bytes_per_s"]), node=node, gpu=gpu, result=perf,
                   method=section.get("method"), raw=section)


@pytest.mark.clause("gpus.memory_bandwidth")
def test_gpu_memory_bandwidth(cluster_spec: Spec, node: str, gpu: int, gpu_result: ProbeResult,
                              gpu_perf_result: ProbeResult | None, evidence: Evidence) -> None:
    """Device-to-device copy, bytes read + written counted."""
    _bandwidth(cluster_spec, "memory_bandwidth", "copy", node, gpu, gpu_result,
               gpu_perf_result, evidence)


@pytest.mark.clause("gpus.h2d")
def test_gpu_h2d(cluster_spec: Spec, node: str, gpu: int, gpu_result: ProbeResult,
                 gpu_perf_result: ProbeResult | None, evidence: Evidence) -> None:
    """Host to device from pinned memory, one GPU at a time (its own PCIe link)."""
    _bandwidth(cluster_spec, "h2d", "h2d", node, gpu, gpu_result, gpu_perf_result, evidence)


@pytest.mark.clause("gpus.d2h")
def test_gpu_d2h(cluster_spec: Spec, node: str, gpu: int, gpu_result: ProbeResult,
                 gpu_perf_result: ProbeResult | None, evidence: Evidence) -> None:
    _bandwidth(cluster_spec, "d2h", "d2h", node, gpu, gpu_result, gpu_perf_result, evidence)


@pytest.mark.clause("gpus.p2p")
def test_gpu_p2p(cluster_spec: Spec, node: str, gpu: int, gpu_result: ProbeResult,
                 gpu_perf_result: ProbeResult | None, evidence: Evidence) -> None:
    """GPU-to-GPU copies with every other GPU of the node (NVLink): the median over its
    pairs, naming the slowest partner."""
    clause = _clause(cluster_spec, "p2p")
    entry = _nvml(evidence, gpu_result, node, gpu, clause)
    assert gpu_perf_result is not None
    payload = _node_payload(evidence, gpu_perf_result, node, clause, gpu)
    section = payload.get("p2p")
    if isinstance(section, dict) and "error" in section:
        evidence.cannot_measure(node, clause, section["error"], gpu=gpu, raw=section)
    copies = p2p_for(payload, gpu)
    if copies is None:
        evidence.cannot_measure(node, clause, f"no GPU-to-GPU copies with gpu{gpu}: torch "
                                f"sees {payload.get('count')} GPU(s) on the node", gpu=gpu)
    slowest = (f"slowest with gpu{copies.slowest_peer}: "
               f"{copies.slowest_bytes_per_s / 1e9:.1f} GB/s")
    evidence.check(clause, copies.median_bytes_per_s, node=node, gpu=gpu,
                   result=gpu_perf_result, note=slowest, raw={**copies.__dict__,
                                                              "uuid": entry.get("uuid")},
                   method=f"median over {copies.pairs} copies to and from the other GPUs; "
                          f"{slowest}")
