"""The JUnit suite's properties of a run: its status, a soak's rounds and credit, the
baseline it was compared with, how many checks ran, its coverage, its outcome, the nodes
of each verdict and the failed nodes by the fault code of their first failure (what their
drain reasons start with). Pure: from the end record and the nodes' verdicts. A failed
case's own code, action and actor are its testcase's properties (run/collection.py)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from pytest_cluster.evidence.verdict.cluster_verdict import INCOMPLETE
from pytest_cluster.evidence.verdict.nodes import FAIL, NodeVerdict, by_verdict, outcome_of

if TYPE_CHECKING:
    from pytest_cluster.evidence.baseline.accepted import Baseline
    from pytest_cluster.evidence.sinks.results import EndLine


def suite_properties(end: EndLine, baseline: Baseline | None, coverage: str,
                     verdicts: Iterable[NodeVerdict]) -> list[tuple[str, str]]:
    """(name, value) in the order JUnit lists them; `coverage` is the terminal's coverage
    line (report.terminal.coverage_line), '' for a complete run."""
    found: list[tuple[str, str]] = [("status", str(end["status"]))]
    soak = end.get("soak")
    if soak:
        found.append(("soak", f"{soak['rounds']} round(s) over "
                              f"{soak['observed_s'] / 3600:.2f} h observed"))
        if "credit" in soak:
            found.append(("sla_credit", str(soak["credit"]["total"])))
    if baseline is not None:
        found.append(("baseline", f"{baseline.path} ({baseline.label}, "
                                  f"manifest sha256 {baseline.manifest_sha256})"))
    found.append(("checks_ran", f"{end['checks_ran']} of {end['checks_planned']}"))
    not_run = end["counts"].get("not_run", 0)
    if not_run:  # no testcase of theirs: JUnit counts what ran, as the terminal
        found.append(("not_run", str(not_run)))
    if coverage:
        found.append((INCOMPLETE if coverage.startswith(INCOMPLETE) else "level", coverage))
    found.append(("outcome", outcome_of(end["verdict"])))
    verdicts = list(verdicts)
    found.extend((f"nodes_{name.lower().replace(' ', '_')}", ",".join(nodes))
                 for name, nodes in by_verdict(verdicts).items())
    by_code: dict[str, list[str]] = {}
    for verdict in verdicts:
        if verdict.code and verdict.outcome == FAIL:
            by_code.setdefault(verdict.code, []).append(verdict.node)
    if by_code:  # 'PC-GPU-COUNT: n2; PC-GPU-ROWREMAP: n3,n5', as `sinfo -R` groups them
        found.append(("fault_codes", "; ".join(f"{code}: {','.join(nodes)}"
                                               for code, nodes in by_code.items())))
    return found
