"""--cluster-metrics=FILE: the run in Prometheus' text format, for node_exporter's textfile
collector (written atomically: a scrape never sees half a file), built and written with
prometheus_client. Names follow Prometheus' conventions: base units in the name
(`_bytes_per_second`, `_seconds`), `_ratio` for shares, `_info` for text.

The run and its nodes:

    pytest_cluster_run_info{cluster,run_id,level,status,verdict,outcome,simulated,tool_version} 1
    pytest_cluster_run_checks{cluster,level,outcome} N
    pytest_cluster_run_derived_checks{cluster,level,outcome} N   (a soak's, a baseline's)
    pytest_cluster_run_end_timestamp_seconds{cluster,level} T
    pytest_cluster_node_verdict{cluster,level,node,verdict,outcome} 1  (one per node)
    pytest_cluster_node_accepted{cluster,level,node} 1 or 0
    pytest_cluster_node_fault{cluster,level,node,code,first} 1  one per fault code of the
                                                 node's failures (verdict.json `codes`;
                                                 a NOT CHECKED node's: what kept it
                                                 undecided, never drained;
                                                 first="true": its first failure's, the
                                                 code its drain reason starts with)

One sample per case that the run judged (passed, failed or could not start), labelled
with what tells the cases apart - CASE_LABELS: the clause, node, GPU, filesystem,
collective, payload, node count and rail, and the run's level:

    pytest_cluster_check_passed{CASE_LABELS} 1 or 0     (every case, rules included)
    pytest_cluster_check_judged{CASE_LABELS} 1 or 0     0: it could not be judged (an error
                                                         kind that blames no node:
                                                         blame.judged), so its 0 passed
                                                         is no fault of the node
    pytest_cluster_check_measured_<unit>{CASE_LABELS}   the measured value, in base units
    pytest_cluster_check_required_<unit>{CASE_LABELS}   the bound
    pytest_cluster_check_margin_ratio{CASE_LABELS}      headroom over the bound (-0.125:
                                                         12.5 % short of it)

and one sample per clause and node, the worst of its cases (a failed one first, one that
judged the node before one that could not, then the least margin) - CLAUSE_LABELS:
cluster, level, clause, node, simulated. A check of several nodes that names culprits
(blame.culprits) counts as failed for each of them too:

    pytest_cluster_clause_passed{CLAUSE_LABELS} 1 when every case passed
    pytest_cluster_clause_judged{CLAUSE_LABELS} 0 when its cases failed only where they
                                                could not be judged: the verdict does not
                                                blame the node for the clause
    pytest_cluster_clause_measured_<unit>, _required_<unit>, _margin_ratio  (the worst case)

<unit> is the base unit of the clause's dimension (BASE_UNIT; a count has none). The
cardinality: one check sample per contract case (the run's plan, at most the cases it
collected), one clause sample per clause and node, one fault sample per node and code of
its failures (the codes are declared: docs/faults.md); rounds of a soak never become series
(a soak rewrites the file after every round with pytest_cluster_soak_*: rounds finished,
availability so far, the credit owed so far).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Gauge, write_to_textfile

from pytest_cluster.evidence.record.lines import is_result
from pytest_cluster.evidence.record.summary import margin
from pytest_cluster.evidence.sinks.results import clause_of, outcome
from pytest_cluster.evidence.verdict.blame import culprits, judged, no_answer
from pytest_cluster.evidence.verdict.nodes import outcome_of
from pytest_cluster.units import UNITS, Dim, finite

if TYPE_CHECKING:
    from pytest_cluster.evidence.record.lines import EndLine, Line, ResultLine
    from pytest_cluster.evidence.verdict.nodes import NodeEntry

#: The base unit of each dimension, as the metric name's suffix ('' for a count).
BASE_UNIT = {Dim.SIZE: "bytes", Dim.RATE: "bytes_per_second", Dim.TIME: "seconds",
             Dim.FLOPS: "flops", Dim.OPS: "ops_per_second", Dim.FRACTION: "ratio",
             Dim.COUNT: "", Dim.TEMPERATURE: "celsius", Dim.POWER: "watts",
             Dim.EVENTS: "events_per_second"}
#: What tells a run's cases apart, as labels of the check samples.
CASE_LABELS = ("cluster", "level", "clause", "node", "gpu", "filesystem", "collective",
               "payload_bytes", "node_count", "rail", "simulated")
#: The labels of the per-clause-and-node samples (the worst of its cases).
CLAUSE_LABELS = ("cluster", "level", "clause", "node", "simulated")
#: The outcomes that judged a case (a skipped or not-run case has no check sample).
JUDGED = ("passed", "failed", "error")
#: A level written by -m is an expression: at most this much of it becomes a label.
MAX_LEVEL = 100


def base_unit(unit: str) -> str:
    """The base unit of a spec unit ('GB/s' -> bytes_per_second); a bare number: ''."""
    found = UNITS.get(unit)
    return BASE_UNIT[found[0]] if found is not None else ""


@dataclass(frozen=True)
class Sample:
    """A case's figures: passed or not; whether it judged its node (blame.judged);
    measured, bound and margin where it has numbers (base units; margin as a share of the
    bound)."""

    passed: bool
    unit: str = ""
    measured: float | None = None
    required: float | None = None
    margin: float | None = None
    judged: bool = True
    #: failed because its node did not answer: not judged where the node's verdict says
    #: this machine could not check it (no node answered: controller_fault)
    silent: bool = False

    @property
    def badness(self) -> tuple[bool, bool, float]:
        """Orders samples worst first: failed before passed, a failure that judged the
        node before one that could not, then less margin."""
        return (self.passed, not self.judged,
                self.margin if self.margin is not None else math.inf)

    @classmethod
    def of(cls, record: ResultLine) -> Sample:
        measured, required = finite(record.get("measured_base")), \
            finite(record.get("required_base"))
        share = margin(record) if measured is not None and required is not None else None
        return cls(outcome(record) == "passed", base_unit(str(record.get("unit") or "")),
                   measured, required, share / 100 if share is not None else None,
                   judged(record), outcome(record) != "passed" and no_answer(record))


def worse(old: Sample | None, new: Sample) -> Sample:
    """The worse of two samples (the new one on a tie)."""
    return new if old is None or new.badness <= old.badness else old


def _text(value: object) -> str:
    return "" if value is None else str(value)


class Metrics:
    """The run's metrics, kept as its evidence comes (a result line, a node's verdict, the
    end record, a soak's progress) and built whole when written."""

    def __init__(self, cluster: str, run_id: str, level: str = "") -> None:
        self.cluster, self.run_id, self.level = cluster, run_id, level[:MAX_LEVEL]
        self.cases: dict[tuple[str, ...], Sample] = {}
        self.clauses: dict[tuple[str, ...], Sample] = {}
        self.verdicts: dict[str, str] = {}
        self.codes: dict[str, list[str]] = {}  # per node: its failures' codes, first first
        self.end: EndLine | None = None
        self.progress: tuple[int, Mapping[str, float], str, str] | None = None
        self.unblamed: set[str] = set()  # nodes this machine could not check

    def result(self, record: Line) -> None:
        """A result line of a judged case: its sample, and its clause's on its node (and
        on each node it names as a culprit)."""
        if not is_result(record) or outcome(record) not in JUDGED:
            return
        sample = Sample.of(record)
        simulated = str(bool(record.get("simulated"))).lower()
        clause, node = str(record.get("spec_key") or clause_of(record)), \
            _text(record.get("node"))
        labels = (self.cluster, self.level, clause, node, _text(record.get("gpu")),
                  _text(record.get("filesystem")), _text(record.get("collective")),
                  _text(record.get("payload")), _text(record.get("node_count")),
                  _text(record.get("rail")), simulated)
        self.cases[labels] = worse(self.cases.get(labels), sample)
        blamed = culprits(record) if not sample.passed and sample.judged else []
        for name in [node, *blamed]:
            key = (self.cluster, self.level, clause, name, simulated)
            self.clauses[key] = worse(self.clauses.get(key),
                                      sample if name == node else Sample(False))

    def verdict(self, verdict: NodeEntry) -> None:
        self.verdicts[verdict["node"]] = verdict["verdict"]
        first = verdict.get("code", "")
        codes = [str(c) for c in verdict.get("codes", ())]
        self.codes[verdict["node"]] = [first, *(c for c in codes if c != first)] \
            if first else codes
        if verdict["controller_fault"]:
            self.unblamed.add(verdict["node"])

    def ended(self, end: EndLine) -> None:
        """The end record: the run's status, the cluster's verdict, the counts."""
        self.end = end

    def soak(self, rounds: int, availability: Mapping[str, float], credit: str,
             currency: str) -> None:
        """A soak's figures so far: rounds, each node's availability, the credit owed."""
        self.progress = (rounds, dict(availability), credit, currency)

    def registry(self) -> CollectorRegistry:
        """Every family, built from what the run has said so far."""
        found = CollectorRegistry()
        self._run(found)
        self._samples(found, "check", "a case", CASE_LABELS, self._judged(self.cases))
        self._samples(found, "clause", "the worst case of a clause on a node", CLAUSE_LABELS,
                      self._judged(self.clauses))
        self._soak(found)
        return found

    def _judged(self, samples: Mapping[tuple[str, ...], Sample],
                ) -> Mapping[tuple[str, ...], Sample]:
        """`samples`, those of a node that did not answer not judged where its verdict
        says this machine could not check it (no node answered: no node is blamed for a
        silence they all share)."""
        node = CASE_LABELS.index("node")  # the same place in CLAUSE_LABELS
        return {labels: replace(sample, judged=False)
                if sample.silent and labels[node] in self.unblamed else sample
                for labels, sample in samples.items()}

    def _run(self, found: CollectorRegistry) -> None:
        cluster, level = self.cluster, self.level
        verdicts = Gauge("pytest_cluster_node_verdict", "each node's verdict and outcome "
                         "(1 for its own)", ("cluster", "level", "node", "verdict",
                                             "outcome"), registry=found)
        accepted = Gauge("pytest_cluster_node_accepted", "1 when the node was accepted",
                         ("cluster", "level", "node"), registry=found)
        faults = Gauge("pytest_cluster_node_fault", "1 for each fault code of the node's "
                       "failures (first: its first failure's, its drain reason's; a node "
                       "not checked: what kept it undecided)",
                       ("cluster", "level", "node", "code", "first"), registry=found)
        for node, said in self.verdicts.items():
            verdicts.labels(cluster, level, node, said, outcome_of(said)).set(1)
            accepted.labels(cluster, level, node).set(1 if said == "ACCEPTED" else 0)
            for index, code in enumerate(self.codes.get(node, ())):
                faults.labels(cluster, level, node, code, str(index == 0).lower()).set(1)
        if self.end is None:
            return
        end = self.end
        Gauge("pytest_cluster_run_info", "the run: its id, level, status and the "
              "cluster's verdict and outcome", ("cluster", "run_id", "level", "status",
                                                "verdict", "outcome", "simulated",
                                                "tool_version"), registry=found).labels(
            cluster, self.run_id, level, end["status"], end["verdict"],
            outcome_of(end["verdict"]), str(end["simulated"]).lower(),
            end["tool_version"]).set(1)
        checks = Gauge("pytest_cluster_run_checks", "the run's checks by outcome",
                       ("cluster", "level", "outcome"), registry=found)
        for name, count in end["counts"].items():
            checks.labels(cluster, level, name).set(count)
        derived = Gauge("pytest_cluster_run_derived_checks", "the cases derived from the "
                        "whole run (a soak's, a baseline's) by outcome: with run_checks, "
                        "what pytest and JUnit count", ("cluster", "level", "outcome"),
                        registry=found)
        for name, count in end.get("derived_counts", {}).items():
            derived.labels(cluster, level, name).set(count)
        Gauge("pytest_cluster_run_end_timestamp_seconds", "when the run ended",
              ("cluster", "level"), registry=found).labels(cluster, level).set(
            end["ended_at"])

    @staticmethod
    def _samples(found: CollectorRegistry, kind: str, what: str, names: tuple[str, ...],
                 samples: Mapping[tuple[str, ...], Sample]) -> None:
        """pytest_cluster_<kind>_passed and _judged for every sample; measured, required
        (a family per unit) and margin where it has numbers."""
        passed = Gauge(f"pytest_cluster_{kind}_passed", f"1 when {what} passed", names,
                       registry=found)
        judged = Gauge(f"pytest_cluster_{kind}_judged", f"1 when {what} judged its node "
                       "(passed, or failed against it); 0 when it failed but could not be "
                       "judged (undecided, busy, a tool error): the verdict blames no node "
                       "for it", names, registry=found)
        margins = Gauge(f"pytest_cluster_{kind}_margin_ratio", f"{what}: headroom over the "
                        "bound, as a share of it (negative: short of it)", names,
                        registry=found)
        figures: dict[str, tuple[Gauge, Gauge]] = {}
        for labels, sample in samples.items():
            passed.labels(*labels).set(1 if sample.passed else 0)
            judged.labels(*labels).set(1 if sample.judged else 0)
            if sample.margin is not None:
                margins.labels(*labels).set(sample.margin)
            if sample.measured is None or sample.required is None:
                continue
            if sample.unit not in figures:
                suffix = f"_{sample.unit}" if sample.unit else ""
                unit = sample.unit.replace("_", " ") or "a count"
                figures[sample.unit] = (
                    Gauge(f"pytest_cluster_{kind}_measured{suffix}", f"{what}: the "
                          f"measured value, in {unit}", names, registry=found),
                    Gauge(f"pytest_cluster_{kind}_required{suffix}", f"{what}: the bound, "
                          f"in {unit}", names, registry=found))
            measured, required = figures[sample.unit]
            measured.labels(*labels).set(sample.measured)
            required.labels(*labels).set(sample.required)

    def _soak(self, found: CollectorRegistry) -> None:
        if self.progress is None:
            return
        rounds, availability, credit, currency = self.progress
        Gauge("pytest_cluster_soak_rounds", "a soak's rounds finished so far",
              ("cluster",), registry=found).labels(self.cluster).set(rounds)
        share = Gauge("pytest_cluster_soak_availability_ratio", "each node's availability "
                      "over a soak so far", ("cluster", "node"), registry=found)
        for node, value in availability.items():
            share.labels(self.cluster, node).set(value)
        if credit:  # '': no node observed yet, so no credit settled (not none owed)
            Gauge("pytest_cluster_soak_credit", "the SLA credit owed so far, in its "
                  "currency", ("cluster", "currency"), registry=found).labels(
                self.cluster, currency).set(float(credit))

    def write(self, path: Path) -> None:
        """Write atomically (a temporary file renamed over it), as the textfile collector
        needs: a scrape reads the old file or the new, never half of one."""
        write_to_textfile(str(path), self.registry())
