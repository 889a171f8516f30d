"""Evidence of one acceptance test: measured vs required, recorded, then asserted.

Everything is recorded as the test's `user_properties` (so JUnit `<properties>` carry it
and pytest-xdist ships it to the controller, which writes results.jsonl and the HTML).
"""

from __future__ import annotations

import json
from typing import Any, NoReturn

import pytest

from pytest_cluster.launchers.base import ProbeResult
from pytest_cluster.requirement import Verdict
from pytest_cluster.spec.model import Clause, VersionClause
from pytest_cluster.units import UNITS

#: Property names every acceptance test may record (in this order in JUnit).
PROPERTIES = ("node", "filesystem", "spec_key", "spec_line", "requirement", "measured",
              "required",
              "comparison", "unit", "measured_base", "required_base", "simulated",
              "method", "error_kind", "probe_run", "raw")


class Evidence:
    """Bound to one test item: `check()` records the evidence and fails with the verdict."""

    def __init__(self, item: pytest.Item) -> None:
        self.item = item

    def record(self, **values: Any) -> None:
        for name, value in values.items():
            if value is not None:
                text = json.dumps(value, sort_keys=True, default=str) if name == "raw" else value
                self.item.user_properties.append((name, text))

    def _where(self, node: str, filesystem: str | None) -> str:
        return f"{node} {filesystem}" if filesystem else node

    def require(self, result: ProbeResult, clause: Clause | VersionClause,
                filesystem: str | None = None) -> dict[str, Any]:
        """The probe's payload, or fail this test with the probe's error (kind, stderr)."""
        if result.ok:
            return result.payload()
        self.record(node=result.node, filesystem=filesystem, spec_key=clause.key,
                    spec_line=clause.line, requirement=clause.requirement.text,
                    error_kind=result.error.value if result.error else "failed",
                    simulated=result.simulated,
                    raw={"message": result.message, "exit_code": result.exit_code,
                         "stderr_tail": result.stderr_tail, "duration_s": result.duration_s})
        pytest.fail(result.describe(), pytrace=False)

    def cannot_measure(self, node: str, clause: Clause | VersionClause, reason: str,
                       filesystem: str | None = None, raw: Any = None) -> NoReturn:
        """The probe ran but could not measure this clause: fail, saying why."""
        self.record(node=node, filesystem=filesystem, spec_key=clause.key,
                    spec_line=clause.line, requirement=clause.requirement.text,
                    error_kind="cannot_measure", raw=raw)
        name = clause.key.rsplit(".", 1)[-1]
        pytest.fail(f"{self._where(node, filesystem)} {name}: cannot measure: {reason}",
                    pytrace=False)

    def check(self, clause: Clause, measured: float, *, node: str, result: ProbeResult,
              filesystem: str | None = None, method: str | None = None,
              raw: Any = None) -> None:
        """Record measured vs required for `clause` and fail unless it holds."""
        req = clause.requirement
        unit_factor = _factor(req.unit)
        self.record(node=node, filesystem=filesystem, spec_key=clause.key,
                    spec_line=clause.line, requirement=req.text,
                    measured=measured / unit_factor,
                    required=req.bound.value / unit_factor, comparison=req.op,
                    unit=req.unit, measured_base=measured, required_base=req.bound.value,
                    simulated=result.simulated, method=method, probe_run=result.run_id,
                    raw=raw)
        name = clause.key.rsplit(".", 1)[-1]
        verdict = req.check(measured, f"{self._where(node, filesystem)} {name}")
        self._assert(verdict)

    def check_version(self, clause: VersionClause, found: str | None, *, node: str,
                      result: ProbeResult, source: str | None) -> None:
        req = clause.requirement
        self.record(node=node, spec_key=clause.key, spec_line=clause.line, measured=found,
                    requirement=req.text, comparison=req.op, simulated=result.simulated,
                    method=source, probe_run=result.run_id)
        self._assert(req.check(found, f"{node} {clause.name}"))

    def _assert(self, verdict: Verdict) -> None:
        self.record(verdict="pass" if verdict.ok else "fail")
        if not verdict.ok:
            pytest.fail(verdict.message, pytrace=False)


def _factor(unit: str) -> float:
    return UNITS[unit][1] if unit else 1.0
