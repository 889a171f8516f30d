"""probes/gpu_perf/sampler.py: NVML sampled in the parent while the GPUs' processes run,
against a stub NVML whose GPUs say what each test sets."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from pytest_cluster.probes._lib.nvml import THROTTLE_BITS
from pytest_cluster.probes.gpu_perf import sampler
from pytest_cluster.probes.gpu_perf.payload import Load


class NVMLError(Exception):
    pass


class Nvml:
    """Two GPUs; `readings[uuid][what]` is the list of what each call answers (an
    exception is raised), the last one repeated."""

    NVMLError = NVMLError
    NVML_TEMPERATURE_GPU = 0
    NVML_CLOCK_SM = 1

    def __init__(self, readings: dict[str, dict[str, list[Any]]]) -> None:
        self.readings = readings
        self.uuids = list(readings)
        self.shut = False

    def nvmlInit(self) -> None:
        pass

    def nvmlShutdown(self) -> None:
        self.shut = True

    def nvmlDeviceGetCount(self) -> int:
        return len(self.uuids)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> str:
        return self.uuids[index]

    def nvmlDeviceGetUUID(self, handle: str) -> bytes:
        return handle.encode()  # older bindings: bytes

    def _answer(self, handle: str, what: str) -> Any:
        answers = self.readings[handle][what]
        value = answers.pop(0) if len(answers) > 1 else answers[0]
        if isinstance(value, Exception):
            raise value
        return value

    def nvmlDeviceGetCurrPcieLinkGeneration(self, handle: str) -> Any:
        return self._answer(handle, "gen")

    def nvmlDeviceGetCurrPcieLinkWidth(self, handle: str) -> Any:
        return self._answer(handle, "width")

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle: str) -> Any:
        return self._answer(handle, "reasons")

    def nvmlDeviceGetTemperature(self, handle: str, sensor: int) -> Any:
        return self._answer(handle, "temperature")

    def nvmlDeviceGetPowerUsage(self, handle: str) -> Any:
        return self._answer(handle, "power_mw")

    def nvmlDeviceGetClockInfo(self, handle: str, clock: int) -> Any:
        return self._answer(handle, "sm_clock")


def installed(monkeypatch: pytest.MonkeyPatch, nvml: Any) -> sampler.Sampler:
    monkeypatch.setitem(sys.modules, "pynvml", nvml)
    return sampler.Sampler()


def test_the_extremes_seen_under_load_are_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    nvml = Nvml({"GPU-A": {"gen": [1, 5, 4], "width": [16], "reasons": [0x1, 0x20, 0x8],
                           "temperature": [60, 81, 70], "power_mw": [300_500, 690_000],
                           "sm_clock": [1980, 1500, 1755]},
                 "GPU-B": {"gen": [NVMLError("Not Supported")], "width": [8],
                           "reasons": [0], "temperature": [NVMLError("Unknown")],
                           "power_mw": [100_000], "sm_clock": [1980]}})
    found = installed(monkeypatch, nvml)
    assert found.error == ""
    found.sample(under_load=False)  # the first readings: PCIe only
    for _ in range(3):
        found.sample(under_load=True)
    results = found.results()
    assert nvml.shut
    throttled = [name for name, bit in THROTTLE_BITS.items() if bit & (0x20 | 0x8)]
    assert results["GPU-A"] == {
        "nvml_index": 0, "samples": 4, "load_samples": 3, "reasons_mask": 0x1 | 0x20 | 0x8,
        "throttle": throttled, "temperature_max_c": 81, "power_max_w": 690.0,
        "sm_clock_min_mhz": 1500, "pcie_gen_max": 5, "pcie_width_max": 16}
    assert results["GPU-B"] == {
        "nvml_index": 1, "samples": 4, "load_samples": 3, "reasons_mask": 0,
        "throttle": [], "temperature_max_c": None, "power_max_w": 100.0,
        # the link's generation and width are read together: one that fails leaves both
        "sm_clock_min_mhz": 1980, "pcie_gen_max": None, "pcie_width_max": None}


def test_without_nvml_nothing_is_sampled_and_it_says_why(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)
    found = sampler.Sampler()
    found.sample(under_load=True)
    assert found.results() == {}
    assert found.error == ("NVML sampling unavailable: ModuleNotFoundError: import of pynvml "
                           "halted; None in sys.modules")


def test_an_nvml_that_fails_to_start_is_said(monkeypatch: pytest.MonkeyPatch) -> None:
    nvml = Nvml({})

    def fails() -> None:
        raise NVMLError("Driver Not Loaded")

    nvml.nvmlInit = fails  # type: ignore[method-assign]
    found = installed(monkeypatch, nvml)
    assert found.error == "NVML sampling unavailable: NVMLError: Driver Not Loaded"
    assert found.results() == {}


def test_the_load_record_has_every_key_of_its_type_but_the_error(
        monkeypatch: pytest.MonkeyPatch) -> None:
    nvml = Nvml({"GPU-A": {what: [1] for what in ("gen", "width", "reasons", "temperature",
                                                   "power_mw", "sm_clock")}})
    assert set(installed(monkeypatch, nvml).results()["GPU-A"]) == (
        Load.__required_keys__ | Load.__optional_keys__) - {"error"}


def test_the_bigger_of_two_readings_none_being_no_reading() -> None:
    assert sampler.bigger(None, 3) == 3
    assert sampler.bigger(5, 3) == 5
    assert sampler.bigger(2.5, 3) == 3


def test_older_bindings_name_the_clocks_reasons_throttle_reasons() -> None:
    class Old:
        def nvmlDeviceGetCurrentClocksThrottleReasons(self, handle: str) -> int:
            return 0x40

    class New(Old):
        def nvmlDeviceGetCurrentClocksEventReasons(self, handle: str) -> int:
            return 0x80

    assert sampler.clocks_reasons(Old(), "h") == 0x40
    assert sampler.clocks_reasons(New(), "h") == 0x80


def test_nvmls_and_torchs_uuids_are_the_same_bare() -> None:
    assert sampler.bare_uuid("GPU-1A2B-c3") == sampler.bare_uuid("1a2b-C3") == "1a2b-c3"
