"""What the end of a run needs from its result lines, gathered as each line is written.

The lines themselves go to results.jsonl and are not held: at 1,024 nodes a run has
157,711 of them. The ledger keeps, as the run goes on, only what the end reads:

- per outcome, how many; per case id, its node (which cases ran, and the lines of your
  own tests outside the plan);
- the node verdicts' counts and failures (verdict.VerdictBuilder);
- each clause's tally and the nodes x clauses matrix (tally.ClauseTally, gathered.Matrix);
- in full (without their raw payloads, see `held`), the lines that did not pass and the
  benchmark runs the charts draw; a run where everything fails holds them all;
- the latency cases' matrix and each node's median (latency_map.LatencyMap: the heat map);
- each node's figure of the storage clauses and of interconnect.latency, with the
  requirement (figures.NodeFigures: the report's bar charts);
- the rows of the HTML's passed lists, in an unnamed temporary file (gone when closed or
  when the process ends), read back a row at a time as the report is written.
"""

from __future__ import annotations

import sys
import tempfile
from collections import Counter
from typing import TYPE_CHECKING, cast

from pytest_cluster.evidence.record.figures import NodeFigures
from pytest_cluster.evidence.record.gathered import (
    Gathered,
    Matrix,
    PassedRows,
    is_benchmark,
    passed_row,
    reference_named,
)
from pytest_cluster.evidence.record.latency_map import LatencyMap
from pytest_cluster.evidence.record.plan import DESELECTED
from pytest_cluster.evidence.record.summary import ClauseTally, add_to_tally
from pytest_cluster.evidence.sinks.results import (
    ResultLine,
    clause_of,
    counted,
    disabled_clause,
    outcome,
)
from pytest_cluster.evidence.verdict.cluster_verdict import cluster_failures
from pytest_cluster.evidence.verdict.nodes import NodeVerdict, VerdictBuilder

if TYPE_CHECKING:
    from pytest_cluster.evidence.record.plan import Plan

#: Keys of a result line that only results.jsonl and JUnit need, not the controller's
#: reports at the end (verdicts, scorecard, charts, the terminal).
NOT_HELD = frozenset({"method", "gpu_uuid", "gpu_serial", "probe_run", "finished_at",
                      "duration_s", "spec_line"})
#: Keys whose values repeat across thousands of cases: one string each, shared.
SHARED = frozenset({"clause", "spec_key", "requirement", "bound_source", "comparison", "unit",
                    "node", "outcome", "phase", "verdict", "collective", "derivation",
                    "error_kind", "filesystem", "type", "code", "action", "actor"})


def held(record: ResultLine) -> ResultLine:
    """What the ledger keeps of a line it holds in full: the line without its raw probe
    payload, the pytest node id where the case id says which case it is, and the keys
    only the files need, which stay in results.jsonl and JUnit; a benchmark's payload
    sweep is kept for the charts."""
    kept: dict[str, object] = {}  # the line's own keys, some left out
    for key, value in record.items():
        if key in NOT_HELD or key.startswith("busbw_GBps[") or (
                key == "nodeid" and "case" in record):  # the case says which it is
            continue
        if key == "raw":
            if isinstance(value, dict) and "sweep" in value:
                kept["raw"] = {"sweep": value["sweep"]}
            continue
        kept[sys.intern(key)] = (sys.intern(value) if key in SHARED and isinstance(value, str)
                                 else value)
    return cast("ResultLine", kept)


#: Findings held for the terminal and the report (results.jsonl and JUnit have all).
MAX_FINDINGS, MAX_FINDING = 20, 500


class Ledger:
    def __init__(self, nodes: tuple[str, ...]) -> None:
        self.nodes = nodes
        self.outcomes: Counter[str] = Counter()
        self.ran: dict[str, str] = {}  # case id -> its node ("None": about no one node)
        self._caseless: Counter[str] = Counter()  # node -> lines with no case id
        self.kept: list[ResultLine] = []  # not passed, or a benchmark run (charts)
        self._verdicts = VerdictBuilder(nodes)
        self._tallies: dict[str, ClauseTally] = {}
        self._matrix = Matrix(nodes)
        self._references: dict[str, str] = {}  # per clause, the first passed one's
        self._spool = tempfile.TemporaryFile()  # noqa: SIM115 (closed by close())
        self.passed = PassedRows(self._spool)
        self.findings: list[str] = []  # what a check found beside its figure (a straggler)
        self.latency = LatencyMap()  # the latency heat map's figures
        self.figures = NodeFigures()  # the bar charts' figures (storage, latency)
        self.disabled: Counter[str] = Counter()  # per clause turned off: its cases skipped

    def add(self, record: ResultLine) -> None:
        """Count one result line, as it is written."""
        kind = outcome(record)
        self.outcomes[kind] += 1
        node = sys.intern(str(record.get("node")))
        case = record.get("case")
        if isinstance(case, str):
            self.ran[case] = node
        else:
            self._caseless[node] += 1
        self._verdicts.add(record)
        turned_off = disabled_clause(record)
        if turned_off is not None:
            self.disabled[turned_off] += 1
        add_to_tally(self._tallies, record)
        self._matrix.add(record)
        self.latency.add(record)
        self.figures.add(record)
        if kind == "passed":
            clause = clause_of(record)
            self.passed.add(clause, passed_row(record))
            if "reference" in record and clause not in self._references:
                self._references[clause] = reference_named(record)
        if kind != "passed" or is_benchmark(record):
            self.kept.append(held(record))
        finding = record.get("finding")
        if isinstance(finding, str) and finding and len(self.findings) < MAX_FINDINGS:
            self.findings.append(f"{clause_of(record)}: {finding[:MAX_FINDING]}")

    @property
    def checks_ran(self) -> int:
        return sum(n for kind, n in self.outcomes.items() if kind != "not_run")

    @property
    def failed(self) -> int:
        return self.outcomes["failed"] + self.outcomes["error"]

    def counts(self) -> dict[str, int]:
        return counted(self.outcomes)

    def outside_plan(self, plan: Plan) -> Counter[str]:
        """Per node, the lines of your own tests: evidence recorded outside the plan."""
        found = Counter(self._caseless)
        found.update(node for case, node in self.ran.items() if case not in plan.by_id)
        return found

    def verdicts(self, plan: Plan, left_out: str = DESELECTED) -> list[NodeVerdict]:
        """One verdict per node, once every line is in (call once); `left_out`: why the
        checks the selection left out were (plan.why_left_out)."""
        return self._verdicts.finish(plan, self.outside_plan(plan), left_out)

    def cluster_failures(self) -> list[dict[str, str]]:
        return cluster_failures(self.kept, self.nodes)

    def gathered(self) -> Gathered:
        """What the HTML scorecard shows (the passed rows stay on disk until read)."""
        return Gathered(self.cluster_failures(), list(self._tallies.values()),
                        self._matrix, self.passed, self._references, list(self.findings))

    def close(self) -> None:
        self._spool.close()
