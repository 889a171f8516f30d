"""Evidence of one acceptance test: measured vs required, recorded, then asserted.

Everything is recorded as the test's `user_properties` (so JUnit `<properties>` carry it
and pytest-xdist ships it to the controller, which writes results.jsonl and the HTML).
Where a test looks (its node, GPU and filesystem) comes from the test's own parameters
(`Place`), and whether its evidence is simulated from the results it read (`saw`): no
call says either.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn, Protocol

import pytest

from pytest_cluster.contract.model import Clause, Rule, VersionClause
from pytest_cluster.contract.requirement import Verdict
from pytest_cluster.evidence.sinks.results import strict_json
from pytest_cluster.evidence.untrusted_json import found
from pytest_cluster.evidence.verdict import node_groups
from pytest_cluster.evidence.verdict.blame import UNDECIDED
from pytest_cluster.hostlist import compress_hostlist
from pytest_cluster.measure import plausible
from pytest_cluster.measure.reference import Reference, properties
from pytest_cluster.units import UNITS, finite

if TYPE_CHECKING:
    from pytest_cluster.launchers.result import ProbeResult

Promise = Clause | VersionClause | Rule


class Result(Protocol):
    """Anything a test reads its numbers from: a probe result, a benchmark job, a search."""

    @property
    def simulated(self) -> bool: ...


def promise_text(promise: Promise) -> str:
    return promise.text if isinstance(promise, Rule) else promise.requirement.text


def bound_source(promise: Promise) -> str | None:
    """Where the promise's bound came from when the spec's profile supplied it ('profile
    NAME: URL (what it says)', recorded as `bound_source`); None when the spec wrote it."""
    return getattr(promise, "source", "") or None


def from_profile(promise: Clause | Rule) -> str:
    """What a failure adds when the bound came from the spec's profile: '; 460 GB/s from
    profile azure-nd-h100-v5: URL (what it says)'; '' when the spec wrote it."""
    if not promise.source:
        return ""
    bound = promise.text if isinstance(promise, Rule) else promise.requirement.show(
        promise.requirement.bound.value)
    return f"; {bound} from {promise.source}"


def where(node: str, filesystem: str | None = None, gpu: int | None = None) -> str:
    """How a message names what was tested: 'node01', 'node01 /data', 'node01 gpu3'."""
    text = f"{node} {filesystem}" if filesystem else node
    return f"{text} gpu{gpu}" if gpu is not None else text


@dataclass(frozen=True)
class Place:
    """What a test case is about: its node, filesystem (path) and GPU, if any."""

    node: str | None = None
    filesystem: str | None = None
    gpu: int | None = None
    #: what else tells the case apart, from its parameters: {'collective': 'all_reduce',
    #: 'payload': 1073741824, 'node_count': 4}
    apart: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def of(cls, params: Mapping[str, Any]) -> Place:
        """From a test's parameters (`node`, `filesystem`, `gpu`; `collective`,
        `payload`, `node_count`)."""
        node, fs, gpu = params.get("node"), params.get("filesystem"), params.get("gpu")
        path = getattr(fs, "path", None)
        apart = tuple((name, params[name]) for name in APART
                      if isinstance(params.get(name), (str, int))
                      and not isinstance(params.get(name), bool))
        return cls(node if isinstance(node, str) else None,
                   path if isinstance(path, str) else None,
                   gpu if isinstance(gpu, int) and not isinstance(gpu, bool) else None,
                   apart)


#: The parameters besides the place that tell a test's cases apart, recorded with every
#: result (a failure before the test recorded them included).
APART = ("collective", "payload", "node_count")


class Evidence:
    """Bound to one test item: `check()` records the evidence and fails with the verdict.
    `node=` on a call names something else than the test's node (a group of nodes, the
    writer of a shared file)."""

    def __init__(self, item: pytest.Item, place: Place | None = None) -> None:
        self.item = item
        callspec = getattr(item, "callspec", None)
        self.place = place or Place.of(callspec.params if callspec is not None else {})
        self.simulated = False  # any result this test has read was simulated

    def _node(self, node: str | None) -> str:
        return node if node is not None else self.place.node or ""

    def saw(self, result: Result | None) -> None:
        """Note a result this test reads: a simulated one marks the whole test simulated,
        whatever the caller passes on (decided by the results, not by each call)."""
        if result is not None and result.simulated:
            self.simulated = True

    def record(self, **values: Any) -> None:
        """Record evidence (JUnit properties, the result line): text cut to MAX_TEXT
        characters and the raw part to MAX_RAW bytes (a node's answer is not ours to
        trust with the run's disk), numbers that are not finite written as text."""
        for name, value in values.items():
            if value is not None:
                text = raw_text(value) if name == "raw" else bounded(value)
                self.item.user_properties.append((name, text))

    def _record_apart(self) -> None:
        """The parameters that tell this case apart (Place.apart), where the test has
        not recorded them itself: a case that fails early still says its payload."""
        said = {name for name, _ in self.item.user_properties}
        self.record(**{name: value for name, value in self.place.apart if name not in said})

    def require(self, result: ProbeResult, clause: Promise) -> dict[str, Any]:
        """The probe's payload, or fail this test with the probe's error (kind, stderr)."""
        self.saw(result)
        if result.ok:
            return result.payload()
        self._record_apart()
        self.record(node=result.node, filesystem=self.place.filesystem, spec_key=clause.key,
                    spec_line=clause.line, requirement=promise_text(clause),
                    bound_source=bound_source(clause),
                    error_kind=result.error.value if result.error else "failed",
                    probe=result.probe, simulated=result.simulated,
                    raw={"message": result.message, "exit_code": result.exit_code,
                         "stderr_tail": result.stderr_tail, "duration_s": result.duration_s})
        gpu = self.place.gpu
        prefix = f"gpu{gpu}: " if gpu is not None else ""
        pytest.fail(_mark(prefix + result.describe(), result.simulated), pytrace=False)

    def cannot_measure(self, clause: Promise, reason: str, *, raw: Any = None,
                       kind: str = "cannot_measure", node: str | None = None) -> NoReturn:
        """The probe ran but could not measure this clause: fail, saying why (simulated
        when a result this test read was)."""
        place = self.place
        node = self._node(node)
        self._record_apart()
        self.record(node=node, filesystem=place.filesystem, spec_key=clause.key,
                    spec_line=clause.line, requirement=promise_text(clause),
                    bound_source=bound_source(clause), error_kind=kind, raw=raw,
                    simulated=self.simulated or None)
        name = clause.key.rsplit(".", 1)[-1]
        text = f"{where(node, place.filesystem, place.gpu)} {name}: cannot measure: {reason}"
        if kind != "cannot_measure":
            text = f"{where(node, place.filesystem, place.gpu)} {name}: {reason}"
        pytest.fail(_mark(text, self.simulated), pytrace=False)

    def figure(self, clause: Promise, part: object, name: str, where: str) -> float:
        """The number `name` of `part`, a section of a node's answer (`where` names it, as
        'load' or 'matmul.bf16'): a finite real number as the node gave it, never a
        string, a bool or a container read as one (float('85'), float(True)); else the
        node's bad output naming the field. A node's answer is its claim."""
        value = part.get(name) if isinstance(part, dict) else None
        number = finite(value)
        if number is None:
            said = found(value) if isinstance(part, dict) else f"no section ({found(part)})"
            self.cannot_measure(clause, f"the node reported {where}.{name} = {said}, not a "
                                "finite number (bad output of the node)",
                                raw=part if isinstance(part, dict) else None,
                                kind="bad_output")
        return number

    def undecided(self, clause: Promise, reason: str, *, raw: Any = None,
                  node: str | None = None) -> NoReturn:
        """The check could not be decided about this node, through no fault of its own (a
        slow-node search with no known-good node to compare with, a job of several nodes
        that failed on none of them in particular): fail with error kind UNDECIDED, a
        cluster failure without a culprit that leaves the node NOT CHECKED, never REJECTED
        or drained (blame.NO_CULPRIT)."""
        self.cannot_measure(clause, reason, raw=raw, kind=UNDECIDED, node=node)

    def check(self, clause: Clause, measured: float, *, result: ProbeResult | None,
              method: str | None = None, raw: Any = None, note: str = "",
              node: str | None = None, references: Sequence[Reference] = (),
              wrong: str = "", partial: str = "") -> None:
        """Record measured vs required for `clause` and fail unless it holds; `note` is
        added to the failure message (e.g. who else holds GPU memory); `wrong`: what makes
        it fail whatever the number (data read back that is not what was written);
        `partial`: why the number, measured on fewer nodes than the check is about (some
        did not answer), does not establish the clause: a number that holds fails as not
        established (error kind not_all_nodes, saying `partial`), one that misses fails
        as measured. Without a probe
        `result` (a benchmark job's number), the results this test saw say whether it was
        simulated. `references`: published figures recorded beside the measurement, with
        the ratio to them; they never decide the outcome."""
        req = clause.requirement
        unit_factor = _factor(req.unit)
        self.saw(result)
        simulated = result.simulated if result is not None else self.simulated
        if finite(measured) is None:  # a node's answer: never compared, never written
            self.cannot_measure(clause, f"the measured value is not a finite number: "
                                f"{found(measured)}", raw=raw, kind="bad_output", node=node)
        implausible = plausible.fact_refused(clause.key, measured) or _over_peak(
            references, measured)
        if implausible:  # a node's claim no machine makes: never compared, never a pass
            self.cannot_measure(clause, implausible, raw=raw, kind="bad_output", node=node)
        place, node = self.place, self._node(node)
        self._record_apart()
        self.record(node=node, filesystem=place.filesystem, spec_key=clause.key,
                    spec_line=clause.line, requirement=req.text,
                    bound_source=bound_source(clause), measured=measured / unit_factor,
                    required=req.bound.value / unit_factor, comparison=req.op,
                    unit=req.unit, measured_base=measured, required_base=req.bound.value,
                    simulated=simulated, method=method,
                    probe_run=result.run_id if result is not None else None, raw=raw,
                    **properties(references, measured))
        label = f"{where(node, place.filesystem, place.gpu)} {clause.key.rsplit('.', 1)[-1]}"
        verdict = req.check(measured, label)
        if not verdict.ok and note:
            verdict = Verdict(False, f"{verdict.message}; {note}")
        if not verdict.ok:
            verdict = Verdict(False, verdict.message + from_profile(clause))
        if wrong:  # what was wrong first; the number too, where it missed its bound
            missed = f"; {verdict.message.removeprefix(f'{label}: ')}" if not verdict.ok else ""
            verdict = Verdict(False, f"{label}: {wrong}{missed}")
        elif partial and verdict.ok:
            self.record(error_kind="not_all_nodes")
            verdict = Verdict(False, f"{label}: {partial}")
        self._assert(verdict, simulated)

    def check_rule(self, rule: Rule, ok: bool, measured: str, *, result: ProbeResult | None,
                   problem: str, method: str | None = None, raw: Any = None,
                   node: str | None = None) -> None:
        """A health rule (no number to compare): record what was found, fail with
        `problem` unless `ok`. Its message names the node, filesystem and GPU. Without a probe
        `result` (a job's), the results this test saw say whether it was simulated."""
        node = self._node(node)
        simulated = result.simulated if result is not None else self.simulated
        self._record_apart()
        self.record(node=node, filesystem=self.place.filesystem, spec_key=rule.key,
                    spec_line=rule.line, requirement=rule.text,
                    bound_source=bound_source(rule), measured=measured, simulated=simulated,
                    method=method,
                    probe_run=result.run_id if result is not None else None, raw=raw)
        name = rule.key.rsplit(".", 1)[-1]
        self._assert(Verdict(ok, f"{where(node, self.place.filesystem, self.place.gpu)} "
                                 f"{name}: {problem}{'' if ok else from_profile(rule)}"),
                     simulated)

    def check_version(self, clause: VersionClause, found: str | None, *,
                      result: ProbeResult, source: str | None, asked: str | None = None,
                      node: str | None = None) -> None:
        """A version clause; `asked` names who was asked when nothing was found (e.g. the
        interpreter that has no torch)."""
        self.saw(result)
        node = self._node(node)
        req = clause.requirement
        self.record(node=node, spec_key=clause.key, spec_line=clause.line, measured=found,
                    requirement=req.text, comparison=req.op, simulated=result.simulated,
                    method=source, probe_run=result.run_id)
        verdict = req.check(found, f"{node} {clause.name}")
        if asked and not verdict.ok:
            verdict = Verdict(False, f"{verdict.message}; asked {asked}")
        self._assert(verdict, result.simulated)

    def check_same(self, key: str, line: int, what: str, groups: dict[str, list[str]],
                   unanswered: dict[str, str], *, method: str | None = None) -> None:
        """A cluster-wide "the same on every node" check. `groups`: value -> the nodes
        that reported it; `unanswered`: node -> why it did not. Fails when the values
        differ, and when any node did not answer: never a pass on the others alone. The
        summary and the evidence name nodes as hostlists (node_groups). The nodes outside
        the largest group are the culprits (`culprits`, a hostlist): their verdicts fail
        with this clause."""
        found = node_groups.summary(groups) if groups else ""
        self.record(spec_key=key, spec_line=line, node="all",
                    requirement=f"the same {what} on every node",
                    measured=found or "no node answered", method=method,
                    raw=node_groups.evidence(groups, unanswered), simulated=self.simulated)
        total = sum(len(nodes) for nodes in groups.values()) + len(unanswered)
        names = list(unanswered)
        silent = f"{len(names)} of {total} node(s) did not answer ({node_groups.nodes_text(names)})"
        if len(groups) > 1:
            odd = node_groups.odd_ones(groups)
            self.record(culprits=compress_hostlist(odd) if odd else None)
            self.fail(f"{what} differs between nodes: {found}"
                      + (f"; {silent}" if names else ""))
        if names:
            self.fail(f"{what}: {found or 'no node answered'}; {silent}, so the same "
                      f"{what} on every node is not established (first: "
                      f"{unanswered[names[0]]})", "not_all_nodes")
        self.record(verdict="pass")

    def fail(self, message: str, kind: str | None = None) -> NoReturn:
        """Fail a check that has no number to compare (versions that differ; with `kind`,
        one that could not be established, e.g. some nodes did not answer)."""
        self.record(error_kind=kind, verdict="fail")
        pytest.fail(_mark(message, self.simulated), pytrace=False)

    def _assert(self, verdict: Verdict, simulated: bool = False) -> None:
        self.record(verdict="pass" if verdict.ok else "fail")
        if not verdict.ok:
            pytest.fail(_mark(verdict.message, simulated), pytrace=False)


#: The longest text recorded as one value (a model name, a message); longer is cut.
MAX_TEXT = 2000
#: The most of a case's raw evidence recorded, serialised; more is replaced by its size.
MAX_RAW = 256 * 2**10


def bounded(value: Any) -> Any:
    """A recorded value as it is written: text cut to MAX_TEXT characters (saying how long
    it was), a number that is not finite as its text (strict JSON has none)."""
    if isinstance(value, str) and len(value) > MAX_TEXT:
        return f"{value[:MAX_TEXT]}... (cut: {len(value)} characters)"
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def raw_text(value: Any) -> str:
    """The raw evidence as one line of strict JSON, within MAX_RAW bytes: numbers that are
    not finite as text; a larger one replaced by what it was."""
    try:
        text = json.dumps(value, sort_keys=True, default=str, allow_nan=False)
    except ValueError:  # NaN or an infinity somewhere in it
        text = strict_json(value)
    except RecursionError:
        return json.dumps({"cut": "nested too deeply to record"}, allow_nan=False)
    if len(text) > MAX_RAW:
        return json.dumps({"cut": f"{len(text)} bytes of raw evidence, more than {MAX_RAW}",
                           "head": text[:4096]}, allow_nan=False)
    return text


def _mark(message: str, simulated: bool) -> str:
    """Failure messages of simulated results say so first: never pass for measurements."""
    return f"[SIMULATED] {message}" if simulated else message


def _factor(unit: str) -> float:
    return UNITS[unit][1] if unit else 1.0


def _over_peak(references: Sequence[Reference], measured: float) -> str | None:
    """Why `measured` is above the physical ceiling of a GPU figure's published peak
    (plausible.PEAK_FIGURES: matmul, memory bandwidth), or None."""
    for ref in references:
        if ref.figure.startswith(plausible.PEAK_FIGURES):
            why = plausible.over_ceiling(measured, ref.value,
                                         f"the {ref.shown} {ref.unit} {ref.what}")
            if why:
                return why
    return None
