"""The per-node verdict a provider gates on: ACCEPTED, REJECTED, UNREACHABLE, NOT CHECKED,
and the outcome a gate acts on (PASS, FAIL, ERROR).

- UNREACHABLE: the node did not answer (its host probe, or any probe, could not reach it)
  while another node of the run did; every one of its cases fails citing that one reason.
  Where no node answered, or the launcher failed for a fault of this machine's (a name it
  cannot resolve, credentials refused, ssh or srun missing: CONTROLLER_SIDE), the node is
  NOT CHECKED with that fault (its controller_fault), never drained.
- REJECTED: it answered and at least one of its checks failed.
- ACCEPTED: every contract check about this node that the run selected (its level, `-m
  sanity`; `-k`; `--cluster-node`) ran, and all passed. The checks the selection left out
  are counted apart (`checks_not_selected`): a sanity run accepts at the sanity level.
- NOT CHECKED: nothing failed, but a selected check about it did not run (not reached,
  skipped, busy, undecided, the tool could not run its probes) or none was selected. It
  carries the fault of what kept it undecided: its first undecided case's (PC-DCGM-CONFIG
  for DCGM's configuration finding), what its lines end with; it is never drained.

The outcome (the taxonomy of Nebius' soperator and NVIDIA's readiness engine): PASS
(ACCEPTED), FAIL (REJECTED, UNREACHABLE: take the node out) and ERROR (NOT CHECKED: the tool
could not judge the node; never drain it, say why).

Checks of several nodes at once (a multi-node all-reduce, same versions everywhere) are
judged on their own, as cluster checks. One that names the nodes that made it fail (its
`culprits`: the nodes outside the largest group of "the same on every node", the nodes
whose ranks used another transport) fails those nodes too, with its clause; the nodes
it does not name are not blamed. So is
a node's check that failed without a culprit (NO_CULPRIT: the slow-node search found the
fabric below the bar with no known-good node to compare with): the node is NOT CHECKED.

What a result line's error kind says of whom to blame: blame.py; the cluster's verdict
and why a run is INCOMPLETE: cluster_verdict.py; the drain and taint lines: drain.py.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypedDict

from pytest_cluster.evidence.sinks.results import (
    BaselineSummary,
    ResultLine,
    clause_of,
    disabled_clause,
    outcome,
)
from pytest_cluster.evidence.verdict.blame import (
    CONTROLLER_SIDE,
    answered,
    clean_message,
    culprits,
    judged,
    launcher_words,
    no_answer,
)
from pytest_cluster.evidence.verdict.faults import fault_of

if TYPE_CHECKING:
    from pytest_cluster.evidence.record.lines import AcceptedEntry, DisabledEntry
    from pytest_cluster.evidence.record.plan import Plan, Selection

ACCEPTED = "ACCEPTED"
REJECTED = "REJECTED"
UNREACHABLE = "UNREACHABLE"
NOT_CHECKED = "NOT CHECKED"

#: Why nodes that did not answer are not blamed when no node of the run answered: the
#: fault every node shares is this machine's or its network's (its link down or slow).
NO_NODE_ANSWERED = "no node answered this machine, so the fault is on its side or its network's"


#: The outcomes a gate acts on: PASS, FAIL (drain), ERROR (the tool could not judge).
PASS, FAIL, ERROR = "PASS", "FAIL", "ERROR"


def controller_reason(fault: str, nodes: int = 1) -> str:
    """A node's reason (or, for `nodes` > 1, several nodes') when this machine could not
    check it: 'this machine could not check it: <fault>'."""
    return f"this machine could not check {'it' if nodes == 1 else 'them'}: {fault}"


class NodeEntry(TypedDict):
    """A node's entry in verdict.json (NodeVerdict.to_json)."""

    node: str
    verdict: str
    outcome: str  # PASS, FAIL or ERROR
    reason: str
    checks_planned: int
    checks_not_selected: int
    checks_ran: int
    checks_passed: int
    checks_undecided: int
    failed_clauses: list[str]
    failures: list[dict[str, str]]  # clause, case, message; code where the line says one
    controller_fault: str  # why this machine could not check the node ('' when it could)
    checks_disabled: int  # skipped by the kill switch (--cluster-disable): in checks_ran
    #: the fault codes of its failures, each once, in order (evidence/verdict/faults.py); a
    #: NOT CHECKED node's: those of its undecided cases
    codes: list[str]
    #: its first failure's fault (an unreachable node's: its no answer's; a NOT CHECKED
    #: node's: its first undecided case's, never drained), what a drain reason starts
    #: with; '' where none failed or nothing declares one
    code: str
    action: str
    actor: str


class _VerdictDocument(TypedDict):

    schema: str
    run_id: str
    tool_version: str
    cluster: str
    spec_sha256: str
    simulated: bool
    status: str
    verdict: str
    outcome: str
    level: str
    levels: list[str]
    selection: Selection
    checks_not_selected: int
    started_at: str  # UTC
    ended_at: str
    checks: str  # '<ran> of <planned>'
    nodes_in_spec: int
    nodes_checked: int
    nodes: list[NodeEntry]
    cluster_checks_failed: list[dict[str, str]]  # cluster_failures
    drain: list[str]
    taint: list[str]


class VerdictDocument(_VerdictDocument, total=False):
    """verdict.json, as the run writes it (end.verdict_document; verdict.schema.json)."""

    baseline: BaselineSummary  # the run compared with (--cluster-baseline), as the end record
    disabled: list[DisabledEntry]  # the kill switch's entries in force (--cluster-disable)
    disabled_expired: list[DisabledEntry]  # ... and those expired, ignored
    baseline_accepted: list[AcceptedEntry]  # --cluster-baseline-accept's (end record's)
    made_at: str  # UTC: the run's end (age.py); an earlier version's verdict.json has none
    valid_until: str  # UTC: made_at + --cluster-valid-for
    incomplete: str  # why the verdict is INCOMPLETE (incomplete_why), as the terminal says
    extends: str  # the shipped profile the spec extends (docs/spec.md: extends); absent: none


@dataclass
class NodeVerdict:
    node: str
    verdict: str = NOT_CHECKED
    reason: str = ""
    planned: int = 0  # the checks about it the run selected
    not_selected: int = 0  # ... and those the selection left out (another level, -k)
    ran: int = 0
    passed: int = 0
    failed_clauses: list[str] = field(default_factory=list)
    failures: list[dict[str, str]] = field(default_factory=list)
    undecided: list[str] = field(default_factory=list)  # NO_CULPRIT failures' messages
    disabled: int = 0  # of `ran`: skipped by the kill switch (never passed, never failed)
    #: why this machine (the controller) could not check the node, the same words for
    #: every node it hit: a name it cannot resolve, credentials refused, ssh or srun
    #: missing, no node answering at all ('' when none)
    controller_fault: str = ""
    #: the fault codes of its failures, each once; its first failure's code, action and
    #: actor (an unreachable node's: its no answer's): what its drain reason starts with;
    #: a NOT CHECKED node's: those of its undecided cases, the first one's (undecided_fault)
    codes: list[str] = field(default_factory=list)
    code: str = ""
    action: str = ""
    actor: str = ""

    @property
    def fault_said(self) -> str:
        """'; PC-GPU-ROWREMAP (provider-hardware): <action>' for a node with a first
        failure's fault (a NOT CHECKED node: its first undecided case's), as its terminal
        and gate lines end (what to do, and who); '' where none is known (accepted, a
        verdict.json of an earlier version)."""
        if not self.code:
            return ""
        who = f" ({self.actor})" if self.actor else ""
        return f"; {self.code}{who}" + (f": {self.action}" if self.action else "")

    @property
    def outcome(self) -> str:
        """PASS, FAIL or ERROR: what a gate does with this node."""
        return outcome_of(self.verdict)

    def to_json(self) -> NodeEntry:
        return {"node": self.node, "verdict": self.verdict, "outcome": self.outcome,
                "reason": self.reason, "checks_planned": self.planned,
                "checks_not_selected": self.not_selected, "checks_ran": self.ran,
                "checks_passed": self.passed, "checks_undecided": len(self.undecided),
                "failed_clauses": self.failed_clauses,
                "failures": self.failures, "controller_fault": self.controller_fault,
                "checks_disabled": self.disabled,
                "codes": self.codes, "code": self.code, "action": self.action,
                "actor": self.actor}


class VerdictBuilder:
    """Node verdicts gathered one result line at a time, as the lines are written (the
    lines themselves stay on disk); `finish` decides them once the plan is known."""

    def __init__(self, nodes: Sequence[str]) -> None:
        self._verdicts = {name: NodeVerdict(name) for name in nodes}
        self._unreachable: dict[str, str] = {}
        self._why_unreachable: dict[str, str] = {}  # ... in the launcher's words
        self._unreachable_fault: dict[str, tuple[str, str, str]] = {}  # ... its fault
        self._controller: dict[str, str] = {}  # node -> its controller-side fault
        #: node -> the faults of its undecided cases, in order (undecided_fault)
        self._undecided: dict[str, list[tuple[str, str, str]]] = defaultdict(list)
        self._answered = False  # some node answered some probe of this run

    def add(self, record: ResultLine) -> None:
        failed = outcome(record) in ("failed", "error")
        if failed and judged(record):
            for node in culprits(record):  # a check of several nodes that names some
                if node in self._verdicts and node != record.get("node"):
                    self._fail(self._verdicts[node], record)
        found = self._verdicts.get(str(record.get("node")))
        if found is None or outcome(record) == "not_run":
            return
        found.ran += 1
        if answered(record):
            self._answered = True
        if outcome(record) == "passed":
            found.passed += 1
        elif disabled_clause(record) is not None:
            found.disabled += 1
        elif failed and not judged(record):
            found.undecided.append(clean_message(str(record.get("message", ""))))
            self._undecided[found.node].append(undecided_fault(record))
            if record.get("error_kind") in CONTROLLER_SIDE:
                self._controller.setdefault(found.node, launcher_words(record))
        elif failed:
            message = self._fail(found, record)
            if no_answer(record):
                self._unreachable.setdefault(found.node, message)
                self._why_unreachable.setdefault(found.node, launcher_words(record))
                self._unreachable_fault.setdefault(found.node, _fault(record))

    @staticmethod
    def _fail(found: NodeVerdict, record: ResultLine) -> str:
        """Count a failed check against a node: its clause, the case, the message."""
        clause = clause_of(record)
        if clause not in found.failed_clauses:
            found.failed_clauses.append(clause)
        message = clean_message(str(record.get("message", "")))
        code, action, actor = _fault(record)
        found.failures.append({"clause": clause, "case": str(record.get("case", "")),
                               "message": message, **({"code": code} if code else {})})
        if code and code not in found.codes:
            found.codes.append(code)
        if code and not found.code:
            found.code, found.action, found.actor = code, action, actor
        return message

    def finish(self, plan: Plan, extra: Mapping[str, int],
               left_out: str = "deselected") -> list[NodeVerdict]:
        """One verdict per node of the spec, in the spec's order. `extra`: per node, the
        result lines of your own tests, outside the plan; `left_out`: why the checks the
        selection left out were (plan.why_left_out: 'not at this level (-m sanity)')."""
        verdicts = self._verdicts
        for case in plan.cases:
            if case.node in verdicts:
                if case.case_id in plan.selected:
                    verdicts[case.node].planned += 1
                else:
                    verdicts[case.node].not_selected += 1
        for node, count in extra.items():
            if node in verdicts:
                verdicts[node].planned += count
        for node, why in self._controller.items():
            verdicts[node].controller_fault = why
        if not self._answered:  # no node answered: none of them is to blame
            for node, why in self._why_unreachable.items():
                verdict = verdicts[node]
                verdict.controller_fault = f"{NO_NODE_ANSWERED} ({why})"
                verdict.undecided += [f["message"] for f in verdict.failures]
                verdict.failed_clauses, verdict.failures = [], []
                verdict.codes, verdict.code, verdict.action, verdict.actor = [], "", "", ""
            self._unreachable.clear()
        for node, (code, action, actor) in self._unreachable_fault.items():
            if node in self._unreachable and code:  # it is UNREACHABLE: its no answer's
                verdicts[node].code, verdicts[node].action, verdicts[node].actor = \
                    code, action, actor
        for verdict in verdicts.values():
            _decide(verdict, self._unreachable.get(verdict.node), left_out)
            if verdict.verdict != NOT_CHECKED:  # judged on what the node did say
                verdict.controller_fault = ""
            elif not verdict.code:  # what kept it undecided: never drained for it
                _carry_undecided(verdict, self._undecided.get(verdict.node, []))
        return list(verdicts.values())


def _fault(record: ResultLine) -> tuple[str, str, str]:
    """A failed line's code, action and actor, as it says them ('' for each it does not)."""
    code, action, actor = (value if isinstance(value, str) else ""
                           for value in (record.get("code"), record.get("action"),
                                         record.get("actor")))
    return code, action, actor


def undecided_fault(record: ResultLine) -> tuple[str, str, str]:
    """An undecided case's fault, what kept its node undecided: the one its line says,
    else the one its error kind declares (faults.fault_of: a line of an earlier version);
    '' for each where neither says one."""
    said = _fault(record)
    if said[0]:
        return said
    found = fault_of(clause_of(record), record)
    if found is None:
        return said
    fault = found[1]
    return fault.code, fault.action, fault.actor.value


def _carry_undecided(verdict: NodeVerdict, faults: Sequence[tuple[str, str, str]]) -> None:
    """A NOT CHECKED node's codes: its undecided cases', each once; its code, action and
    actor: the first of them's."""
    for code, action, actor in faults:
        if code and code not in verdict.codes:
            verdict.codes.append(code)
        if code and not verdict.code:
            verdict.code, verdict.action, verdict.actor = code, action, actor


def node_verdicts(nodes: Sequence[str], plan: Plan,
                  records: Iterable[ResultLine]) -> list[NodeVerdict]:
    """One verdict per node of the spec, in the spec's order."""
    builder = VerdictBuilder(nodes)
    extra: Counter[str] = Counter()
    for record in records:
        builder.add(record)
        if record.get("case") not in plan.by_id:  # your own tests' evidence
            extra[str(record.get("node"))] += 1
    return builder.finish(plan, extra)


def _decide(verdict: NodeVerdict, no_answer: str | None, left_out: str) -> None:
    if no_answer is not None:
        verdict.verdict, verdict.reason = UNREACHABLE, no_answer
    elif verdict.failed_clauses:
        verdict.verdict = REJECTED
        verdict.reason = (f"{len(verdict.failed_clauses)} clause(s) failed: "
                          f"{', '.join(verdict.failed_clauses)}")
    elif verdict.controller_fault:
        verdict.reason = controller_reason(verdict.controller_fault)
    elif verdict.planned and verdict.ran >= verdict.planned and verdict.passed \
            and verdict.passed + verdict.disabled == verdict.ran:
        # a check the kill switch turned off is said, never counted as passed
        verdict.verdict, verdict.reason = ACCEPTED, f"all {verdict.passed} checks passed"
        if verdict.disabled:
            verdict.reason += f"; {verdict.disabled} disabled (--cluster-disable)"
        if verdict.not_selected:
            verdict.reason += f"; {verdict.not_selected} more {left_out}"
    elif verdict.ran == 0:
        verdict.reason = ("no check about this node ran" if verdict.planned
                          else f"none of its {verdict.not_selected} checks ran: {left_out}"
                          if verdict.not_selected else "no check is about this node alone")
    else:
        parts = []
        if verdict.ran < verdict.planned:
            parts.append(f"{verdict.planned - verdict.ran} of {verdict.planned} checks did "
                         "not run")
        skipped = verdict.ran - verdict.passed - len(verdict.undecided) - verdict.disabled
        if verdict.undecided:
            parts.append(f"{len(verdict.undecided)} could not be decided ("
                         f"{verdict.undecided[0]})")
        if skipped:
            parts.append(f"{skipped} skipped")
        if verdict.disabled:
            parts.append(f"{verdict.disabled} disabled (--cluster-disable)")
        verdict.reason = "; ".join([*parts, "none failed"])


def outcome_of(verdict: str) -> str:
    """A node's or the cluster's verdict as a gate's outcome: ACCEPTED passes; REJECTED and
    UNREACHABLE fail (drain); NOT CHECKED and INCOMPLETE are errors (the tool could not
    judge: never drain)."""
    if verdict == ACCEPTED:
        return PASS
    return FAIL if verdict in (REJECTED, UNREACHABLE) else ERROR


def said_once(verdicts: Iterable[NodeVerdict]) -> list[tuple[str, list[str], str, str]]:
    """(verdict, nodes, reason, fault) for the nodes not accepted, in the spec's order, one
    node each, `fault` its `fault_said` (what its line ends with, after its reason: a
    reason may be cut, its fault never); but the nodes this machine could not check for
    the same fault are one entry, saying the fault once: ('NOT CHECKED', [gpu-001, ...,
    gpu-004], 'this machine could not check them: this machine cannot resolve the name
    ...', their fault_said where they all have the same)."""
    order: list[tuple[str, list[NodeVerdict]]] = []
    shared: dict[str, list[NodeVerdict]] = {}
    for verdict in verdicts:
        if verdict.verdict == ACCEPTED:
            continue
        fault = verdict.controller_fault if verdict.verdict == NOT_CHECKED else ""
        if not fault:
            order.append(("", [verdict]))
        elif fault in shared:
            shared[fault].append(verdict)
        else:
            shared[fault] = [verdict]
            order.append((fault, shared[fault]))
    return [(group[0].verdict, [v.node for v in group],
             controller_reason(fault, len(group)) if len(group) > 1 else group[0].reason,
             group[0].fault_said if len({v.fault_said for v in group}) == 1 else "")
            for fault, group in order]


def by_verdict(verdicts: Iterable[NodeVerdict]) -> dict[str, list[str]]:
    """Verdict -> nodes, in the order ACCEPTED, REJECTED, UNREACHABLE, NOT CHECKED."""
    found: dict[str, list[str]] = defaultdict(list)
    for verdict in verdicts:
        found[verdict.verdict].append(verdict.node)
    return {name: found[name] for name in (ACCEPTED, REJECTED, UNREACHABLE, NOT_CHECKED)}
