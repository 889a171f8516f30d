"""What a failed case means to whoever is paged: its fault (a stable code, an action, who
acts: contract/declaration.py `Fault`), and the name the fault is declared under.

A clause's failure has the fault its declaration declares (contract/clauses.py; a family's
members and instances share it). A failure that says nothing of its clause has its own,
declared here once: an error kind after which the case judged nothing of the clause (the
node did not answer, this machine or the tool failed, a check across nodes that singles no
node out: KINDS), and a case derived from the whole run (a baseline's, a soak's: DERIVED).
A kind or a derived family may have a variant per section of the clause it is about
(`undecided[storage]`: the storage team acts, not the network's), the section of a derived
case being its compared clause's (`baseline.performance[storage.write]`: storage).

Every fault here is in docs/faults.md (generated) and in tests/contract/fault_codes.txt,
which pins that a code never changes its meaning.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from pytest_cluster.contract.clauses import CLAUSES, declared
from pytest_cluster.contract.declaration import Actor, Declaration, Fault
from pytest_cluster.evidence.verdict import blame
from pytest_cluster.measure.nccl_ras import RANK_DEAD

if TYPE_CHECKING:
    from pytest_cluster.evidence.sinks.results import ResultLine

HW, NET, STORAGE = Actor.PROVIDER_HARDWARE, Actor.PROVIDER_NETWORK, Actor.STORAGE
SPEC, TOOL = Actor.BUYER_SPEC, Actor.TOOL


@dataclass(frozen=True)
class Failure:
    """A failure that is no clause's: what it means, and its fault."""

    means: str
    fault: Fault


def _failure(means: str, code: str, actor: Actor, action: str) -> Failure:
    return Failure(means, Fault(code, action, actor))


#: The error kinds after which a case judged nothing of its clause, each with its fault
#: (evidence/verdict/blame.py groups them: NO_ANSWER, CONTROLLER_SIDE, TOOL_ERROR,
#: NOT_MEASURED, NO_CULPRIT, NOT_ESTABLISHED, RAS_BLAMED; launchers/result.py ErrorKind). A
#: timeout of the host probe, the first thing asked, is `unreachable` (blame.no_answer).
KINDS: dict[str, Failure] = {
    "unreachable": _failure(
        "the node did not answer: its address refused or stayed silent",
        "PC-NODE-UNREACHABLE", HW,
        "check the node's power and its BMC, then its management network (ping, ssh)"),
    "cancelled": _failure(
        "the check was stopped before it ended (Ctrl-C, a signal, the launcher closed)",
        "PC-RUN-CANCELLED", TOOL, "run the check again; nothing was learned of the node"),
    "auth_refused": _failure(
        "this machine's credentials were refused by the node (ssh)",
        "PC-CONTROLLER-AUTH", TOOL,
        "fix the key or user the launcher logs in with (this machine's, not the node's)"),
    "controller": _failure(
        "this machine could not launch the probe (a name it cannot resolve, no ssh or srun, "
        "no SLURM controller answering)",
        "PC-CONTROLLER-LAUNCH", TOOL,
        "fix this machine: name resolution, the launcher's client, the SLURM controller"),
    "interpreter_missing": _failure(
        "the Python interpreter the spec names (cluster.python) is not on the node",
        "PC-SPEC-PYTHON", SPEC, "fix cluster.python in the spec, or install that Python"),
    "wrong_namespace": _failure(
        "the NIC probe read another network namespace's /sys",
        "PC-TOOL-NAMESPACE", TOOL, "run the probes in the node's own network namespace"),
    blame.TOOL_FAULT: _failure(
        "a check of pytest-cluster ended with an exception that is no verdict (its bug)",
        "PC-TOOL-FAULT", TOOL,
        "report it with the case's traceback; the node is not at fault"),
    RANK_DEAD: _failure(
        "the job hung because a rank on the node stopped answering: NCCL's RAS, asked "
        "by the ranks still waiting, named it DEAD (nothing was measured slow)",
        "PC-NODE-RANK-DEAD", HW,
        "a rank on this node stopped answering NCCL (RAS: DEAD): read the node's XIDs and "
        "kernel log (nvidia-smi -q, dmesg), reset its GPUs or reboot it"),
    "dcgm_config": _failure(
        "DCGM's diagnostic could not test the GPUs as the node is set up (a configuration "
        "finding: persistence mode off, error id 29; no hardware was found at fault)",
        "PC-DCGM-CONFIG", HW,
        "fix the node's setup DCGM names (persistence mode: nvidia-persistenced or "
        "nvidia-smi -pm 1; graphics processes; CUDA environment), then run the check again"),
    "dcgm_error": _failure(
        "DCGM's diagnostic gave no verdict: it timed out, printed no JSON, failed to start, "
        "or skipped a test of the level",
        "PC-DCGM-ERROR", TOOL,
        "read the case's raw (dcgmi's exit code, stderr, skipped tests): restart "
        "nv-hostengine, free the GPUs, and run the check again"),
    "tool_missing": _failure(
        "the tool the check runs is not installed on the node (DCGM's dcgmi): not checked",
        "PC-TOOL-MISSING", TOOL,
        "install the tool on the node (DCGM: datacenter-gpu-manager, nv-hostengine "
        "running) or leave its clause out of the contract"),
    blame.VIRTUAL_PORT: _failure(
        "no counted port has a PCIe link of its own: SR-IOV virtual functions (a cloud "
        "VM's), whose link is the host's, or interfaces with no PCI device (a veth, a "
        "bond): not checked",
        "PC-SPEC-PCIE-VIRTUAL", SPEC,
        "write fabric.pcie: false for a VM (its provider checks the host's link) or for "
        "virtual interfaces, or count the physical ports (fabric.devices)"),
    blame.NO_GOLDEN: _failure(
        "host.golden had no golden value to compare the node with (no value held by a "
        "strict majority of the nodes, or the golden node did not answer): not checked",
        "PC-GOLDEN-UNDECIDED", HW,
        "no golden: name a golden node or file (host.golden), or fix the nodes until a "
        "strict majority agrees (the case says each value and its nodes)"),
    blame.GOLDEN_FILE: _failure(
        "the spec's golden file (host.golden) cannot be read or is not a file of golden "
        "values: not checked",
        "PC-SPEC-GOLDEN-FILE", SPEC,
        "fix host.golden's file (the case says what is wrong with it), or name a golden "
        "node or majority"),
    "busy": _failure(
        "another job held the node: not measured",
        "PC-NODE-BUSY", TOOL, "run the check when the node is free (a prolog, a reservation)"),
    "not_all_nodes": _failure(
        "a check across nodes could not be made: some node did not answer",
        "PC-CLUSTER-INCOMPLETE", HW,
        "fix the node that did not answer (its own failure says why), then run again"),
    blame.UNDECIDED: _failure(
        "below the bar with no node to blame (no known-good node to compare with)",
        "PC-CLUSTER-UNDECIDED", NET,
        "look at what the nodes share (a leaf or spine switch, its uplinks); run again "
        "with a known-good node"),
    f"{blame.UNDECIDED}[storage]": _failure(
        "a storage figure below the bar on every node, none singled out",
        "PC-STORAGE-UNDECIDED", STORAGE,
        "call the storage team: the filesystem holds every node back, not one node"),
    blame.NOT_COMPARABLE: _failure(
        "a figure that cannot be compared with the baseline's (another unit or basis)",
        "PC-BASELINE-NOT-COMPARABLE", SPEC,
        "make a new baseline with this contract (the contract changed since)"),
}

#: The cases derived from the whole run (evidence/record/derived_cases.py TESTS), each
#: family with its fault.
DERIVED: dict[str, Failure] = {
    "baseline.nodes": _failure(
        "the cluster's nodes are not the baseline's", "PC-BASELINE-NODES", HW,
        "put the missing node back, or make a new baseline if the change was planned"),
    "baseline.hardware": _failure(
        "a part of the node changed since the baseline (model, serial, firmware)",
        "PC-BASELINE-HARDWARE", HW,
        "if the part was replaced on purpose (an RMA), accept it against the baseline; "
        "otherwise find who changed it"),
    "baseline.performance": _failure(
        "a figure of the node fell beyond tolerance since the baseline",
        "PC-BASELINE-PERF", HW,
        "compare the node's GPUs and host with the baseline's (clocks, power, firmware); "
        "the case says the change"),
    "baseline.performance[interconnect]": _failure(
        "a network figure fell beyond tolerance since the baseline",
        "PC-BASELINE-PERF-NET", NET,
        "check the node's NICs, cables and switch ports against the baseline's"),
    "baseline.performance[fabric]": _failure(
        "a rail's figure fell beyond tolerance since the baseline",
        "PC-BASELINE-PERF-RAIL", NET, "check that rail's cable, transceiver and switch port"),
    "baseline.performance[storage]": _failure(
        "a storage figure fell beyond tolerance since the baseline",
        "PC-BASELINE-PERF-STORAGE", STORAGE,
        "call the storage team: the filesystem is slower than at the baseline"),
    "soak.availability": _failure(
        "the node was down longer than the SLA allows during the soak",
        "PC-SOAK-DOWN", HW, "read the node's outages in the soak's evidence and its BMC log"),
    "soak.sla": _failure(
        "the cluster's availability over the soak fell below the SLA: credit is owed",
        "PC-SOAK-SLA", HW, "fix the nodes that were down; the credit owed is in the case"),
    "soak.counters": _failure(
        "a port's error counters grew over the soak", "PC-SOAK-PORT-ERRORS", NET,
        "replace the port's cable or transceiver; check the switch port"),
    "soak.stability": _failure(
        "a figure was not steady over the soak's rounds", "PC-SOAK-UNSTEADY", HW,
        "look at the rounds the figure fell in (throttling, cooling, a neighbour's load)"),
}

#: The error kinds of a node's own failure of a clause, without a number: the clause's
#: fault (its probe timed out, crashed, said what cannot be). Every other kind, and every
#: kind the launchers know, is in KINDS (tests/evidence/verdict/test_faults.py).
THE_CLAUSES = frozenset({"timeout", "crashed", "bad_output", "failed", "cannot_measure"})

_BRACKETS = re.compile(r"\[[^\]]*\]")


def _family(clause: str) -> str:
    return clause.split("[", 1)[0]


def section_of(clause: str) -> str:
    """The section a failure is about: its clause's ('storage' of 'storage.write'); a
    derived case's, its compared clause's ('gpus' of
    'baseline.performance[gpus.matmul.bf16]')."""
    if _family(clause) in DERIVED and "[" in clause:
        clause = clause.partition("[")[2]
    return re.split(r"[.\[]", clause, maxsplit=1)[0]


def _variant(table: Mapping[str, Failure], name: str, section: str) -> str:
    return f"{name}[{section}]" if f"{name}[{section}]" in table else name


def declaration_of(clause: str) -> Declaration | None:
    """The declaration of a clause as a case names it: its family ('storage.write',
    'interconnect.busbw[inter_node]'), an instance ('storage[/data].write') or a member
    ('host.software.torch'); None for no declared clause."""
    for written in (clause, _BRACKETS.sub("", clause)):
        name = written
        while name:
            try:
                return declared(name)
            except KeyError:
                name = name.rpartition(".")[0]
    return None


def fault_of(clause: str, record: Mapping[str, object]) -> tuple[str, Fault] | None:
    """The fault of a failed case of `clause` whose line (or properties) is `record`, with
    the name it is declared under (a clause, an error kind, a derived family); None where
    nothing declares one (a test of your own)."""
    # a line, or the properties a line is made of (the same keys)
    kind = "unreachable" if blame.no_answer(cast("ResultLine", record)) \
        else record.get("error_kind")
    section = section_of(clause)
    if isinstance(kind, str) and kind in KINDS:
        name = _variant(KINDS, kind, section)
        return name, KINDS[name].fault
    if _family(clause) in DERIVED:
        name = _variant(DERIVED, _family(clause), section)
        return name, DERIVED[name].fault
    found = declaration_of(clause)
    if found is None or found.fault is None:
        return None
    return found.id, found.fault


#: The keys a failed case's line and JUnit properties carry its fault in.
FAULT_KEYS = ("code", "action", "actor")


def fault_properties(clause: str, record: Mapping[str, object]) -> list[tuple[str, str]]:
    """(key, value) of a failed case's fault: code, action, actor; none where it has
    none, or where `record` says them already."""
    found = fault_of(clause, record)
    if found is None or "code" in record:
        return []
    fault = found[1]
    return list(zip(FAULT_KEYS, (fault.code, fault.action, fault.actor.value), strict=True))


def every_fault() -> Iterator[tuple[str, Fault]]:
    """Every fault declared, with the name it is declared under: the clauses' (ours and the
    loaded extensions'), the error kinds', the derived cases'."""
    yield from ((d.id, d.fault) for d in CLAUSES if d.fault is not None)
    yield from ((name, failure.fault) for name, failure in {**KINDS, **DERIVED}.items())
