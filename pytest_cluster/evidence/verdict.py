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
  skipped, busy, undecided, the tool could not run its probes) or none was selected.

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
"""

from __future__ import annotations

import shlex
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypedDict

from pytest_cluster.errors import UnitError
from pytest_cluster.evidence.sinks.results import (
    COMPLETE,
    PARTIAL,
    BaselineSummary,
    ResultLine,
    SoakEnd,
    clause_of,
    outcome,
)
from pytest_cluster.hostlist import expand_hostlist
from pytest_cluster.units import format_size

if TYPE_CHECKING:
    from pytest_cluster.evidence.plan import Plan, Selection

ACCEPTED = "ACCEPTED"
REJECTED = "REJECTED"
UNREACHABLE = "UNREACHABLE"
NOT_CHECKED = "NOT CHECKED"

#: Error kinds that mean the node did not answer at all: its address refused or stayed
#: silent. The node's own fault only where another node answered in the same run.
NO_ANSWER = frozenset({"unreachable"})
#: ... and those that mean so when the host probe (the first thing asked) ends with them.
NO_ANSWER_HOST = NO_ANSWER | {"timeout"}
#: A figure that cannot be compared with its baseline's: measured on another basis (per
#: GPU then, the cluster's total now) without the counts to convert, or in another unit.
NOT_COMPARABLE = "not_comparable"
#: A slow-node search (interconnect.node_network, each rail of fabric.rail_busbw) that
#: found the fabric below the bar with no known-good node to compare with, or a job of
#: several nodes that failed on none of them in particular: no node can be blamed
#: (Evidence.undecided records it).
UNDECIDED = "undecided"
#: Error kinds of a check that failed without a culprit: an undecided search (UNDECIDED);
#: a figure not comparable with the baseline's (the contract changed between the runs). A
#: cluster failure; the node is not rejected for it.
NO_CULPRIT = frozenset({UNDECIDED, NOT_COMPARABLE})
#: Error kinds of a check not made because another job held the node (SLURM: busy): the
#: node is NOT CHECKED, saying so; neither it nor the cluster failed.
NOT_MEASURED = frozenset({"busy"})
#: Error kinds of a cluster check that could not be established because some node did not
#: answer ("the same on every node"): it fails, but it rejects the cluster only through
#: that node's own verdict (UNREACHABLE rejects; busy leaves it INCOMPLETE).
NOT_ESTABLISHED = frozenset({"not_all_nodes"})
#: The error kind of a check of our suite that ended with an exception that is no verdict.
TOOL_FAULT = "tool_fault"
#: Error kinds of a check the tool itself could not make: the interpreter the spec names
#: (cluster.python) is not there; the NIC probe read another network namespace's /sys; a
#: check of ours ended with an exception that is no verdict (TOOL_FAULT). A spec's slip, a
#: wrong vantage point or a fault of the tool is no node's fault: it drains none.
TOOL_ERROR = frozenset({"interpreter_missing", "wrong_namespace", TOOL_FAULT})
#: Error kinds whose fault is this machine's, the controller's, not the node's (the
#: launchers' ErrorKind.controller_side): a node name it cannot resolve, its ssh
#: credentials refused, ssh or srun not installed here, no SLURM controller answering.
#: Nothing was learned about the node: it is NOT CHECKED, saying the cause, never drained.
CONTROLLER_SIDE = frozenset({"controller", "auth_refused"})
#: Error kinds after which a check blames no node: neither its own (NOT CHECKED for it,
#: never drained) nor, for a check of several nodes, those it names.
NOT_BLAMING = NO_CULPRIT | NOT_MEASURED | TOOL_ERROR | NOT_ESTABLISHED | CONTROLLER_SIDE
#: Why nodes that did not answer are not blamed when no node of the run answered: the
#: fault every node shares is this machine's or its network's (its link down or slow).
NO_NODE_ANSWERED = "no node answered this machine, so the fault is on its side or its network's"
MAX_REASON = 300


def judged(record: ResultLine) -> bool:
    """Whether a case that ran (passed, failed, could not start) judged what it is about:
    it passed, or it failed for a fault the verdict counts against its node (and the
    culprits it names). False for a case that could not be judged (an error kind in
    NOT_BLAMING: undecided, busy, a tool error, not established): it fails, but blames no
    node."""
    return outcome(record) == "passed" or record.get("error_kind") not in NOT_BLAMING


def culprits(record: ResultLine) -> list[str]:
    """The nodes a check of several nodes names as the cause of its failure (its
    `culprits`, a hostlist: the odd firmware's node, the ranks that used another
    transport): they fail with its clause. None where it names none."""
    text = record.get("culprits")
    if not isinstance(text, str) or not text:
        return []
    try:
        return expand_hostlist(text)
    except UnitError:
        return []

#: The outcomes a gate acts on: PASS, FAIL (drain), ERROR (the tool could not judge).
PASS, FAIL, ERROR = "PASS", "FAIL", "ERROR"


def clean_message(message: str) -> str:
    """A failure message without pytest's 'Failed: ' prefix ('[SIMULATED]' stays)."""
    text = message.removeprefix("Failed: ").strip()
    first = text.splitlines()[0] if text else ""
    return first if len(first) <= MAX_REASON else first[:MAX_REASON - 3] + "..."


def no_answer(record: ResultLine) -> bool:
    """Whether the record failed because its node did not answer (its address refused or
    stayed silent): the node's own fault only where another node answered (answered)."""
    kind = record.get("error_kind")
    kinds = NO_ANSWER_HOST if record.get("probe") == "host" else NO_ANSWER
    return kind in kinds


#: Error kinds of a failed record that say nothing of whether its node answered: it did
#: not, this machine or the tool failed, another node or job held it, a Ctrl-C. Any other
#: failure (a number missed, a search undecided, a figure not comparable, bad output) is
#: the node's answer.
SAYS_NOTHING = NO_ANSWER_HOST | CONTROLLER_SIDE | TOOL_ERROR | NOT_ESTABLISHED \
    | NOT_MEASURED | {"cancelled"}


def answered(record: ResultLine) -> bool:
    """Whether a node's record shows the node answered: it passed, or failed for what the node
    said, judged or not (a search that could not decide measured it): not SAYS_NOTHING."""
    if outcome(record) == "passed":
        return True
    return (outcome(record) in ("failed", "error")
            and record.get("error_kind") not in SAYS_NOTHING)


def launcher_words(record: ResultLine) -> str:
    """What the launcher said of a probe that failed, without the node's name (the same
    words for every node it hit: 'ssh: connection refused (no sshd?)'); the case's
    message where the record keeps none."""
    raw = record.get("raw")
    said = raw.get("message") if isinstance(raw, dict) else None
    if isinstance(said, str) and said.strip():
        return clean_message(said)
    return clean_message(str(record.get("message", "")))


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
    failures: list[dict[str, str]]  # clause, case, message
    controller_fault: str  # why this machine could not check the node ('' when it could)


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
    incomplete: str  # why the verdict is INCOMPLETE (incomplete_why), as the terminal says


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
    #: why this machine (the controller) could not check the node, the same words for
    #: every node it hit: a name it cannot resolve, credentials refused, ssh or srun
    #: missing, no node answering at all ('' when none)
    controller_fault: str = ""

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
                "failures": self.failures, "controller_fault": self.controller_fault}


class VerdictBuilder:
    """Node verdicts gathered one result line at a time, as the lines are written (the
    lines themselves stay on disk); `finish` decides them once the plan is known."""

    def __init__(self, nodes: Sequence[str]) -> None:
        self._verdicts = {name: NodeVerdict(name) for name in nodes}
        self._unreachable: dict[str, str] = {}
        self._why_unreachable: dict[str, str] = {}  # ... in the launcher's words
        self._controller: dict[str, str] = {}  # node -> its controller-side fault
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
        elif failed and not judged(record):
            found.undecided.append(clean_message(str(record.get("message", ""))))
            if record.get("error_kind") in CONTROLLER_SIDE:
                self._controller.setdefault(found.node, launcher_words(record))
        elif failed:
            message = self._fail(found, record)
            if no_answer(record):
                self._unreachable.setdefault(found.node, message)
                self._why_unreachable.setdefault(found.node, launcher_words(record))

    @staticmethod
    def _fail(found: NodeVerdict, record: ResultLine) -> str:
        """Count a failed check against a node: its clause, the case, the message."""
        clause = clause_of(record)
        if clause not in found.failed_clauses:
            found.failed_clauses.append(clause)
        message = clean_message(str(record.get("message", "")))
        found.failures.append({"clause": clause, "case": str(record.get("case", "")),
                               "message": message})
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
            self._unreachable.clear()
        for verdict in verdicts.values():
            _decide(verdict, self._unreachable.get(verdict.node), left_out)
            if verdict.verdict != NOT_CHECKED:  # judged on what the node did say
                verdict.controller_fault = ""
        return list(verdicts.values())


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
    elif verdict.planned and verdict.ran >= verdict.planned \
            and verdict.passed == verdict.ran:
        verdict.verdict, verdict.reason = ACCEPTED, f"all {verdict.ran} checks passed"
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
        skipped = verdict.ran - verdict.passed - len(verdict.undecided)
        if verdict.undecided:
            parts.append(f"{len(verdict.undecided)} could not be decided ("
                         f"{verdict.undecided[0]})")
        if skipped:
            parts.append(f"{skipped} skipped")
        verdict.reason = "; ".join([*parts, "none failed"])


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def where_of(record: ResultLine) -> str:
    """Where a check about several nodes ran, and what tells it apart from the clause's
    other checks: the nodes it spanned (their count, when there are several), then its
    collective, payload, rail and round where the record has them: '64 nodes
    (sim-gpu-01..sim-gpu-64), all_reduce 4 GiB'."""
    size = format_size(float(record["payload"])) if _is_number(record.get("payload")) else ""
    what = " ".join(str(part) for part in (record.get("collective"), size) if part)
    parts = [str(record.get("node")), *([what] if what else [])]
    for key in ("rail", "round"):
        value = record.get(key)
        if value not in (None, ""):
            parts.append(f"{key} {value}")
    return ", ".join(parts)


def _case_params(record: ResultLine) -> str:
    """The case's parameters as its id shows them ('all_reduce-4GiB-64nodes'), or ''."""
    case = str(record.get("case") or record.get("nodeid") or "")
    return case[case.index("[") + 1:-1] if case.endswith("]") and "[" in case else ""


def cluster_failures(records: Iterable[ResultLine],
                     nodes: Sequence[str]) -> list[dict[str, str]]:
    """Failed checks about several nodes at once (or the whole cluster), each with where it
    ran (where_of); two that would still read alike also name their case's parameters."""
    names = set(nodes)
    failed = [r for r in records if (str(r.get("node")) not in names
                                     or r.get("error_kind") in NO_CULPRIT)
              and outcome(r) in ("failed", "error")]
    found = [{"clause": clause_of(r), "where": where_of(r),
              "message": clean_message(str(r.get("message", ""))),
              "kind": str(r.get("error_kind") or "failed"),
              **({"culprits": str(r["culprits"])} if culprits(r) else {})} for r in failed]
    alike = Counter((f["clause"], f["where"]) for f in found)
    for failure, record in zip(found, failed, strict=True):
        params = _case_params(record)
        if alike[(failure["clause"], failure["where"])] > 1 and params:
            failure["where"] += f" [{params}]"
    return found


def unmade(verdicts: Iterable[NodeVerdict]) -> frozenset[str]:
    """The kinds of cluster failures that are no failure of the cluster: not established
    (NOT_ESTABLISHED: a node did not answer; its own verdict says why), not made for a
    fault of this machine's (CONTROLLER_SIDE), and, where no node answered (a node's
    controller_fault says so), not made because its nodes did not answer."""
    silent = any(v.controller_fault.startswith(NO_NODE_ANSWERED) for v in verdicts)
    return NOT_ESTABLISHED | CONTROLLER_SIDE | (NO_ANSWER_HOST if silent else frozenset())


def decisive(failures: Iterable[dict[str, str]],
             verdicts: Iterable[NodeVerdict] = ()) -> list[dict[str, str]]:
    """Cluster failures that reject the cluster: not those of a kind `unmade` says."""
    kinds = unmade(verdicts)
    return [f for f in failures if f.get("kind") not in kinds]


#: The cluster's verdict when some checks did not run (the nodes' are NOT CHECKED).
INCOMPLETE = "INCOMPLETE"


def cluster_verdict(status: str | None, verdicts: Sequence[NodeVerdict],
                    cluster_failed: int) -> str:
    """The whole run's verdict: REJECTED when a node was rejected or unreachable or a
    cluster check failed (`cluster_failed`: the decisive ones); ACCEPTED when every node
    was and every selected check ran (`status`: the end record's, complete or partial: a
    selection's, `-m sanity`, judged at its level); INCOMPLETE otherwise."""
    if any(v.verdict in (REJECTED, UNREACHABLE) for v in verdicts) or cluster_failed:
        return REJECTED
    if status not in (COMPLETE, PARTIAL) or any(v.verdict != ACCEPTED for v in verdicts):
        return INCOMPLETE
    return ACCEPTED


#: Why a run is INCOMPLETE where it stopped before every selected check ran, and where a
#: node was left NOT CHECKED (incomplete_why).
STOPPED, NOT_ALL_JUDGED = ("the run was stopped before every selected check ran",
                           "not every node was judged")


def incomplete_why(status: str | None, not_checked: int, soak: SoakEnd | None = None) -> str:
    """Why a run's verdict is INCOMPLETE, as true of the run: it was stopped before every
    selected check ran (`status` not complete or partial; a soak (its end record's `soak`):
    in which round), and/or `not_checked` nodes were not judged."""
    parts = []
    if status not in (COMPLETE, PARTIAL):
        parts.append(STOPPED if soak is None else soak_stopped(soak))
    if not_checked:
        parts.append(NOT_ALL_JUDGED)
    return "; ".join(parts) or NOT_ALL_JUDGED


def soak_stopped(soak: SoakEnd) -> str:
    """How a soak stopped: 'the soak was stopped: round 2 of 4 not finished' (its last
    round cut short), 'the soak was stopped after round 3' (between rounds, or as the next
    round started), 'the soak stopped after round 1 of 4: round 2 left no results (exit
    status 4)' (a round that could not start)."""
    last, of = soak["rounds"], soak.get("max_rounds")
    rounds = f"round {last}" + (f" of {of}" if of else "")
    if soak.get("stopped"):
        after = f" after {rounds}" if last else ""
        return f"the soak stopped{after}: {soak.get('stopped')}"
    if soak["rounds_finished"] < last:
        return f"the soak was stopped: {rounds} not finished"
    return f"the soak was stopped after {rounds}"


def outcome_of(verdict: str) -> str:
    """A node's or the cluster's verdict as a gate's outcome: ACCEPTED passes; REJECTED and
    UNREACHABLE fail (drain); NOT CHECKED and INCOMPLETE are errors (the tool could not
    judge: never drain)."""
    if verdict == ACCEPTED:
        return PASS
    return FAIL if verdict in (REJECTED, UNREACHABLE) else ERROR


def to_drain(verdicts: Iterable[NodeVerdict]) -> list[NodeVerdict]:
    """The nodes a provider takes out of service: rejected and unreachable."""
    return [v for v in verdicts if v.verdict in (REJECTED, UNREACHABLE)]


#: The longest drain reason written (SLURM shows a node's reason in one line of sinfo).
MAX_DRAIN_REASON = 200


def cut_reason(text: str, limit: int) -> str:
    """`text` in at most `limit` characters: a list of clauses ('3 clause(s) failed: a,
    b, c') cut at a clause, saying how many more ('a, and 2 more'); other text cut at a
    word, with '...'. Never a name cut in the middle."""
    if len(text) <= limit:
        return text
    head, sep, listed = text.partition(": ")
    items = listed.split(", ") if sep else []
    # one pass: the clauses that fit with ', and N more' after them; each clause kept
    # adds at least two characters and takes at most one from N, so the first that does
    # not fit ends it, and one list is joined (not one per count tried: 150,000 clauses)
    kept, length = 0, len(head) + len(sep) - 2
    for keep, item in enumerate(items[:-1], 1):
        length += len(item) + 2
        if length + len(f", and {len(items) - keep} more") > limit:
            break
        kept = keep
    if kept:
        return f"{head}{sep}{', '.join(items[:kept])}, and {len(items) - kept} more"
    cut = text[:max(limit - 3, 0)]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut) + "..."


def drain_command(verdict: NodeVerdict) -> list[str]:
    """The scontrol line that drains a rejected or unreachable node (printed, never run);
    its reason cut at a clause (`cut_reason`) to MAX_DRAIN_REASON characters."""
    prefix = f"pytest-cluster {verdict.verdict.lower()}: "
    reason = prefix + cut_reason(one_line(verdict.reason), MAX_DRAIN_REASON - len(prefix))
    return ["scontrol", "update", f"NodeName={verdict.node}", "State=DRAIN",
            f"Reason={reason}"]


def one_line(text: str) -> str:
    """`text` with every character that is not printable (a newline, a tab, ESC, a bidi
    override) a space: a drain line stays one line, so its comment mark covers all of it
    and a shell reads it as the one command it is."""
    return text if text.isprintable() else "".join(c if c.isprintable() else " "
                                                   for c in text)


def drain_line(verdict: NodeVerdict, not_a_node: str | None = None) -> str:
    """The drain line as a shell command; where the cluster's nodes are no SLURM nodes (a
    simulated cluster; this machine standing for every node), a shell comment saying
    why, so a pipeline that runs these lines cannot drain a real node of that name."""
    line = shlex.join(drain_command(verdict))
    return f"# {not_a_node}: {line}" if not_a_node else line


#: The Kubernetes taint a node not accepted gets: its key, and the effect.
TAINT_KEY = "pytest-cluster/verdict"


def taint_command(verdict: NodeVerdict) -> list[str]:
    """The kubectl line that keeps new pods off a rejected or unreachable node (printed,
    never run): `pytest-cluster/verdict=rejected:NoSchedule`."""
    return ["kubectl", "taint", "nodes", verdict.node,
            f"{TAINT_KEY}={verdict.verdict.lower()}:NoSchedule", "--overwrite"]


def taint_line(verdict: NodeVerdict, not_a_node: str | None = None) -> str:
    """The taint line as a shell command; a comment where the node is not a real one."""
    line = shlex.join(taint_command(verdict))
    return f"# {not_a_node}: {line}" if not_a_node else line


def said_once(verdicts: Iterable[NodeVerdict]) -> list[tuple[str, list[str], str]]:
    """(verdict, nodes, reason) for the nodes not accepted, in the spec's order, one node
    each; but the nodes this machine could not check for the same fault are one entry,
    saying the fault once: ('NOT CHECKED', [gpu-001, ..., gpu-004], 'this machine could not
    check them: this machine cannot resolve the name ...')."""
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
             controller_reason(fault, len(group)) if len(group) > 1 else group[0].reason)
            for fault, group in order]


def by_verdict(verdicts: Iterable[NodeVerdict]) -> dict[str, list[str]]:
    """Verdict -> nodes, in the order ACCEPTED, REJECTED, UNREACHABLE, NOT CHECKED."""
    found: dict[str, list[str]] = defaultdict(list)
    for verdict in verdicts:
        found[verdict.verdict].append(verdict.node)
    return {name: found[name] for name in (ACCEPTED, REJECTED, UNREACHABLE, NOT_CHECKED)}
