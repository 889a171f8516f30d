"""What a simulated node's DCGM probe answers: `dcgmi diag -r N -j`'s document in DCGM
4.x's shape or 3.x's (the sim's `dcgm: 4 | 3 | none`), every test of the level passing on
every GPU but where a fault says otherwise: `dcgm_fail: memory` on a GPU (a hardware
finding in that test, where the level runs it), `dcgm_config: persistence_mode` on a node
(error id 29 on every GPU). No dcgmi (`dcgm: none`): the probe's own answer for it.

The shapes follow DCGM's published output (docs/internals.md, "DCGM's diagnostic", cites
each); the probe's payload is probes/dcgm.py's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, TypedDict

from pytest_cluster.sim.cluster import describe_gpu, faults_on, gpu_count, merged

if TYPE_CHECKING:
    from pytest_cluster.contract.sections.sim_records import SimSpec
    from pytest_cluster.probes.dcgm import DcgmData

#: Each test (4.x's name): its category, 3.x's name, the level DCGM first runs it at
#: (DCGM user guide, "Run Levels"), and the hardware finding a failure of it carries here
#: (dcgm_errors.h: its error id, category, severity ISOLATE = 2, and words).
TESTS: dict[str, tuple[str, str, int, tuple[int, int, str]]] = {
    "software": ("Deployment", "Inforom", 1, (9, 15, "A corrupt InfoROM has been detected")),
    "pcie": ("Integration", "PCIe", 2, (98, 13, "PCIe test caught correctable errors")),
    "memory": ("Hardware", "GPU Memory", 2, (58, 10, "Memory error detected")),
    "diagnostic": ("Hardware", "Diagnostic", 3, (110, 1, "GPU GFLOPs threshold violated")),
    "targeted_stress": ("Stress", "Targeted Stress", 3, (50, 1, "Stress level too low")),
    "targeted_power": ("Stress", "Targeted Power", 3, (63, 14, "Cannot hit the target "
                                                             "power draw")),
    "memory_bandwidth": ("Stress", "Memory Bandwidth", 3, (62, 10, "Memory bandwidth is "
                                                                  "too low")),
    "memtest": ("Hardware", "Memtest", 4, (58, 10, "Memory error detected")),
    "pulse_test": ("Stress", "Pulse Test", 4, (63, 14, "Cannot hit the target power draw")),
}
#: The configuration findings (dcgm_errors.h: DCGM_FR_PERSISTENCE_MODE = 29; category 8
#: and severity CONFIG = 5, as DCGM 4.x writes it in a published capture: docs/internals.md)
CONFIGS = {"persistence_mode": (29, 8, 5, "Persistence mode for GPU {gpu} is disabled. "
                                        "Enable persistence mode by running "
                                        "\"nvidia-smi -i <gpuId> -pm 1 \" as root.")}
ISOLATE = 2


class _Warning(TypedDict):
    """A finding as DCGM 4.x writes it in a result's `warnings`."""

    error_category: int
    error_id: int
    error_severity: int
    warning: str


def _warnings(sim: SimSpec, node: str, test: str, gpu: int) -> list[_Warning]:
    """What DCGM finds on one GPU in one test: its GPU's fault, its node's setup."""
    found: list[_Warning] = []
    if merged(sim, node, gpu).dcgm_fail == test:
        error, category, words = TESTS[test][3]
        found.append({"error_category": category, "error_id": error,
                      "error_severity": ISOLATE, "warning": f"{words} on GPU {gpu}."})
    config = next((f.dcgm_config for f in faults_on(sim, node) if f.dcgm_config), None)
    if config is not None and test == "software":
        error, category, severity, words = CONFIGS[config]
        found.append({"error_category": category, "error_id": error,
                      "error_severity": severity, "warning": words.format(gpu=gpu)})
    return found


def _status(found: list[_Warning]) -> str:
    return "Fail" if found else "Pass"


def _v4(sim: SimSpec, node: str, level: int, gpus: range) -> dict[str, object]:
    categories: dict[str, list[object]] = {}
    for test, (category, _, first, _) in TESTS.items():
        if first <= level:
            found = [_warnings(sim, node, test, gpu) for gpu in gpus]
            results = [{"entity_group": "GPU", "entity_group_id": 1, "entity_id": gpu,
                        "status": _status(w), **({"warnings": w} if w else {})}
                       for gpu, w in zip(gpus, found, strict=True)]
            categories.setdefault(category, []).append(
                {"name": test, "results": results,
                 "test_summary": {"status": _status([x for w in found for x in w])}})
    return {"DCGM Diagnostic": {"test_categories": [{"category": c, "tests": t}
                                                    for c, t in categories.items()]},
            "entity_groups": [{"entity_group": "GPU", "entity_group_id": 1, "entities": [
                {"entity_id": gpu, "serial_num": describe_gpu(sim, node, gpu)["serial"]}
                for gpu in gpus]}],
            "metadata": {"version": "4.2.3", "Driver Version Detected": "550.54.15"}}


def _v3(sim: SimSpec, node: str, level: int, gpus: range) -> dict[str, object]:
    """3.x's shape: its test names, GPU ids as text, warnings with an id and words only;
    the software test's persistence check is a test of its own there."""
    categories: dict[str, list[object]] = {}
    for test, (category, name, first, _) in TESTS.items():
        if first > level:
            continue
        for shown in [name] if test != "software" else ["Persistence Mode", name]:
            results = []
            for gpu in gpus:
                mine = [{"warning": w["warning"], "error_id": w["error_id"]}
                        for w in _warnings(sim, node, test, gpu)
                        if (w["error_id"] == CONFIGS["persistence_mode"][0])
                        == (shown == "Persistence Mode")]
                results.append({"gpu_id": str(gpu), "status": "Fail" if mine else "Pass",
                                **({"warnings": mine} if mine else {})})
            categories.setdefault(category, []).append({"name": shown, "results": results})
    return {"DCGM GPU Diagnostic": {
        "test_categories": [{"category": c, "tests": t} for c, t in categories.items()],
        "GPU Device Serials": {str(gpu): describe_gpu(sim, node, gpu)["serial"]
                               for gpu in gpus},
        "version": "3.3.9"}}


def dcgm_payload(sim: SimSpec, node: str, args: Sequence[str]) -> DcgmData:
    """The DCGM probe's payload on a simulated node, for its arguments (--level N)."""
    given = dict(zip(args[::2], args[1::2], strict=False))
    level = int(given.get("--level", "1"))
    if sim.dcgm is None:
        return {"level": level, "missing": "dcgmi",
                "error": "dcgmi not installed (DCGM, datacenter-gpu-manager): not on PATH"}
    gpus = range(gpu_count(sim, node))
    report = (_v4 if sim.dcgm == 4 else _v3)(sim, node, level, gpus)
    failed = any(_warnings(sim, node, test, gpu) for test, (_, _, first, _) in TESTS.items()
                 if first <= level for gpu in gpus)
    return {"level": level, "argv": ["dcgmi", "diag", "-r", str(level), "-j"],
            "exit_code": 226 if failed else 0, "seconds": 0.0, "stderr_tail": "",
            "report": report}
