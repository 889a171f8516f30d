"""--cluster-metrics=FILE: the run in Prometheus' text format, for node_exporter's textfile
collector (written atomically: a scrape never sees half a file), built and written with
prometheus_client.

    pytest_cluster_run_info{cluster,run_id,status,verdict,simulated,tool_version} 1
    pytest_cluster_run_checks{cluster,outcome} N
    pytest_cluster_run_end_timestamp_seconds{cluster} T
    pytest_cluster_node_verdict{cluster,node,verdict} 1        (its verdict; one per node)
    pytest_cluster_node_accepted{cluster,node} 1 or 0
    pytest_cluster_measured{cluster,clause,node,gpu,filesystem,unit,simulated} base units
    pytest_cluster_required{...same} the bound, in base units
    pytest_cluster_margin_ratio{...same} headroom over the bound (-0.125: 12.5 % short)
    pytest_cluster_check_passed{...same} 1 or 0

A soak rewrites it after every round with pytest_cluster_soak_* (availability so far, the
credit owed so far). Units: bytes, bytes_per_second, seconds, flops, ops_per_second,
ratio, count, celsius, watts, events_per_second (the spec's unit says which).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry, Gauge, write_to_textfile

from pytest_cluster.evidence.tally import margin
from pytest_cluster.units import UNITS, Dim

#: The base unit of each dimension, as a label value.
BASE_UNIT = {Dim.SIZE: "bytes", Dim.RATE: "bytes_per_second", Dim.TIME: "seconds",
             Dim.FLOPS: "flops", Dim.OPS: "ops_per_second", Dim.FRACTION: "ratio",
             Dim.COUNT: "count", Dim.TEMPERATURE: "celsius", Dim.POWER: "watts",
             Dim.EVENTS: "events_per_second"}
_CASE = ("cluster", "clause", "node", "gpu", "filesystem", "unit", "simulated")


def base_unit(unit: str) -> str:
    """The base unit of a spec unit ('GB/s' -> bytes_per_second); a bare number: count."""
    found = UNITS.get(unit)
    return BASE_UNIT[found[0]] if found is not None else "count"


class Metrics:
    """The run's metrics, set as its evidence comes (a result line, a node's verdict, the
    end record, a soak's progress), written whole when asked."""

    def __init__(self, cluster: str, run_id: str) -> None:
        self.cluster, self.run_id = cluster, run_id
        self.registry = found = CollectorRegistry()
        self.info = Gauge("pytest_cluster_run_info", "the run: its id, status and the "
                          "cluster's verdict", ("cluster", "run_id", "status", "verdict",
                                                "simulated", "tool_version"), registry=found)
        self.checks = Gauge("pytest_cluster_run_checks", "the run's checks by outcome",
                            ("cluster", "outcome"), registry=found)
        self.ended_at = Gauge("pytest_cluster_run_end_timestamp_seconds", "when the run "
                              "ended", ("cluster",), registry=found)
        self.node_verdict = Gauge("pytest_cluster_node_verdict", "each node's verdict (1 "
                                  "for its own)", ("cluster", "node", "verdict"),
                                  registry=found)
        self.accepted = Gauge("pytest_cluster_node_accepted", "1 when the node was "
                              "accepted", ("cluster", "node"), registry=found)
        self.measured = Gauge("pytest_cluster_measured", "a case's measured value, in base "
                              "units", _CASE, registry=found)
        self.required = Gauge("pytest_cluster_required", "a case's bound, in base units",
                              _CASE, registry=found)
        self.margin = Gauge("pytest_cluster_margin_ratio", "headroom over the bound, as a "
                            "share of it (negative: short of it)", _CASE, registry=found)
        self.passed = Gauge("pytest_cluster_check_passed", "1 when the case passed", _CASE,
                            registry=found)
        self.rounds = Gauge("pytest_cluster_soak_rounds", "a soak's rounds finished so far",
                            ("cluster",), registry=found)
        self.availability = Gauge("pytest_cluster_soak_availability_ratio", "each node's "
                                  "availability over a soak so far", ("cluster", "node"),
                                  registry=found)
        self.credit = Gauge("pytest_cluster_soak_credit", "the SLA credit owed so far, in "
                            "its currency", ("cluster", "currency"), registry=found)

    def result(self, record: Mapping[str, Any]) -> None:
        """A result line: its figures when it has a number and a bound."""
        value, bound = record.get("measured_base"), record.get("required_base")
        if record.get("type") != "result" or not isinstance(value, (int, float)) \
                or not isinstance(bound, (int, float)) or isinstance(value, bool) \
                or isinstance(bound, bool):
            return
        labels = (self.cluster, str(record.get("spec_key") or record.get("clause") or ""),
                  str(record.get("node") or ""), _text(record.get("gpu")),
                  _text(record.get("filesystem")), base_unit(str(record.get("unit") or "")),
                  str(bool(record.get("simulated"))).lower())
        self.measured.labels(*labels).set(float(value))
        self.required.labels(*labels).set(float(bound))
        share = margin(record)
        if share is not None:
            self.margin.labels(*labels).set(share / 100)
        self.passed.labels(*labels).set(1 if record.get("outcome") == "passed" else 0)

    def verdict(self, verdict: Mapping[str, Any]) -> None:
        node, said = str(verdict.get("node")), str(verdict.get("verdict"))
        self.node_verdict.labels(self.cluster, node, said).set(1)
        self.accepted.labels(self.cluster, node).set(1 if said == "ACCEPTED" else 0)

    def ended(self, end: Mapping[str, Any]) -> None:
        """The end record: the run's status, the cluster's verdict, the counts."""
        self.info.labels(self.cluster, self.run_id, str(end.get("status", "")),
                         str(end.get("verdict", "")), str(bool(end.get("simulated"))).lower(),
                         str(end.get("tool_version", ""))).set(1)
        for outcome, count in (end.get("counts") or {}).items():
            self.checks.labels(self.cluster, str(outcome)).set(float(count))
        self.ended_at.labels(self.cluster).set(float(end.get("ended_at") or 0.0))

    def soak(self, rounds: int, availability: Mapping[str, float], credit: str,
             currency: str) -> None:
        """A soak's figures so far: rounds, each node's availability, the credit owed."""
        self.rounds.labels(self.cluster).set(rounds)
        for node, share in availability.items():
            self.availability.labels(self.cluster, node).set(share)
        self.credit.labels(self.cluster, currency).set(float(credit))

    def write(self, path: Path) -> None:
        """Write atomically (a temporary file renamed over it), as the textfile collector
        needs: a scrape reads the old file or the new, never half of one."""
        write_to_textfile(str(path), self.registry)


def _text(value: object) -> str:
    return "" if value is None else str(value)
