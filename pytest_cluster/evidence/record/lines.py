"""The records a run writes, declared once: results.jsonl's lines (the run line, a case's
result line, a soak's round line, the end line) and what they hold. evidence/sinks/results.py
writes and reads them, the hooks (hookspecs.py) pass them to every sink, the verdicts,
tallies and reports read them. A node's verdict (verdict.json's entry, what
`pytest_cluster_node_verdict` passes) is declared beside verdict.json's other parts:
`pytest_cluster.evidence.verdict.nodes.NodeEntry`; the manifest's predicate is here, its
envelope and statement in evidence/bundle/ (which imports nothing else of the evidence)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TypeAlias, TypedDict, TypeGuard

if TYPE_CHECKING:
    from pytest_cluster.evidence.record.plan import NotChecked, Selection


class ResultLine(TypedDict, total=False):
    """A result line of results.jsonl, as `report_record` makes it from a finished case and
    every reader takes it (the ledger, the verdicts, the tallies, the reports, the hooks).
    What a test recorded through `Evidence` is among its keys; a test of your own may add
    more (any JSON value), so readers take it as a Mapping."""

    type: str  # "result"
    nodeid: str  # pytest's id of the case
    case: str  # the case id (stable across directories), for contract cases
    clause: str  # the clause family the case checks ('storage.write')
    spec_key: str  # the instance ('storage[/data].write'); the clause when none is recorded
    outcome: str  # passed, failed, skipped, not_run (see `outcome`)
    phase: str  # setup or call
    duration_s: float
    finished_at: float  # epoch seconds
    message: str  # why it failed or was skipped
    node: str | None  # None: a case about no one node, not run
    gpu: int
    gpu_uuid: str
    gpu_serial: str
    filesystem: str
    collective: str
    payload: int
    node_count: int
    spec_line: int
    requirement: str
    #: where the bound came from when the spec's profile supplied it ('profile NAME: URL
    #: (what it says)', contract/reading/profiles.py); absent where the spec wrote it
    bound_source: str
    theoretical: str
    derivation: str
    measured: Any  # in the clause's unit
    required: Any
    comparison: str
    unit: str
    measured_base: float  # in base units (bytes/s, s, ...)
    required_base: float
    simulated: bool
    method: str
    error_kind: str
    # a failed case's fault (evidence/verdict/faults.py): its stable code ('PC-GPU-ROWREMAP'),
    # what to do, who acts (contract/declaration.py Actor's values); absent where it passed,
    # or where nothing declares one (a test of your own): readers take them as optional
    code: str
    action: str
    actor: str
    probe: str
    probe_run: str
    verdict: str
    reference: str  # published figures beside the measurement (measure/reference.py)
    reference_ratio: float
    reference_source: str
    finding: str  # what a check found beside its figure (a straggler)
    leftovers: Any  # a storage case: the files an earlier check left
    culprits: str  # a check of several nodes: the nodes it blames, as a hostlist
    #: a node's figure measured in a group whose other members (this hostlist) were not
    #: known good: the slowest bounds it, so it is the group's, not the node's alone
    bounded_by: str
    # a figure of what every node does at once (storage's aggregates): what its bound
    # counts (contract/sections/storage.py BASES: cluster, node, gpu) and what the total was shared
    # by
    basis: str
    basis_nodes: int
    basis_gpus: int
    raw: Any  # the probe's payload or the check's own evidence
    # a case derived from the whole run (evidence/record/derived_cases.py): the baseline's
    compared_case: str  # the case id a figure's comparison is of
    changes: list[str]
    #: the parts --cluster-baseline-accept accepted as replaced: part, old, new, accepted
    accepted_replacements: list[dict[str, str]]
    gpus_at_baseline: int | None
    baseline_value: str
    change_pct: float | None  # None: beyond any share of the baseline (from 0)
    # ... and a soak's (availability, SLA credit, counters, steadiness)
    availability: float
    down_s: float
    observed_s: float
    node_hours_lost: str
    outages: list[list[str]]  # UTC times
    outages_at: list[list[float]]  # epoch seconds
    arithmetic: str
    credit: str
    currency: str
    cluster_availability: float
    rounds_compared: int
    first_round: int
    last_round: int
    spread_pct: float
    drop_pct: float
    rail: str  # a label that tells cases apart (a test of your own may record it)
    # a case over a soak's rounds (soak/tally.py aggregate), a round's line in the soak's
    # results.jsonl (type round_result)
    rounds: int
    rounds_failed: list[list[int]]  # [first, last] spans
    round: int
    utc: str | None


class RunLine(TypedDict, total=False):
    """results.jsonl's first line, as the session writes it (a baseline's, as read back:
    the keys its reader checks)."""

    type: str  # "run"
    tool_version: str
    cluster: str
    spec: str  # the spec's file
    spec_sha256: str
    #: the shipped profile the spec extends (contract/reading/profiles.py); absent for none
    extends: str
    nodes: list[str]
    launcher: str
    simulated: bool
    started_at: float  # epoch seconds
    spec_warnings: list[str]
    run_dir: str


class SeenReplacement(TypedDict):
    """A part this run found replaced, as --cluster-baseline-accept accepted it."""

    node: str
    part: str  # gpu6, NIC eth0, HCA mlx5_0, disk under /data nvme0n1
    old: str  # its identity (serial, MAC, GUID) at baseline
    new: str  # ... and now


class AcceptedEntry(TypedDict):
    """One value of --cluster-baseline-accept and what this run found of it (the end
    record's `baseline.accepted`, verdict.json's `baseline_accepted`)."""

    serial: str  # the new part's serial
    old: str | None  # the part it replaces, where OLD=NEW named it
    seen: list[SeenReplacement]  # none: accepted but not seen
    said: str  # 'N: accepted replacement: ...', or 'accepted but not seen: SERIAL ...'


class _BaselineSummary(TypedDict):
    """The end record's `baseline`: the run compared with, and its cases."""

    path: str
    run: str  # 'run <UTC start>'
    manifest_sha256: str
    signature: str  # verified, not_checked (no --cluster-baseline-key) or unsigned
    signature_key: str | None  # the fingerprint it was verified with; None: not checked
    cases: int
    failed: int


class BaselineSummary(_BaselineSummary, total=False):
    accepted: list[AcceptedEntry]  # with --cluster-baseline-accept: each value, and where


class SoakCredit(TypedDict):
    """A soak's SLA credit owed (with an sla: section)."""

    owed: str  # a decimal, in `currency`
    currency: str
    arithmetic: list[str]
    total: str


class _SoakEnd(TypedDict):
    dir: str
    rounds: int
    rounds_finished: int
    duration_s: float | None  # as asked (--cluster-soak), None: rounds only
    max_rounds: int | None
    observed_s: float
    unobserved_s: float
    window: list[str]  # UTC
    availability: dict[str, float]  # per node


class SoakEnd(_SoakEnd, total=False):
    """A soak's own end record (the end record's `soak`)."""

    credit: SoakCredit
    stopped: str  # a round that could not start ended the soak: 'round 2 left no results
    stopped_log: str  # ... (exit status 4)', and where its log is and what it said last
    spec_changed: str  # the spec file was edited since the soak began: said, not used


class _EndLine(TypedDict):
    type: str  # "end"
    simulated: bool
    status: str  # run_status
    exit_code: int
    counts: dict[str, int]  # per outcome (counted)
    checks_ran: int
    checks_planned: int
    checks_selected: int
    deselected: int
    selection: Selection
    nodes_covered: list[str]
    nodes_in_spec: int
    level: str
    levels: list[str]  # the level and every level below it (contract/levels.py)
    not_checked: list[NotChecked]
    verdicts: dict[str, int]  # nodes per verdict
    started_at: float
    ended_at: float
    duration_s: float
    tool_version: str
    verdict: str  # the cluster's


class _DisabledEntry(TypedDict):
    clause: str  # the clause's id, as its `clause` marker names it
    reason: str
    until: str  # '2026-12-31' (through that day, UTC) or '2026-12-31T18:00:00Z'


class DisabledEntry(_DisabledEntry, total=False):
    """An entry of the kill switch's file (--cluster-disable), as the end record and
    verdict.json list it."""

    cases: int  # in force: the cases of this run it skipped


class EndLine(_EndLine, total=False):
    """results.jsonl's last line: how the run ended and exactly what it covered
    (evidence/record/end.py makes it)."""

    baseline: BaselineSummary
    disabled: list[DisabledEntry]  # the kill switch's entries in force (--cluster-disable)
    disabled_expired: list[DisabledEntry]  # ... and those expired: ignored, the clause ran
    soak: SoakEnd
    incomplete: str  # why the verdict is INCOMPLETE (cluster_verdict.incomplete_why)
    #: the cases derived from the whole run (a soak's, a baseline's), by outcome: what
    #: pytest, JUnit and the terminal count beside `counts`
    derived_counts: dict[str, int]


class RoundLine(TypedDict):
    """A soak's line for one of its rounds (type round), in the soak's results.jsonl after
    the round's lines that did not pass (type round_result: ResultLines with their round
    and its UTC time)."""

    type: str  # "round"
    round: int
    status: str  # the round's run_status
    started_at: float
    ended_at: float
    started_utc: str
    ended_utc: str
    counts: dict[str, int]
    nodes: dict[str, list[str]]  # by state: healthy, failed, unreachable
    run_dir: str  # the round's, relative to the soak's
    #: what NCCL's RAS said in the round's hung jobs, per case (soak/rounds.ras_summaries):
    #: {nodeid, node, ras}; empty when no job of the round hung
    nccl_ras: list[dict[str, str]]


#: A line of results.jsonl, any of its kinds (its `type` says which: run, result,
#: round_result, round, end): what `pytest_cluster_result_line` passes.
Line: TypeAlias = "RunLine | ResultLine | RoundLine | EndLine"


def is_result(record: Mapping[str, object]) -> TypeGuard[ResultLine]:
    """Whether a line of results.jsonl (any of its kinds) is a result line."""
    return record.get("type") == "result"


# -- the manifest's predicate (manifest.intoto.json: a DSSE envelope, bundle/dsse.py, of an
# -- in-toto Statement, bundle/manifest.py, whose predicate says this of the run) ------------

class SourceCommit(TypedDict):
    """The commit the tool ran from (a git checkout), and whether tracked files differ."""

    commit: str
    modified: bool


class _Tool(TypedDict):
    name: str  # pytest-cluster
    version: str
    pytest: str
    python: str


class Tool(_Tool, total=False):
    """The tool that wrote the evidence."""

    source: SourceCommit  # only when run from a git checkout


class SpecFile(TypedDict):
    file: str
    sha256: str
    text: str  # as read


class Command(TypedDict):
    args: list[str]  # ["pytest", ...]
    dir: str


class _Predicate(TypedDict):
    cluster: str
    spec: SpecFile
    command: Command
    tool: Tool
    started_at: str  # UTC
    ended_at: str
    controller: str  # this machine's host name
    not_covered: list[str]  # files of the run's directory the manifest does not cover


class Predicate(_Predicate, total=False):
    """What the manifest says of the run that wrote the files (sealing.predicate)."""

    failures: list[str]  # what failed once the checks had run
