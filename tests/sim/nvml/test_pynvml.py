"""sim/nvml/pynvml.py: the simulated NVML answers every call the probes make, with the real
binding's names, constants and errors."""

from __future__ import annotations

import ast
import importlib
import json
import sys
from types import ModuleType

import pytest

from pytest_cluster.launchers.sim import SIM_NVML_DIR
from pytest_cluster.probes import probe_files
from pytest_cluster.sim.cluster import describe_node
from tests.sim.test_cluster import SIM


def _nvml_names(*sources: str) -> set[str]:
    """Every `nvml.X` / `pynvml.X` the probe's modules use."""
    names = set()
    for node in (node for source in sources for node in ast.walk(ast.parse(source))):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in ("nvml", "pynvml")):
            names.add(node.attr)
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute)
                and node.value.attr == "nvml"):
            names.add(node.attr)
    return names


def simulated_pynvml() -> ModuleType:
    sys.path.insert(0, str(SIM_NVML_DIR))
    try:
        spec = importlib.util.spec_from_file_location("sim_pynvml", SIM_NVML_DIR / "pynvml.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["sim_pynvml"] = module  # dataclasses look their module up
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(SIM_NVML_DIR))


@pytest.mark.parametrize("probe", ["gpu", "gpu_perf"])
def test_simulated_nvml_answers_every_call_the_probes_make(probe: str) -> None:
    used = _nvml_names(*probe_files(probe).values()) - {"NVMLError", "SIMULATED", "__file__"}
    assert {"nvmlInit", "nvmlDeviceGetName"} <= used or probe == "gpu_perf"
    fake = simulated_pynvml()
    assert sorted(name for name in used if not hasattr(fake, name)) == []


def test_simulated_nvml_matches_the_real_binding() -> None:
    """Names and constants the probes use exist in nvidia-ml-py with the same values."""
    real = pytest.importorskip("pynvml")
    if getattr(real, "SIMULATED", False):
        pytest.fail("the simulated pynvml shadows the real one on sys.path")
    fake = simulated_pynvml()
    used = _nvml_names(*probe_files("gpu").values(), *probe_files("gpu_perf").values()) - {
        "SIMULATED", "__file__"}
    assert sorted(name for name in used if not hasattr(real, name)) == []
    for name in dir(fake):
        if name.startswith(("NVML_", "nvmlClocksEventReason", "nvmlEventType", "nvmlMemory_v")):
            assert getattr(real, name) == getattr(fake, name), name
    assert real.NVMLError_LibraryNotFound(12).value == fake.NVMLError_LibraryNotFound().value
    assert issubclass(fake.NVMLError_Timeout, fake.NVMLError)


def test_simulated_nvml_errors_like_the_real_one(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = simulated_pynvml()
    monkeypatch.delenv("PYTEST_CLUSTER_SIM_NODE", raising=False)
    with pytest.raises(fake.NVMLError) as info:
        fake.nvmlInit()
    assert str(info.value) == "NVML Shared Library Not Found"
    monkeypatch.setenv("PYTEST_CLUSTER_SIM_NODE", json.dumps(describe_node(SIM, "n1")))
    fake.nvmlInit()
    assert fake.nvmlDeviceGetCount() == 7
    with pytest.raises(fake.NVMLError_InvalidArgument):
        fake.nvmlDeviceGetHandleByIndex(7)
    handle = fake.nvmlDeviceGetHandleByIndex(0)
    with pytest.raises(fake.NVMLError_NotSupported):
        fake.nvmlDeviceGetClockInfo(handle, 0)  # only the SM clock is simulated
    assert fake.nvmlDeviceGetCurrentClocksEventReasons(handle) == 0x1
    fake.simulate_load(True)
    assert fake.nvmlDeviceGetCurrPcieLinkGeneration(handle) == 5
    fake.simulate_load(False)
    fake.nvmlShutdown()
