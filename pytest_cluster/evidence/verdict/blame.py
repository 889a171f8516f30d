"""What a result line says of whom it blames: the error kinds that blame no node (a
search undecided, a node busy, a tool error, this machine's fault), whether the node
answered at all, and the nodes a check of several names as culprits.

A check that failed with an error kind in NOT_BLAMING is not judged (judged): it fails,
but rejects no node; one that names `culprits` fails those nodes too (nodes.py
decides each node's verdict from these).
"""

from __future__ import annotations

from pytest_cluster.errors import UnitError
from pytest_cluster.evidence.sinks.results import ResultLine, outcome
from pytest_cluster.hostlist import expand_hostlist
from pytest_cluster.measure.nccl_ras import RANK_DEAD

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
#: The error kind of a node's fabric.pcie whose every counted port has no PCIe link of its
#: own: an SR-IOV virtual function (a cloud VM's), or an interface with no PCI device (a
#: veth, a bond, a VLAN): not measured, the node NOT CHECKED (NOT_MEASURED), neither
#: passed nor failed.
VIRTUAL_PORT = "virtual_port"
#: The error kind of a host.golden case with no golden value to compare the node with: no
#: value of a field held by a strict majority of the nodes (three VBIOS versions on three
#: nodes; two nodes that differ), or the golden node did not answer. Nothing is singled
#: out: the node is NOT CHECKED (NOT_MEASURED), neither it nor the cluster failed.
NO_GOLDEN = "no_golden"
#: The error kind of a host.golden case whose golden file (the spec's) cannot be read or
#: is not one: a slip of the spec's (TOOL_ERROR), no node's fault.
GOLDEN_FILE = "golden_file"
#: Error kinds of a check not made because another job held the node (SLURM: busy),
#: because the tool it runs is not installed there (tool_missing: no dcgmi), or because
#: what it reads is not the node's to read (virtual_function: a VM's NICs are SR-IOV
#: virtual functions, whose PCIe link is the host's), or because host.golden has nothing to
#: compare it with (NO_GOLDEN): the node is NOT CHECKED, saying
#: so; neither it nor the cluster failed.
NOT_MEASURED = frozenset({"busy", "tool_missing", VIRTUAL_PORT, NO_GOLDEN})
#: Error kinds of a cluster check that could not be established because some node did not
#: answer ("the same on every node"): it fails, but it rejects the cluster only through
#: that node's own verdict (UNREACHABLE rejects; busy leaves it INCOMPLETE).
NOT_ESTABLISHED = frozenset({"not_all_nodes"})
#: The error kind of a check of our suite that ended with an exception that is no verdict.
TOOL_FAULT = "tool_fault"
#: Error kinds of a check the tool itself could not make: the interpreter the spec names
#: (cluster.python) is not there; the NIC probe read another network namespace's /sys; a
#: check of ours ended with an exception that is no verdict (TOOL_FAULT); DCGM's diagnostic
#: could not test the GPUs as the node is set up (dcgm_config: persistence mode off, error
#: id 29) or did not give a verdict (dcgm_error: it timed out, printed no JSON, skipped a
#: test of the level); the spec's golden file cannot be read (GOLDEN_FILE). A spec's slip,
#: a wrong vantage point, a fault of the tool or of the node's setup its diagnostic reports
#: is no node's hardware fault: it drains none.
TOOL_ERROR = frozenset({"interpreter_missing", "wrong_namespace", TOOL_FAULT, "dcgm_config",
                        "dcgm_error", GOLDEN_FILE})
#: Error kinds whose fault is this machine's, the controller's, not the node's (the
#: launchers' ErrorKind.controller_side): a node name it cannot resolve, its ssh
#: credentials refused, ssh or srun not installed here, no SLURM controller answering.
#: Nothing was learned about the node: it is NOT CHECKED, saying the cause, never drained.
CONTROLLER_SIDE = frozenset({"controller", "auth_refused"})
#: Error kinds after which a check blames no node: neither its own (NOT CHECKED for it,
#: never drained) nor, for a check of several nodes, those it names.
NOT_BLAMING = NO_CULPRIT | NOT_MEASURED | TOOL_ERROR | NOT_ESTABLISHED | CONTROLLER_SIDE
#: Error kinds of a job that hung because a rank of it died or wedged, as NCCL's RAS says
#: (RANK_DEAD: the ranks it calls DEAD single out their nodes, measure/nccl_ras.py). Judged
#: as any job that failed: the case's node fails, and the culprits it names, the nodes of
#: those ranks; its fault is the kind's (faults.py), not the clause's: nothing was slow.
RAS_BLAMED = frozenset({RANK_DEAD})
#: The most characters of a failure message a verdict keeps (clean_message).
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
