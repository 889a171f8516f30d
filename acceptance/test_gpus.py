"""GPU clauses: per node (count, one model, one driver) and per GPU (model and form factor,
memory, usable memory, ECC, row remaps, PCIe, NVLink, throttling, temperature, power,
XID errors, matmul TFLOPS, memory, host<->device and GPU<->GPU bandwidth; under stress,
throttling and silent data corruption); per node, DCGM's own diagnostic.

Every per-GPU case records the GPU's index, UUID and serial with its evidence. The node
and GPU a case is about are its own parameters: the evidence knows them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pytest_cluster.contract.model import Clause, GpuSpec, Rule, Spec
from pytest_cluster.contract.sections.gpu_models import MODELS, model_of_nvml_name
from pytest_cluster.evidence import untrusted_json
from pytest_cluster.measure import gpus as gpu_probes
from pytest_cluster.measure.dcgm_diag import Finding, diagnose
from pytest_cluster.measure.gpu_facts import gib, nvml_gpu, p2p_for, perf_gpu, xids_for
from pytest_cluster.measure.reference import for_gpu
from pytest_cluster.run.contract_tests import checks, table_tests
from pytest_cluster.units import Dim, finite

if TYPE_CHECKING:
    from pytest_cluster.contract.declaration import Declaration
    from pytest_cluster.evidence.record.check import Evidence, Promise
    from pytest_cluster.launchers.result import ProbeResult
    from pytest_cluster.measure.cluster import Cluster


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


def _node_payload(evidence: Evidence, result: ProbeResult,
                  promise: Promise) -> dict[str, Any]:
    payload = evidence.require(result, promise)
    if "error" in payload:
        evidence.cannot_measure(promise, payload["error"], raw=payload)
    return payload


def _nvml(evidence: Evidence, result: ProbeResult, promise: Promise) -> dict[str, Any]:
    """This GPU's NVML entry; records its UUID and serial; fails if the node lacks it."""
    gpu = evidence.place.gpu
    assert gpu is not None, "a per-GPU test"
    evidence.record(gpu=gpu)
    payload = _node_payload(evidence, result, promise)
    entry = nvml_gpu(payload, gpu)
    if entry is None:
        evidence.cannot_measure(promise, f"the node has no GPU {gpu}: NVML lists "
                                f"{payload.get('count')} GPU(s)", kind="missing_gpu")
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


def _perf(evidence: Evidence, result: ProbeResult | None, promise: Promise,
          nvml: dict[str, Any], part: str) -> dict[str, Any]:
    """Section `part` of the torch probe's entry for this GPU, or fail saying why not."""
    assert result is not None, "the gpu_perf probe is not needed by this spec"
    assert evidence.place.gpu is not None, "a per-GPU test"
    evidence.require(result, promise)  # the probe's own failure, with its kind
    found = _perf_section(result, nvml, evidence.place.gpu, part)
    if isinstance(found, str):
        evidence.cannot_measure(promise, found)
    return found


# -- per node ----------------------------------------------------------------------------

@checks("gpus.count")
def test_gpu_count(cluster_spec: Spec, gpu_result: ProbeResult, evidence: Evidence) -> None:
    clause = _gpus(cluster_spec).count
    payload = _node_payload(evidence, gpu_result, clause)
    gpus = payload.get("gpus", [])
    count = evidence.figure(clause, payload, "count", "gpu")
    if not isinstance(gpus, list) or not all(isinstance(g, dict) for g in gpus) \
            or len(gpus) != count:  # NVML lists each GPU it counts, an error in its entry
        evidence.cannot_measure(clause, f"the node reported count = {count:g} but lists "
                                f"{untrusted_json.found(gpus)} (bad output of the node)",
                                kind="bad_output")
    evidence.check(clause, count, result=gpu_result, method="nvmlDeviceGetCount",
                   raw={"gpus": [{k: g.get(k) for k in ("index", "name", "uuid", "serial",
                                                         "pci_bus_id")} for g in gpus]})


@checks("gpus.uniform")
def test_gpus_same_model(cluster_spec: Spec, gpu_result: ProbeResult,
                         evidence: Evidence) -> None:
    rule = _rule(cluster_spec, "uniform")
    payload = _node_payload(evidence, gpu_result, rule)
    models: dict[str, list[int]] = {}
    for entry in payload.get("gpus", []):
        models.setdefault(str(entry.get("name")), []).append(int(evidence.figure(
            rule, entry, "index", "gpus[]")))
    found = "; ".join(f"{len(ix)} x {name} (gpu {', '.join(map(str, ix))})"
                      for name, ix in models.items())
    evidence.check_rule(rule, len(models) <= 1, found or "no GPUs", result=gpu_result,
                        problem=f"GPUs of different models: {found}",
                        method="nvmlDeviceGetName")


@checks("gpus.same_driver")
def test_gpu_driver_same_on_all_nodes(cluster: Cluster, evidence: Evidence) -> None:
    rule = _rule(cluster.spec, "same_driver")
    results = gpu_probes.gpu_all(cluster)
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
    evidence.check_same(rule.key, rule.line, "driver", drivers, unanswered,
                        method="nvmlSystemGetDriverVersion, nvmlSystemGetCudaDriverVersion")


# -- per GPU: identity and health (NVML) -------------------------------------------------

@checks("gpus.model")
def test_gpu_model(cluster_spec: Spec, gpu: int, gpu_result: ProbeResult,
                   evidence: Evidence) -> None:
    """The GPU is the promised model and form factor (an H100 PCIe is not an H100 SXM)."""
    promised = MODELS[str(_gpus(cluster_spec).model)]
    rule = _rule(cluster_spec, "model")
    entry = _nvml(evidence, gpu_result, rule)
    name = str(entry.get("name"))
    found = model_of_nvml_name(name)
    shown = f"{name} ({found.key}, {found.form_factor})" if found else f"{name} (unknown model)"
    evidence.check_rule(rule, name in promised.nvml_names, shown, result=gpu_result,
                        method="nvmlDeviceGetName",
                        problem=f"is {shown}, the contract says {promised.key} "
                                f"({promised.form_factor})",
                        raw={"name": name, "board_part": entry.get("board_part")})


@checks("gpus.memory")
def test_gpu_memory(cluster_spec: Spec, gpu: int, gpu_result: ProbeResult,
                    evidence: Evidence) -> None:
    clause = _clause(cluster_spec, "memory")
    entry = _nvml(evidence, gpu_result, clause)
    memory = entry.get("memory")
    if isinstance(memory, dict) and "error" in memory:
        evidence.cannot_measure(clause, str(memory["error"]))
    evidence.check(clause, evidence.figure(clause, memory, "total", "memory"),
                   result=gpu_result,
                   method="nvmlDeviceGetMemoryInfo total", raw=memory)


@checks("gpus.usable_memory")
def test_gpu_memory_usable(cluster_spec: Spec, gpu: int, gpu_result: ProbeResult,
                           gpu_perf_result: ProbeResult | None, evidence: Evidence) -> None:
    """What a job can really allocate (torch, until out of memory), not the datasheet."""
    clause = _clause(cluster_spec, "usable_memory")
    entry = _nvml(evidence, gpu_result, clause)
    assert gpu_perf_result is not None
    section = _perf(evidence, gpu_perf_result, clause, entry, "usable_memory")
    allocated = evidence.figure(clause, section, "allocated_bytes", "usable_memory")
    memory = entry.get("memory")
    total = evidence.figure(clause, memory, "total", "memory") \
        if isinstance(memory, dict) and memory.get("total") else \
        evidence.figure(clause, section, "cuda_total_bytes", "usable_memory")
    if total <= 0 or not 0 <= allocated <= total:  # more than the GPU has: not allocated
        evidence.cannot_measure(clause, f"the node reported usable_memory.allocated_bytes = "
                                f"{allocated:.4g}, outside 0 to the GPU's {total:.4g} bytes "
                                "(bad output of the node)", raw=section, kind="bad_output")
    holders = [p for p in entry.get("processes", []) if isinstance(p, dict)]
    note = ""
    if holders:
        note = "held by other processes: " + ", ".join(
            f"pid {p.get('pid')} ({gib(p['used_bytes']) if p.get('used_bytes') else '?'})"
            for p in holders)
    measured = allocated / total if clause.requirement.bound.dim is Dim.FRACTION else allocated
    evidence.check(clause, measured, result=gpu_perf_result,
                   method=f"{section.get('method')}: {gib(allocated)} of {gib(total)}",
                   raw={**section, "nvml_total_bytes": total, "processes": holders},
                   note=note)


@checks("gpus.ecc_uncorrected")
def test_gpu_ecc(cluster_spec: Spec, gpu: int, gpu_result: ProbeResult,
                 evidence: Evidence) -> None:
    """ECC is on and uncorrectable errors since the driver loaded are within the limit."""
    _ecc(_clause(cluster_spec, "ecc_uncorrected"), "uncorrected", gpu_result, evidence)


@checks("gpus.ecc_corrected")
def test_gpu_ecc_corrected(cluster_spec: Spec, gpu: int, gpu_result: ProbeResult,
                           evidence: Evidence) -> None:
    _ecc(_clause(cluster_spec, "ecc_corrected"), "corrected", gpu_result, evidence)


def _ecc(clause: Clause, kind: str, result: ProbeResult, evidence: Evidence) -> None:
    entry = _nvml(evidence, result, clause)
    ecc = entry.get("ecc")
    if not isinstance(ecc, dict) or not isinstance(ecc.get("volatile"), dict):
        evidence.cannot_measure(clause, f"the node reported ecc = "
                                f"{untrusted_json.found(ecc)}, not NVML's counts (bad output "
                                "of the node)", kind="bad_output")
    mode = ecc.get("mode", {})
    if isinstance(mode, dict) and mode.get("current") == 0:
        evidence.cannot_measure(clause, "ECC is disabled on this GPU, so memory errors are "
                                "neither corrected nor counted", raw=ecc, kind="ecc_disabled")
    count = ecc["volatile"][kind]
    if isinstance(count, dict) and "error" in count:
        evidence.cannot_measure(clause, str(count["error"]), raw=ecc)
    evidence.check(clause, evidence.figure(clause, ecc["volatile"], kind, "ecc.volatile"),
                   result=result, raw=ecc,
                   method=f"nvmlDeviceGetTotalEccErrors({kind.upper()}, VOLATILE): since "
                          f"the driver loaded; lifetime (aggregate) in raw")


@checks("gpus.row_remap")
def test_gpu_row_remap(cluster_spec: Spec, gpu: int, gpu_result: ProbeResult,
                       evidence: Evidence) -> None:
    """No row remap pending (needs a GPU reset) or failed (the GPU needs replacing)."""
    rule = _rule(cluster_spec, "row_remap")
    entry = _nvml(evidence, gpu_result, rule)
    remap = entry["row_remap"]
    if "error" in remap:
        pages = remap.get("retired_pages", {})
        pending = pages.get("pending")
        if not isinstance(pending, int):
            evidence.cannot_measure(rule, f"{remap['error']}; retired pages: {pages}",
                                    raw=remap)
        evidence.check_rule(rule, not pending, f"retired pages pending: {bool(pending)}",
                            result=gpu_result, raw=remap,
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
    evidence.check_rule(rule, not problems, shown, result=gpu_result,
                        problem="; ".join(problems), method="nvmlDeviceGetRemappedRows",
                        raw=remap)


@checks("gpus.pcie")
def test_gpu_pcie(cluster_spec: Spec, gpu: int, gpu_result: ProbeResult,
                  gpu_perf_result: ProbeResult | None, evidence: Evidence) -> None:
    """The PCIe link runs at its maximum generation and width - under load, because an
    idle GPU lowers its link speed to save power."""
    rule = _rule(cluster_spec, "pcie")
    entry = _nvml(evidence, gpu_result, rule)
    pcie = entry["pcie"]
    for key in ("gen", "max_gen", "width", "max_width"):
        if not isinstance(pcie.get(key), int):
            evidence.cannot_measure(rule, f"PCIe {key}: {pcie.get(key)}", raw=pcie)
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
            rule, f"the link is at Gen{gen} x{width} while idle, below Gen{pcie['max_gen']} "
            f"x{pcie['max_width']}; GPUs lower link speed when idle, so it must be read "
            f"under load, which failed: {load_error or 'no load was run'}", raw=pcie)
    shown = f"Gen{gen} x{width} ({when}), maximum Gen{pcie['max_gen']} x{pcie['max_width']}"
    evidence.check_rule(
        rule, at_max, shown,
        result=gpu_perf_result if when == "under load" and gpu_perf_result else gpu_result,
        problem=f"PCIe link at Gen{gen} x{width} {when}, below its maximum Gen"
                f"{pcie['max_gen']} x{pcie['max_width']}",
        method="nvmlDeviceGetCurrPcieLinkGeneration/Width, highest seen while the torch "
               "probe ran" if when == "under load" else "nvmlDeviceGetCurrPcieLinkGeneration"
               "/Width at idle", raw={**pcie, "under_load": load})


def _links_up(up: int, listed: int, expected: int | None) -> str:
    """'16 of 18 links up': out of the links the model has when NVML lists fewer (a link
    not listed is not up), saying how many it lists: '0 of 18 links up (NVML lists 0)'."""
    if expected is not None and listed < expected:
        return f"{up} of {expected} links up (NVML lists {listed})"
    return f"{up} of {listed} links up"


@checks("gpus.nvlink")
def test_gpu_nvlink(cluster_spec: Spec, gpu: int, gpu_result: ProbeResult,
                    evidence: Evidence) -> None:
    """Every link up (a rule), or as many up as the contract says (a count)."""
    gpus = _gpus(cluster_spec)
    promise = gpus.item("nvlink")
    assert promise is not None, "gpus.nvlink is not in the contract"
    entry = _nvml(evidence, gpu_result, promise)
    links = entry["nvlink"]
    down = [i for i, up in enumerate(links.get("links", [])) if not up]
    if isinstance(promise, Clause):
        evidence.check(promise, links["up"], result=gpu_result,
                       method="nvmlDeviceGetNvLinkState per link", raw=links)
        return
    model = MODELS.get(gpus.model or "")
    expected = model.nvlinks if model else None  # links NVML does not list are not up
    problems = []
    if down:
        problems.append(f"{len(down)} of {links['total']} NVLink links down "
                        f"(links {', '.join(map(str, down))})")
    if expected is not None and links["total"] < expected:
        problems.append(f"NVML lists {links['total']} NVLink links, the contract's "
                        f"{model.key if model else ''} has {expected}")
    shown = _links_up(links["up"], links["total"], expected)
    evidence.check_rule(promise, not problems, shown, result=gpu_result,
                        problem="; ".join(problems),
                        method="nvmlDeviceGetNvLinkState per link", raw=links)


@checks("gpus.throttle")
def test_gpu_throttle(cluster_spec: Spec, gpu: int, gpu_result: ProbeResult,
                      gpu_perf_result: ProbeResult | None, evidence: Evidence) -> None:
    """No HW slowdown, thermal or power-brake throttling while all GPUs run matmuls."""
    rule = _rule(cluster_spec, "throttle")
    entry = _nvml(evidence, gpu_result, rule)
    load = _perf(evidence, gpu_perf_result, rule, entry, "load")
    if not load.get("load_samples"):
        evidence.cannot_measure(rule, "no NVML sample was taken under load", raw=load)
    assert gpu_perf_result is not None
    _no_throttling(evidence, rule, gpu_perf_result, load, "under load", "under load",
                   "nvmlDeviceGetCurrentClocksEventReasons sampled every 0.1 s while every "
                   "GPU of the node ran matmuls", load)


def _no_throttling(evidence: Evidence, rule: Rule, result: ProbeResult, load: dict[str, Any],
                   samples: str, during: str, method: str, raw: Any) -> None:
    """No throttling clocks event reason in the NVML samples of `load`."""
    reasons = list(load.get("throttle", []))
    shown = (f"{', '.join(reasons) or 'none'} in {load['load_samples']} samples {samples} "
             f"(max {load.get('temperature_max_c')} C, {load.get('power_max_w')} W, SM clock "
             f"down to {load.get('sm_clock_min_mhz')} MHz)")
    evidence.check_rule(rule, not reasons, shown, result=result,
                        problem=f"throttled {during}: {', '.join(reasons)} (clocks event "
                                f"reasons {load.get('reasons_mask', 0):#x}, SM clock down to "
                                f"{load.get('sm_clock_min_mhz')} MHz, max "
                                f"{load.get('temperature_max_c')} C)",
                        method=method, raw=raw)


@checks("gpus.temperature")
def test_gpu_temperature(cluster_spec: Spec, gpu: int, gpu_result: ProbeResult,
                         gpu_perf_result: ProbeResult | None, evidence: Evidence) -> None:
    """The hottest the GPU got under load (at idle only if no load could be run)."""
    clause = _clause(cluster_spec, "temperature")
    entry = _nvml(evidence, gpu_result, clause)
    load = _perf_section(gpu_perf_result, entry, gpu, "load")
    if isinstance(load, dict) and load.get("temperature_max_c") is not None:
        assert gpu_perf_result is not None
        evidence.check(clause, evidence.figure(clause, load, "temperature_max_c", "load"),
                       result=gpu_perf_result,
                       raw=load,
                       method="nvmlDeviceGetTemperature, highest while all GPUs ran matmuls")
        return
    temp = entry.get("temperature_c")
    if temp is None or isinstance(temp, str):  # NVML's words where it read none
        evidence.cannot_measure(clause, f"{temp}; under load: {load}")
    evidence.check(clause, evidence.figure(clause, entry, "temperature_c", "gpu"),
                   result=gpu_result,
                   method=f"nvmlDeviceGetTemperature at idle (no load: {load})", raw=entry)


@checks("gpus.power_limit")
def test_gpu_power_limit(cluster_spec: Spec, gpu: int, gpu_result: ProbeResult,
                         evidence: Evidence) -> None:
    """The enforced power limit (a GPU capped below its rating runs slower)."""
    clause = _clause(cluster_spec, "power_limit")
    entry = _nvml(evidence, gpu_result, clause)
    limit = entry.get("power_limit_w")
    if limit is None or isinstance(limit, str):  # NVML's words where it read none
        evidence.cannot_measure(clause, str(limit))
    evidence.check(clause, evidence.figure(clause, entry, "power_limit_w", "gpu"),
                   result=gpu_result,
                   method="nvmlDeviceGetEnforcedPowerLimit",
                   raw={k: entry.get(k) for k in ("power_limit_w", "power_default_limit_w",
                                                  "power_w")})


@checks("gpus.xid")
def test_gpu_xid(cluster_spec: Spec, gpu: int, gpu_result: ProbeResult,
                 evidence: Evidence) -> None:
    """No critical XID error: NVML events over a window, and the kernel log if readable."""
    rule = _rule(cluster_spec, "xid")
    entry = _nvml(evidence, gpu_result, rule)
    payload = gpu_result.payload()
    found, unreadable = xids_for(payload, entry)
    xid = payload.get("xid") or {}
    sources = 1 + isinstance(xid.get("kernel_log"), dict)
    if len(unreadable) == sources:
        evidence.cannot_measure(rule, "; ".join(unreadable), raw=xid)
    critical = [x for x in found if x.critical]
    shown = ", ".join(f"XID {x.xid} ({x.source})" for x in found) or "none"
    read = "; ".join(unreadable)
    evidence.check_rule(rule, not critical, shown + (f"; unreadable: {read}" if read else ""),
                        result=gpu_result,
                        problem="critical XID errors: " + ", ".join(
                            f"XID {x.xid} ({x.source})" for x in critical),
                        method="NVML XID events" + (", kernel log" if sources > 1 else ""),
                        raw={"found": [x.__dict__ for x in found], "unreadable": unreadable})


# -- per GPU: measured with torch --------------------------------------------------------

@checks("gpus.matmul")
def test_gpu_matmul(cluster_spec: Spec, gpu: int, dtype: str, gpu_result: ProbeResult,
                    gpu_perf_result: ProbeResult | None, evidence: Evidence) -> None:
    """Achieved matmul TFLOPS, every GPU of the node loaded at once (mamf-style)."""
    clause = dict(_gpus(cluster_spec).matmul)[dtype]
    entry = _nvml(evidence, gpu_result, clause)
    matmul = _perf(evidence, gpu_perf_result, clause, entry, "matmul")
    found = matmul.get(dtype)
    if not isinstance(found, dict) or "error" in found:
        reason = found["error"] if isinstance(found, dict) else f"no {dtype} result"
        evidence.cannot_measure(clause, reason, raw=found)
    assert gpu_perf_result is not None
    tflops = evidence.figure(clause, found, "tflops_median", f"matmul.{dtype}")
    shape = found.get("shape")
    size = "x".join(str(s)[:12] for s in shape[:3]) if isinstance(shape, list) else "?"
    most = finite(found.get("tflops_max"))
    evidence.check(clause, tflops * 1e12, result=gpu_perf_result, raw=found,
                   references=for_gpu(clause.key, entry.get("name")),
                   method=f"{str(found.get('method'))[:200]}; {size} {dtype}, median of "
                          f"{str(found.get('iterations'))[:20]}, max "
                          f"{'?' if most is None else format(most, '.1f')} TFLOPS")


def _test(declaration: Declaration) -> Callable[..., None]:
    """A clause compared with one field of the torch probe's part for this GPU (memory
    bandwidth, host<->device copies)."""
    reads = declaration.reads
    assert reads is not None

    def test(cluster_spec: Spec, gpu: int, gpu_result: ProbeResult,
             gpu_perf_result: ProbeResult | None, evidence: Evidence) -> None:
        clause = _clause(cluster_spec, declaration.key)
        entry = _nvml(evidence, gpu_result, clause)
        part = _perf(evidence, gpu_perf_result, clause, entry, reads.part)
        assert gpu_perf_result is not None
        evidence.check(clause, evidence.figure(clause, part, reads.field, reads.part),
                       result=gpu_perf_result,
                       method=part.get(reads.method_field) or reads.method, raw=part,
                       references=for_gpu(clause.key, entry.get("name")))
    test.__doc__ = _test.__doc__
    return test


globals().update(table_tests("gpus", _test))


@checks("gpus.p2p")
def test_gpu_p2p(cluster_spec: Spec, gpu: int, gpu_result: ProbeResult,
                 gpu_perf_result: ProbeResult | None, evidence: Evidence) -> None:
    """GPU-to-GPU copies with every other GPU of the node (NVLink): the median over its
    pairs, naming the slowest partner."""
    clause = _clause(cluster_spec, "p2p")
    entry = _nvml(evidence, gpu_result, clause)
    assert gpu_perf_result is not None
    payload = _node_payload(evidence, gpu_perf_result, clause)
    section = payload.get("p2p")
    if isinstance(section, dict) and "error" in section:
        evidence.cannot_measure(clause, section["error"], raw=section)
    copies = p2p_for(payload, gpu)
    if copies is None:
        evidence.cannot_measure(clause, f"no GPU-to-GPU copies with gpu{gpu}: torch sees "
                                f"{payload.get('count')} GPU(s) on the node")
    slowest = (f"slowest with gpu{copies.slowest_peer}: "
               f"{copies.slowest_bytes_per_s / 1e9:.1f} GB/s")
    evidence.check(clause, copies.median_bytes_per_s, result=gpu_perf_result, note=slowest,
                   references=for_gpu(clause.key, entry.get("name")),
                   raw={**copies.__dict__, "uuid": entry.get("uuid")},
                   method=f"median over {copies.pairs} copies to and from the other GPUs; "
                          f"{slowest}")


# -- the stress level (-m stress, opt-in): every GPU of a node under bf16 matmuls at once for
# gpus.stress_time, NVML sampled throughout, then the same matmul on the same inputs on every
# GPU, compared across the node's GPUs and its repeats (silent data corruption); a soak
# compares it across rounds too (pytest_cluster/soak/rounds.py) ---------------------------

def _stressed(cluster: Cluster, node: str) -> ProbeResult:
    return gpu_probes.gpu_stress(cluster, node)


@checks("gpus.stress_throttle")
def test_gpu_stress_throttle(cluster_spec: Spec, cluster: Cluster, node: str, gpu: int,
                             gpu_result: ProbeResult, evidence: Evidence) -> None:
    """No HW slowdown, thermal or power-brake throttling all through the stress."""
    rule = _rule(cluster_spec, "stress_throttle")
    entry = _nvml(evidence, gpu_result, rule)
    stressed = _stressed(cluster, node)
    load = _perf(evidence, stressed, rule, entry, "load")
    sustained = _perf(evidence, stressed, rule, entry, "sustained")
    if not load.get("load_samples"):
        evidence.cannot_measure(rule, "no NVML sample was taken during the stress", raw=load)
    _no_throttling(evidence, rule, stressed, load,
                   f"over {sustained.get('seconds', 0):.0f} s at "
                   f"{sustained.get('tflops', 0):.0f} TFLOPS", "during the stress",
                   "bf16 matmuls back to back on every GPU of the node at once; "
                   "nvmlDeviceGetCurrentClocksEventReasons, temperature, power and SM clock "
                   "sampled every 0.1 s", {"load": load, "sustained": sustained})


def _checksums(stressed: ProbeResult, node_gpus: list[dict[str, Any]]) -> Counter[int]:
    """The first checksum of every GPU of the node whose check ran."""
    found: Counter[int] = Counter()
    payload = stressed.payload()
    for nvml in node_gpus:
        entry = perf_gpu(payload, nvml, int(nvml.get("index", -1)))
        sdc = entry.get("sdc") if entry is not None else None
        if isinstance(sdc, dict) and isinstance(sdc.get("checksum"), int):
            found[sdc["checksum"]] += 1
    return found


@checks("gpus.sdc")
def test_gpu_sdc(cluster_spec: Spec, cluster: Cluster, node: str, gpu: int,
                 gpu_result: ProbeResult, evidence: Evidence) -> None:
    """The same bf16 matmul on the same inputs gives this GPU the same result every time,
    and the same as the node's other GPUs (of its model)."""
    rule = _rule(cluster_spec, "sdc")
    entry = _nvml(evidence, gpu_result, rule)
    stressed = _stressed(cluster, node)
    sdc = _perf(evidence, stressed, rule, entry, "sdc")
    same_model = [g for g in gpu_result.payload().get("gpus", [])
                  if isinstance(g, dict) and g.get("name") == entry.get("name")]
    others = _checksums(stressed, same_model)
    mine = sdc.get("checksum")
    majority, count = others.most_common(1)[0] if others else (mine, 0)
    repeats = sdc.get("checksums") or []
    problems = []
    if not sdc.get("consistent", False):
        problems.append(f"{len(set(repeats))} different results over {len(repeats)} repeats "
                        "of the same matmul")
    if len(others) > 1 and (mine != majority or count * 2 <= sum(others.values())):
        problems.append(f"its result {mine:#x} differs from {majority:#x}, which {count} of "
                        f"the node's {sum(others.values())} GPUs give on identical inputs"
                        if mine != majority else
                        f"no result is shared by most of the node's GPUs ({len(others)} "
                        "different ones)")
    shown = (f"checksum {mine:#x}, the same in all {len(repeats)} repeats and on "
             f"{others.get(mine, 0) if isinstance(mine, int) else 0} of "
             f"{sum(others.values())} GPU(s)") if isinstance(mine, int) else "no checksum"
    evidence.check_rule(rule, not problems, shown, result=stressed,
                        problem="silent data corruption: " + "; ".join(problems),
                        method=str(sdc.get("method", "")), raw=sdc)


# -- DCGM's own diagnostic (dcgmi diag -r N -j), per node: r1 and r2 at acceptance, r3 and
# r4 at the stress level (gpus.dcgm_diag's declaration says); measure/dcgm_diag.py
# classifies each result (docs/internals.md, "DCGM's diagnostic") ---------------------------

def _findings(found: tuple[Finding, ...], most: int = 4) -> str:
    shown = "; ".join(f.text() for f in found[:most])
    return shown + (f"; and {len(found) - most} more" if len(found) > most else "")


@checks("gpus.dcgm_diag")
def test_gpu_dcgm_diag(cluster_spec: Spec, cluster: Cluster, node: str,
                       evidence: Evidence) -> None:
    """Every test of DCGM's diagnostic at the contract's level passes on every GPU: a
    hardware finding fails, naming the GPU and the test; a configuration finding, a
    skipped test, the tool's own error is an ERROR; no dcgmi on the node, NOT CHECKED."""
    rule = _rule(cluster_spec, "dcgm_diag")
    result = gpu_probes.dcgm(cluster, node)
    payload = evidence.require(result, rule)
    level = payload.get("level")
    ran = f"dcgmi diag -r {level} -j"
    raw = {k: payload.get(k) for k in ("level", "argv", "exit_code", "seconds",
                                       "stderr_tail", "error", "missing")}
    if payload.get("missing"):
        evidence.cannot_measure(rule, f"cannot measure: {payload.get('error')}", raw=raw,
                                kind="tool_missing")
    if "error" in payload:
        evidence.cannot_measure(rule, f"{ran}: {payload['error']}", raw=raw, kind="dcgm_error")
    found = diagnose(payload.get("report"))
    raw = {**raw, "shape": found.shape, "version": found.version, "tests": found.tests,
           "passed": found.passed, "findings": [f.__dict__ for f in found.findings]}
    method = f"{ran} ({found.shape}{f' {found.version}' if found.version else ''})"
    outcome = found.outcome
    if outcome == "config":
        evidence.cannot_measure(rule, f"{method}: a configuration finding, no hardware "
                                f"verdict: {_findings(found.of('config'))}", raw=raw,
                                kind="dcgm_config")
    if outcome == "error":
        why = (found.bad and f"dcgmi's document: {found.bad}") or (
            found.runtime_error and f"DCGM's runtime error: {found.runtime_error}") or (
            _findings(found.findings) and f"no verdict: {_findings(found.findings)}") or (
            "DCGM reported no test result")
        evidence.cannot_measure(rule, f"{method}: {why}", raw=raw, kind="dcgm_error")
    hardware = found.of("hardware")
    evidence.check_rule(rule, not hardware,
                        f"{found.passed} result(s) passed over {len(found.tests)} test(s): "
                        f"{', '.join(found.tests)}", result=result,
                        problem=f"DCGM's diagnostic failed: {_findings(hardware)}",
                        method=method, raw=raw)
