"""What a gate (a SLURM prolog, a health check, a pipeline's step) does with one run: PASS,
FAIL or ERROR, from the run's verdict.json and pytest's exit status.

- FAIL: some node's outcome is FAIL (rejected: a check failed; unreachable: it did not
  answer). Only FAIL takes a node out of service.
- ERROR: the tool could not judge. This machine could not check nodes (a name it
  cannot resolve, its ssh credentials refused, ssh or srun missing, no node answering at
  all: their `controller_fault`, said once for the nodes it hit). The run wrote no
  verdict.json (a spec or option that is
  not valid, exit 4; an interpreter that cannot be run, 126/127; the gate's time limit,
  124/137; pytest-cluster's own crash, 3; interrupted, 2), or its verdict is not decided
  (INCOMPLETE: a node NOT CHECKED), or a check across nodes failed with no node to blame.
  An ERROR never drains a node: it says why, loudly.
- PASS: every node the run covered passed every check at the level that ran, and pytest
  exited 0; the checks the kill switch turned off (verdict.json's `disabled`) are named
  on its line, never counted as passed.

A verdict holds until its `valid_until` (age.py): past it, or made longer ago than the
gate's --max-age, or made in the future beyond a clock's skew, it is an ERROR ("stale")
that decides nothing: never a PASS, and a FAIL in it drains no node.

What the gate reads is read as regular files only, without waiting (regular_file: a FIFO
in verdict.json's or the log's place is refused at once, naming it), to a bound; a verdict
that lists a node twice or more nodes than one run writes (hostlist.MAX_NODES) is refused
before anything is decided or drained. Every line it says is one line (control characters
escaped), bounded, a cut marked.

Only the standard library is imported here (a prolog's budget is seconds).
"""

from __future__ import annotations

import gc
import json
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from pytest_cluster.contract.declaration import Actor
from pytest_cluster.errors import InputError, log_line
from pytest_cluster.evidence.regular_file import read_regular, read_tail
from pytest_cluster.evidence.verdict.age import age_problem, age_said
from pytest_cluster.evidence.verdict.cluster_verdict import INCOMPLETE, incomplete_why, unmade
from pytest_cluster.evidence.verdict.drain import drain_command, fault_code
from pytest_cluster.evidence.verdict.nodes import (
    ERROR,
    FAIL,
    PASS,
    NodeVerdict,
    VerdictDocument,
    outcome_of,
    said_once,
)
from pytest_cluster.hostlist import MAX_NODES, compress_hostlist, is_valid_hostname

#: verdict.json is read up to this size (a node every check of which failed is ~40 kB
#: of it; one that passed, ~400 bytes).
MAX_VERDICT_BYTES = 64 * 2**20
#: At most this many of '[', '{', ',' and ':' in verdict.json (each list, object, item and
#: member has one), counted before it is parsed: a run writes about one per 17 bytes (the
#: trial example's every node rejected: 6,772 in 118 KB), so MAX_VERDICT_BYTES of it has
#: fewer (one per 16 bytes); parsed, this many values of the costliest kind (short
#: strings) take under 400 MiB, where 64 MiB of '[],' took 1.7 GB and 23 s.
MAX_JSON_VALUES = MAX_VERDICT_BYTES // 16
#: The tail of a run's log read for why it ended (a usage error is its last lines).
LOG_TAIL_BYTES = 64 * 2**10
MAX_WHY = 300
OUTCOMES = frozenset({PASS, FAIL, ERROR})
#: Who acts on a failure, as verdict.json may say it (any other word is not said).
ACTORS = frozenset(actor.value for actor in Actor)
#: The most characters of a node's first failure's action a FAIL line says.
MAX_ACTION = 200
#: Exit codes after which no verdict can be trusted to be the whole truth, and why.
EXIT_MEANING = {
    2: "interrupted",
    3: "pytest-cluster's own error (pytest: internal error)",
    4: "the spec or an option is not valid (pytest: usage error)",
    5: "no check was selected",
    124: "the gate's time limit was reached (timeout)",
    125: "the time limit could not be applied (timeout failed)",
    126: "the interpreter cannot be run",
    127: "the interpreter was not found",
    137: "killed at the gate's time limit (SIGKILL)",
}


@dataclass(frozen=True)
class Decision:
    """A gate's decision: the outcome, one line per reason, the nodes to take out and, on
    PASS or FAIL, the nodes this run accepted (each passed every check of its own: those a
    gate may put back, resume.py)."""

    outcome: str  # PASS, FAIL, ERROR
    lines: tuple[str, ...]
    failed: tuple[NodeVerdict, ...] = ()
    simulated: bool = False
    accepted: tuple[str, ...] = ()

    @property
    def exit_code(self) -> int:
        """0 PASS, 1 FAIL, 2 ERROR."""
        return {PASS: 0, FAIL: 1}.get(self.outcome, 2)


def exit_meaning(status: int) -> str:
    """Why a run that exited `status` ended: '4: the spec or an option is not valid ...'."""
    if status in EXIT_MEANING:
        return f"exit {status}: {EXIT_MEANING[status]}"
    if status > 128:
        return f"exit {status}: killed by signal {status - 128}"
    return f"exit {status}"


def _printable(text: str) -> str:
    """`text` as part of one line: control characters escaped, at most MAX_WHY
    characters, a cut marked (errors.log_line)."""
    text = text.strip()
    return text if len(text) <= MAX_WHY and text.isprintable() else log_line(text, MAX_WHY)


#: How the run's last line starts, that says where its manifest is (sealing.sealed_line).
SEALED_LINE = "manifest: "


def log_reason(log: Path | None) -> str:
    """The line of a run's log that says why it ended: its last 'ERROR:' line (pytest's
    usage errors), else its last line that is not blank and not the manifest's
    (sealing.sealed_line: where the evidence is, no reason), pytest's summary bare of its
    '=' rule ('2 failed, 10 passed in 3.10s'); '' without one."""
    if log is None:
        return ""
    try:  # a log that is no regular file (a FIFO) is InputError, the caller's to say
        tail = read_tail(log, LOG_TAIL_BYTES).decode("utf-8", "replace")
    except OSError:
        return ""
    lines = [line.strip().strip("=").strip() for line in tail.splitlines()]
    lines = [line for line in lines if line and not line.startswith(SEALED_LINE)]
    errors = [i for i, line in enumerate(lines) if line.startswith(("ERROR:", "E   "))]
    if not errors:
        return _printable(lines[-1] if lines else "")
    chosen = lines[errors[-1]]
    if chosen.endswith(":"):  # 'ERROR: spec.yaml: 2 problems in the spec:', then each
        chosen += " " + "; ".join(lines[errors[-1] + 1:])
    return _printable(chosen)


def _refuse_constant(name: str) -> None:
    raise ValueError(f"{name} is not a number")


@contextmanager
def uncollected() -> Iterator[None]:
    """Python's cycle collector paused: what the gate makes (parsed JSON, a verdict per
    node) holds no cycle, and collecting while millions of lists are made took 5x as long
    as making them (2 million: 0.71 s, 0.13 s paused; 65,536 nodes decided: 0.57, 0.29)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def read_verdict(path: Path) -> VerdictDocument:
    """verdict.json as written by the run: a regular file (a FIFO is refused, never waited
    on) within MAX_VERDICT_BYTES and MAX_JSON_VALUES (counted before it is parsed), a JSON
    object, finite numbers only, at most MAX_NODES node entries (counted as they are
    parsed: a larger one is refused there, not built whole); InputError (naming the
    file), ValueError or OSError says what is wrong."""
    data = read_regular(path, MAX_VERDICT_BYTES)
    values = sum(data.count(mark) for mark in (b"[", b"{", b",", b":"))
    if values > MAX_JSON_VALUES:
        raise ValueError(f"{values} lists, objects, items and members ('[', '{{', ',', "
                         f"':'), more than the {MAX_JSON_VALUES} a run's verdict holds")
    text = data.decode("utf-8")
    del data  # not held while it is parsed
    entries = 0

    def counted(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal entries
        made = dict(pairs)
        if len(made) != len(pairs):  # json keeps the last: a forged one after the run's
            keys = [key for key, _ in pairs]
            twice = next(key for i, key in enumerate(keys) if key in keys[:i])
            raise ValueError(f"key {log_line(twice, 60)!r} is given twice in one object "
                             "(a run writes each once)")
        if "node" in made:
            entries += 1
            if entries > MAX_NODES:
                raise ValueError(too_many_nodes("more than"))
        return made

    try:
        with uncollected():
            document = json.loads(text, parse_constant=_refuse_constant,
                                  object_pairs_hook=counted)
    except RecursionError:
        raise ValueError("nested too deeply") from None
    if not isinstance(document, dict):
        raise ValueError("not a JSON object")
    return cast("VerdictDocument", document)  # what a run writes; decide() checks it


def too_many_nodes(count: str) -> str:
    return (f"{count} {MAX_NODES} node entries: one run writes at most {MAX_NODES} (a "
            "spec's most)")


def _nodes(document: Mapping[str, Any]) -> list[NodeVerdict]:
    """The node entries of verdict.json; ValueError where one is not as written, where
    one node is listed twice or where there are more than one run writes."""
    found = document.get("nodes")
    if not isinstance(found, list):
        raise ValueError("'nodes' is not a list")
    if len(found) > MAX_NODES:
        raise ValueError(too_many_nodes(f"{len(found)}, more than"))
    nodes = []
    seen: set[str] = set()
    for entry in found:
        if not isinstance(entry, dict) or not isinstance(entry.get("node"), str) \
                or not isinstance(entry.get("verdict"), str) \
                or not isinstance(entry.get("reason"), str) \
                or entry.get("outcome") not in OUTCOMES:
            raise ValueError("a node entry lacks node, verdict, outcome or reason")
        if entry["outcome"] != outcome_of(entry["verdict"]):
            raise ValueError(f"node {entry['node'][:60]!r}: outcome {entry['outcome']} does "
                             f"not follow from verdict {entry['verdict'][:20]!r}")
        if not is_valid_hostname(entry["node"]):
            raise ValueError(f"a node's name is not a host name: {entry['node'][:60]!r}")
        if entry["node"].lower() in seen:  # a host name is one host in any case
            raise ValueError(f"node {entry['node']} is listed twice (one run writes each "
                             "node once; a host name's case does not matter)")
        seen.add(entry["node"].lower())
        fault, code = entry.get("controller_fault"), entry.get("code")
        known = fault_code(code) if isinstance(code, str) else ""
        action, actor = entry.get("action"), entry.get("actor")
        nodes.append(NodeVerdict(
            entry["node"], entry["verdict"], entry["reason"],
            controller_fault=fault if isinstance(fault, str) else "", code=known,
            action=log_line(action, MAX_ACTION) if known and isinstance(action, str) else "",
            actor=actor if known and actor in ACTORS else ""))
    if not nodes:
        raise ValueError("it lists no node (a run writes each node it covered)")
    for key in ("nodes_checked", "nodes_in_spec"):
        count = document.get(key, len(nodes))  # a verdict.json of an earlier version: none
        if type(count) is not int or not 0 <= count <= MAX_NODES:
            raise ValueError(f"{key!r} is not a count of nodes")
        if (count > len(nodes)) if key == "nodes_checked" else (count < len(nodes)):
            raise ValueError(f"{key!r} is {count}, where 'nodes' lists {len(nodes)}: its "
                             "counts disagree")
    return nodes


def _fail_line(node: NodeVerdict) -> str:
    """A failed node's line: its verdict and reason, then its first failure's fault code,
    who acts and what to do where verdict.json gives them (`fault_said`: the code its drain
    reason starts with, which a simulated run's gate drains nothing under and a prolog's
    stderr shows only here; `_nodes` kept only a code that is one, a known actor and a
    bounded one-line action)."""
    return (f"FAIL {_printable(node.node)}: {node.verdict.lower()}: "
            f"{_printable(node.reason)}{node.fault_said}")


def decide(document: Mapping[str, Any] | None, exit_status: int, why_missing: str = "",
           log_line: str = "", now: float | None = None,
           max_age: float | None = None) -> Decision:
    """The gate's decision from verdict.json (`document`; None: the run wrote none for
    this run, `why_missing` says why) and pytest's exit status, at `now` (epoch seconds;
    None: the clock's, read once) for a verdict made at most `max_age` seconds before
    (None: any age its valid_until allows)."""
    if document is None:
        parts = [exit_meaning(exit_status), why_missing, log_line]
        why = "; ".join(part for part in parts if part)  # each one line (gate: the path)
        return Decision(ERROR, (f"ERROR: the check did not finish ({why}); no node is "
                                "drained for it",))
    try:  # a stale verdict decides nothing: refused before its nodes are looked at
        stale = age_problem(document, time.time() if now is None else now, max_age)
        nodes = _nodes(document)
    except ValueError as exc:
        return Decision(ERROR, (f"ERROR: verdict.json cannot be read: {exc}",))
    if stale is not None:
        return Decision(ERROR, (f"ERROR: {_printable(stale)}; no node is drained for it",))
    simulated = document.get("simulated") is True
    level = _printable(str(document.get("level", "")))
    failed = tuple(n for n in nodes if n.outcome == FAIL)
    # the nodes this machine could not check for one fault are one line (said_once); its
    # reason may be cut, never the fault it ends with (bounded by _nodes, as _fail_line's)
    lines = [f"ERROR {_printable(compress_hostlist(names))}: not checked: {_printable(why)}"
             f"{fault}" for verdict, names, why, fault in said_once(nodes)
             if outcome_of(verdict) == ERROR]
    said = {n.node for n in nodes if n.outcome == ERROR}
    # where this machine could not check nodes, the checks across them it could not make
    # are said by those nodes' line
    unmade_kinds = unmade(nodes) if any(n.controller_fault for n in nodes) else frozenset()
    checks = document.get("cluster_checks_failed")
    for check in checks if isinstance(checks, list) else []:
        # a check of one node that could not judge it (undecided) is its node's line; a
        # check that names its culprits failed them (their FAIL lines say it); one not
        # established because nodes this machine could not check did not answer is
        # theirs (their line says why)
        if isinstance(check, dict) and str(check.get("where", "")).split(",")[0] not in said \
                and not (failed and check.get("culprits")) \
                and check.get("kind") not in unmade_kinds:
            lines.append(f"ERROR: a check across nodes failed with no node to blame: "
                         f"{_printable(str(check.get('clause', '')))}: "
                         f"{_printable(str(check.get('message', '')))}")
    if failed:  # the failed nodes are drained; what could not be judged is said, not drained
        return Decision(FAIL, (*(_fail_line(n) for n in failed),
                               *(f"{line} (not drained)" for line in lines)),
                        failed, simulated, tuple(n.node for n in nodes if n.outcome == PASS))
    if document.get("outcome") != PASS and not lines:  # every node judged: the run stopped
        given = document.get("incomplete")  # a verdict.json of an earlier version: none
        why = given if isinstance(given, str) and given else \
            incomplete_why(str(document.get("status")), 0)
        lines.append(f"ERROR: the run's verdict is {_printable(str(document.get('verdict')))}"
                     + (f": {_printable(why)}" if document.get("verdict") == INCOMPLETE
                        else ""))
    checked = document.get("nodes_checked", len(nodes))
    if checked != len(nodes) and not lines:  # _nodes: checked < len(nodes)
        lines.append(f"ERROR: the run checked {checked} of the {len(nodes)} node(s) its "
                     "verdict lists")
    if exit_status != 0:
        lines.append(f"ERROR: pytest ended with {exit_meaning(exit_status)}"
                     + (f": {log_line}" if log_line else ""))
    if lines:
        return Decision(ERROR, (*lines, "no node is drained for it"), simulated=simulated)
    return Decision(PASS, (f"PASS: {len(nodes)} node(s) passed every check at level "
                           f"{level}: {_printable(compress_hostlist(n.node for n in nodes))}"
                           f"{age_said(document)}"
                           + disabled_said(document),),
                    simulated=simulated, accepted=tuple(n.node for n in nodes))


def disabled_said(document: Mapping[str, Any]) -> str:
    """' (1 clause(s) disabled: gpus.row_remap until 2026-12-31)' where the run's kill
    switch turned clauses off (verdict.json's `disabled`; a verdict of an earlier version
    has none): a PASS says what it did not check; '' where none was."""
    found = document.get("disabled")
    if not isinstance(found, list) or not found:
        return ""
    named = ", ".join(f"{entry.get('clause')} until {entry.get('until')}"
                      for entry in found[:20] if isinstance(entry, dict))
    return f" ({len(found)} clause(s) disabled: {_printable(named)})"


def verdict_path(run: Path) -> Path:
    """verdict.json of a run directory, or of the latest run under a reports directory."""
    return run / "verdict.json" if (run / "verdict.json").exists() else \
        run / "latest" / "verdict.json"


def gate(run: Path, exit_status: int, log: Path | None = None,
         since: float | None = None, max_age: float | None = None) -> Decision:
    """The decision for the run under `run` (a run directory or --cluster-reports'), which
    exited `exit_status`; a verdict.json older than `since` (epoch seconds: when this
    gate's run started) is another run's, and so none; one made more than `max_age`
    seconds ago, or past its valid_until, is stale (the clock read once, now)."""
    now = time.time()
    why_missing = ""
    document: VerdictDocument | None = None
    path = run / "verdict.json"
    try:
        path = verdict_path(run)  # a path too long for the system: OSError
        if since is not None and path.stat().st_mtime < since - 1:
            why_missing = f"{_printable(str(path))} is an earlier run's"
        else:
            document = read_verdict(path)
    except FileNotFoundError:
        why_missing = "it wrote no verdict.json"
    except InputError as exc:  # it names the file
        why_missing = _printable(str(exc))
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        why_missing = f"{_printable(str(path))} cannot be read: {_printable(str(exc))}"
    with uncollected():
        return decide(document, exit_status, why_missing, log_reason(log), now, max_age)


def drain_commands(decision: Decision) -> list[list[str]]:
    """The scontrol commands that drain the nodes a decision failed; none for a simulated
    run (its nodes are no SLURM nodes) and none unless the outcome is FAIL."""
    if decision.outcome != FAIL or decision.simulated:
        return []
    return [drain_command(node) for node in decision.failed]

