"""measure/dcgm_diag.py: DCGM's diagnostic document read in both shapes and classified; the
fixtures are DCGM's published output written down (dcgm_fixtures/README.md cites each)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_cluster.measure.dcgm_diag import CONFIG_IDS, LAST_ID, diagnose, kind_of

FIXTURES = Path(__file__).parent / "dcgm_fixtures"


def _load(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


#: Each fixture, the outcome it must give, and the findings' (kind, test, GPU) it holds.
EXPECTED = {
    "v3_r3_skipped.json": ("error", "DCGM 3.x", {("not_run", "PCIe", 0),
                                                 ("not_run", "GPU Memory", 0)}),
    "v3_r2_pass.json": ("pass", "DCGM 3.x", set()),
    "v3_r2_memory_fail.json": ("hardware", "DCGM 3.x", {("hardware", "GPU Memory", 1)}),
    "v4_thermal_fail.json": ("hardware", "DCGM 4.x", {("hardware", "targeted_stress", 0)}),
    "v4_persistence_mode.json": ("config", "DCGM 4.x",
                                 {("config", "software", g) for g in range(8)}),
    "v4_memory_alloc_pass.json": ("config", "DCGM 4.x", {("config", "memory", 0)}),
    "v4_nvbandwidth_fail.json": ("error", "DCGM 4.x", {("distrusted", "nvbandwidth", 0)}),
}


def test_every_fixture_is_expected_and_cited() -> None:
    files = {p.name for p in FIXTURES.glob("*.json")}
    assert files == set(EXPECTED)
    readme = (FIXTURES / "README.md").read_text(encoding="utf-8")
    assert all(f"`{name}`" in readme for name in files)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_published_shape_is_read_and_classified(name: str) -> None:
    outcome, shape, findings = EXPECTED[name]
    found = diagnose(_load(name))
    assert (found.outcome, found.shape, found.bad) == (outcome, shape, "")
    assert {(f.kind, f.test, f.gpu) for f in found.findings} >= findings
    assert {f.kind for f in found.findings} == {k for k, _, _ in findings}


def test_a_hardware_failure_names_the_gpu_its_serial_and_the_test() -> None:
    for name, serial in (("v4_thermal_fail.json", "1654922003333"),
                         ("v3_r2_memory_fail.json", "1654922002222")):
        (finding,) = diagnose(_load(name)).of("hardware")
        assert finding.serial == serial
        text = finding.text()
        assert f"GPU {finding.gpu} (serial {serial})" in text and finding.test in text


def test_persistence_mode_is_a_configuration_finding_in_either_shape() -> None:
    """Error id 29 (DCGM_FR_PERSISTENCE_MODE): config with its 4.x category and severity,
    and by its id alone in 3.x, which writes neither."""
    assert kind_of(29, 8, 5) == kind_of(29, None, None) == "config"
    assert 29 in CONFIG_IDS
    assert kind_of(58, None, None) == kind_of(42, 9, 1) == "hardware"
    assert kind_of(0, None, None) == kind_of(LAST_ID + 1, None, None) == "config"


def test_a_hardware_finding_outweighs_a_configuration_one() -> None:
    document = _load("v4_persistence_mode.json")
    document["DCGM Diagnostic"]["test_categories"] += _load("v4_thermal_fail.json")[
        "DCGM Diagnostic"]["test_categories"]
    assert diagnose(document).outcome == "hardware"


@pytest.mark.parametrize("status", ["Skip", "Not Run", "Warn", "Running"])
def test_a_test_that_did_not_pass_and_found_nothing_is_no_pass(status: str) -> None:
    document = _load("v3_r2_pass.json")
    document["DCGM GPU Diagnostic"]["test_categories"][2]["tests"][0]["results"][1][
        "status"] = status
    found = diagnose(document)
    assert found.outcome == "error"
    assert [(f.kind, f.gpu, f.status) for f in found.findings] == [("not_run", 1, status)]


def test_a_fail_without_any_finding_stands_as_dcgm_said() -> None:
    document = _load("v3_r2_pass.json")
    document["DCGM GPU Diagnostic"]["test_categories"][1]["tests"][0]["results"][0][
        "status"] = "Fail"
    assert [(f.kind, f.test, f.gpu) for f in diagnose(document).findings] == [
        ("hardware", "PCIe", 0)]


def test_a_runtime_error_or_no_result_is_no_verdict() -> None:
    assert diagnose({"DCGM Diagnostic": {"runtime_error": "Unable to start the NVVS",
                                         "test_categories": []}}).outcome == "error"
    assert diagnose({"DCGM Diagnostic": {"test_categories": []}}).outcome == "error"


def _deep(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


@pytest.mark.parametrize(("document", "said"), [
    (None, "the report is null"),
    ([1, 2], "the report is a list of 2 item(s)"),
    ({"something": 1}, "no 'DCGM GPU Diagnostic' or 'DCGM Diagnostic'"),
    ({"DCGM Diagnostic": "x"}, "'DCGM Diagnostic' is 'x', not a map"),
    ({"DCGM Diagnostic": {"test_categories": {"a": 1}}}, "test_categories is a mapping"),
    ({"DCGM Diagnostic": {"test_categories": [{"tests": [{"name": 5}]}]}},
     "test_categories[0].tests[0].name is 5"),
    ({"DCGM Diagnostic": {"test_categories": [{"tests": [{"name": "memory", "results": [
        {"entity_id": float("nan"), "status": "Fail"}]}]}]}},
     "results[0].entity_id is nan, not a whole number"),
    ({"DCGM Diagnostic": {"test_categories": [{"tests": [{"name": "memory", "results": [
        {"entity_id": 0, "status": ["Pass"]}]}]}]}}, "status is a list of 1 item(s)"),
    ({"DCGM Diagnostic": {"test_categories": [{"tests": [{"name": "memory", "results": [
        {"entity_id": 0, "status": "Fail", "warnings": [{"error_id": "29x"}]}]}]}]}},
     "warnings[0].error_id is '29x'"),
    ({"DCGM Diagnostic": {"test_categories": [{"tests": [{"name": "m", "results": [
        {"entity_id": 0, "status": "Pass"}] * 5000}]}]}}, "more than 4096"),
    ({"DCGM Diagnostic": {"test_categories": [{"tests": [{"name": "m", "results": [
        _deep(500)]}]}]}}, "results[0] is a list of 1 item(s), not a map"),
])
def test_a_hostile_document_is_said_never_a_pass_nor_a_traceback(document: Any,
                                                                  said: str) -> None:
    found = diagnose(document)
    assert found.outcome == "error"
    assert said in found.bad
