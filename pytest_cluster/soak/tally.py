"""What a soak keeps of its rounds, a round at a time (`Tally`): per case its rounds and
failures, per figure its values over the rounds, per node its first GPU and NIC readings
and what grew since; and what it judges of them (a figure's steadiness, a case's
aggregate over the rounds)."""

from __future__ import annotations

import contextlib
import json
import math
import statistics
from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_cluster.evidence.baseline.accepted import figures, parts
from pytest_cluster.evidence.baseline.performance import Figure
from pytest_cluster.evidence.record.derived_cases import Case
from pytest_cluster.evidence.sinks.results import ResultLine
from pytest_cluster.evidence.verdict.timelines import ranges
from pytest_cluster.hostlist import spans_of
from pytest_cluster.measure.network import fabric
from pytest_cluster.soak import counters
from pytest_cluster.soak.rounds import (
    MAX_SAID,
    MAX_SPELLS,
    SIM_MARK,
    UNREADABLE,
)
from pytest_cluster.units import utc

if TYPE_CHECKING:
    from pytest_cluster.contract.model import SoakSpec
    from pytest_cluster.probes.nic import Port
    from pytest_cluster.soak.counters import Answer


def span(first: int, last: int) -> str:
    return f"rounds {first}-{last}" if last > first else f"round {first}"


def span_words(numbers: Sequence[int]) -> str:
    shown = ranges(numbers)
    return f"round {shown}" if shown.isdigit() else f"rounds {shown}"

# -- what the soak keeps of its rounds ------------------------------------------------------

@dataclass
class CaseTally:
    """One contract case over the rounds it ran in: its rounds, those it failed in, its
    first failing line and its last line (never every round's line)."""

    rounds: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)
    first_failed: ResultLine | None = None
    last: ResultLine = field(default_factory=ResultLine)
    all_skipped: bool = True
    #: Failure spells (consecutive failing rounds of the case): [first, last, what the
    #: first round of the spell said]; the first MAX_SPELLS are kept, the rest counted.
    spells: list[list[Any]] = field(default_factory=list)
    more_spells: int = 0

    def add(self, number: int, record: ResultLine) -> None:
        before = self.rounds[-1] if self.rounds else None
        self.rounds.append(number)
        self.last = record
        self.all_skipped = self.all_skipped and record.get("outcome") == "skipped"
        if record.get("outcome") != "failed":
            return
        self.failed.append(number)
        if self.first_failed is None:
            self.first_failed = record
        said = str(record.get("message", "")).removeprefix("Failed: ")
        if self.spells and before is not None and self.spells[-1][1] == before:
            self.spells[-1][1] = number  # the spell goes on
        elif self.more_spells or len(self.spells) >= MAX_SPELLS:
            self.more_spells += 1
        else:
            self.spells.append([number, number, said[:MAX_SAID]])


@dataclass
class RoundSeries:
    """One figure over the rounds: the round numbers and values (measured_base), and its
    latest line's fields (clause, node, GPU, unit, how it is compared)."""

    rounds: list[int] = field(default_factory=list)
    values: array[float] = field(default_factory=lambda: array("d"))
    meta: ResultLine = field(default_factory=ResultLine)


class Tally:
    """What a soak keeps of its rounds, a round at a time, in memory that grows with the
    cases and figures, not with the rounds' lines: per case its rounds and failures, per
    figure its values, per node its first GPU probe and the growth seen since."""

    def __init__(self, flap_s: float = 30.0) -> None:
        self.flap_s = flap_s  # a NIC port seen down this long fails its node
        self.cases: dict[str, CaseTally] = {}
        self.series: dict[str, RoundSeries] = {}
        self.first_gpu: dict[str, tuple[int, Answer]] = {}
        self.gpu_rounds: dict[str, list[int]] = {}
        self.growth: dict[str, list[str]] = {}  # per node, each change in full
        self.changed: dict[str, list[str]] = {}  # ... and in short: what was measured
        self.first_sdc: dict[tuple[str, str], tuple[int, int]] = {}
        self.first_nic: dict[str, tuple[int, list[Port]]] = {}
        # per node and port seen down: the round and time of the first reading of the spell
        self.down_since: dict[tuple[str, str], tuple[int, float]] = {}
        self._seen: set[tuple[str, str, str]] = set()

    def add(self, number: int, started: float, results: Iterable[ResultLine],
            gpus: Mapping[str, Answer],
            perf: Mapping[str, Answer] | None = None,
            nics: dict[str, list[NicReading]] | None = None) -> None:
        """A round: its result lines, its GPU probes, its torch probes (the SDC check's
        checksums) and its NIC readings' counted ports (start, end), per node."""
        for record in results:
            case_id = record.get("case")
            if not isinstance(case_id, str) or record.get("outcome") == "not_run":
                continue
            self.cases.setdefault(case_id, CaseTally()).add(number, record)
        for case_id, record in figures(results).items():
            series = self.series.setdefault(case_id, RoundSeries())
            series.rounds.append(number)
            series.values.append(float(record["measured_base"]))
            series.meta = record
        for node, payload in gpus.items():
            self._counters(node, number, started, payload)
        for node, payload in (perf or {}).items():
            self._results(node, number, started, payload)
        for node, readings in (nics or {}).items():
            for reading in readings:
                self._nic_down(node, number, reading)
            if readings:
                self._nic_counters(node, number, started, readings[-1].ports)

    def _nic_down(self, node: str, number: int, reading: NicReading) -> None:
        """Each counted port's state in a reading: a port not active in readings at least
        `flap_s` apart, and in none between, fails the node, named at the round its spell
        was first seen (a port gone from the reading is down)."""
        first = self.first_nic.get(node)
        known = [str(p.get("name")) for p in first[1]] if first is not None else []
        ports = {str(p.get("name")): p for p in reading.ports}
        for name in dict.fromkeys([*known, *ports]):
            port = ports.get(name)
            if port is not None and port.get("active"):
                self.down_since.pop((node, name), None)
                continue
            since = self.down_since.setdefault((node, name), (number, reading.at))
            held = reading.at - since[1]
            if held < self.flap_s or (node, name, "down") in self._seen:
                continue
            self._seen.add((node, name, "down"))
            self._compared(node, number)
            state = fabric.state(port) if port is not None else "gone from the reading"
            self._grew(node, f"{name} down rounds {since[0]}-{number}",
                       f"{name}: down ({state}) for at least {held:.0f} s, from round "
                       f"{since[0]} ({utc(since[1])}) to round {number} "
                       f"({utc(reading.at)}): fabric.flap is {self.flap_s:g} s")

    def _nic_counters(self, node: str, number: int, started: float,
                      ports: list[Port]) -> None:
        """The NIC ports' error counters against the node's first round's: a port that
        went down or took errors between rounds, named at the round it was seen."""
        self._compared(node, number)
        if node not in self.first_nic:
            self.first_nic[node] = (number, ports)
            return
        first_round, first = self.first_nic[node]
        for change in fabric.grown(first, ports):
            port, what = change.split(": ", 1)[0], change.split(": ", 1)[1].split(" ", 1)[0]
            if (node, port, what) in self._seen:
                continue
            self._seen.add((node, port, what))
            self._grew(node, f"{change} at round {number}",
                       f"{change} at round {number} ({utc(started)}), against round "
                       f"{first_round}")

    def _results(self, node: str, number: int, started: float,
                 payload: Answer) -> None:
        """The SDC check's checksum of each GPU (by UUID) against its first round's."""
        for gpu in counters.gpus_of(payload):
            sdc = gpu.get("sdc")
            if not isinstance(sdc, dict) or not isinstance(sdc.get("checksum"), int):
                continue
            where = f"gpu{gpu.get('index')} GPU-{str(gpu.get('uuid')).removeprefix('GPU-')}"
            first = self.first_sdc.setdefault((node, where), (number, sdc["checksum"]))
            if sdc["checksum"] != first[1] and (node, where, "sdc") not in self._seen:
                self._seen.add((node, where, "sdc"))
                self.gpu_rounds.setdefault(node, [])
                self._grew(node, f"gpu{gpu.get('index')} matmul checksum changed at "
                                 f"round {number}",
                           f"{where}: matmul checksum {sdc['checksum']:#x} at round "
                           f"{number} ({utc(started)}) differs from round {first[0]}'s "
                           f"{first[1]:#x} on identical inputs (silent data corruption)")

    def _grew(self, node: str, short: str, full: str) -> None:
        """A change seen on `node`: `short` for the measured column (what grew, where, at
        which round), `full` for the failure's message."""
        self.changed.setdefault(node, []).append(short)
        self.growth.setdefault(node, []).append(full)

    def _compared(self, node: str, number: int) -> None:
        """A round of `node` whose counters (GPU or NIC) were read."""
        rounds = self.gpu_rounds.setdefault(node, [])
        if number not in rounds:
            rounds.append(number)

    def _counters(self, node: str, number: int, started: float,
                  payload: Answer) -> None:
        self._compared(node, number)
        if node not in self.first_gpu:
            self.first_gpu[node] = (number, payload)
            return
        first_round, first = self.first_gpu[node]
        for gpu, changes in counters.growth(first, payload).items():
            for change in changes:
                what = change.split(" -> ", 1)[0].rsplit(" ", 1)[0] \
                    if " -> " in change else change
                if (node, gpu, what) in self._seen:
                    continue  # named at the round it was first seen
                self._seen.add((node, gpu, what))
                self._grew(node, f"{gpu.split(' ', 1)[0]} {change} at round {number}",
                           f"{gpu}: {change} at round {number} ({utc(started)}), against "
                           f"round {first_round}")

    def counter_cases(self, nodes: Iterable[str]) -> list[Case]:
        """Per node with GPU probes in two rounds or more: no counter grew since the
        first round that probed it."""
        cases = []
        for node in nodes:
            seen = self.gpu_rounds.get(node, [])
            if len(seen) < 2:
                continue
            lines = self.growth.get(node, [])
            props = {"rounds_compared": len(seen), "first_round": seen[0],
                     "last_round": seen[-1], "measured": changed_text(
                         self.changed.get(node, []), seen),
                     "requirement": "no GPU or NIC error counter grows, no critical XID, "
                                    "no GPU gone, no NIC port down for fabric.flap, the "
                                    "same SDC matmul result as in the first round"}
            message = "; ".join(lines[:20]) + (f"; and {len(lines) - 20} more"
                                               if len(lines) > 20 else "")
            cases.append(Case(node, "soak.counters", node, not lines,
                              f"{node} {message}" if lines else "", props=props))
        return cases

    def stability_cases(self, bounds: SoakSpec) -> list[Case]:
        """Per figure measured in two rounds or more: its worst round against its first,
        and its spread (coefficient of variation) over the rounds, against the bounds."""
        return [case for case_id, series in self.series.items()
                if (case := steadiness(case_id, series, bounds)) is not None]


def changed_text(changes: list[str], rounds: list[int]) -> str:
    """What the counters case measured: the changes seen (at most 3 named), or that none
    was over the rounds compared."""
    if not changes:
        return f"no change over rounds {ranges(rounds)}"
    more = f"; and {len(changes) - 3} more" if len(changes) > 3 else ""
    return "; ".join(changes[:3]) + more


def steadiness(case_id: str, series: RoundSeries, bounds: SoakSpec) -> Case | None:
    values = list(series.values)
    first = values[0] if values else 0.0
    if len(values) < 2 or first == 0 or not all(math.isfinite(v) for v in values):
        return None
    last = series.meta
    figure = Figure(last)
    higher = figure.higher_is_better
    worst_at = min(range(len(values)), key=lambda i: values[i] if higher else -values[i])
    worst = values[worst_at]
    drop = (first - worst) / abs(first) if higher else (worst - first) / abs(first)
    mean = statistics.fmean(values)
    spread = statistics.pstdev(values) / abs(mean) if mean else 0.0
    text = (f"{figure.where} {last['clause']}: worst round {series.rounds[worst_at]} "
            f"{figure.value(worst)} is {max(drop, 0) * 100:.1f} % "
            f"{'below' if higher else 'above'} round {series.rounds[0]}'s "
            f"{figure.number(first)}; spread {spread * 100:.1f} % over {len(values)} "
            f"rounds (coefficient of variation)")
    passed = drop <= bounds.drop and spread <= bounds.spread
    limits = (f"worst round at most {bounds.drop * 100:g} % worse than the first, "
              f"spread at most {bounds.spread * 100:g} %")
    change = (worst - first) / abs(first)  # signed: a drop of a rate is negative
    props = {"measured": f"spread {spread * 100:.2f} %, worst round "
                         f"{series.rounds[worst_at]} {change * 100:+.1f} % against round "
                         f"{series.rounds[0]}",
             "spread_pct": round(spread * 100, 3), "drop_pct": round(drop * 100, 3),
             "rounds": len(values), "compared_case": case_id, "requirement": limits,
             # what tells the compared case apart from its node's others (a collective
             # and payload, a filesystem): the steadiness case's labels are its own
             **parts(last)}
    return Case(case_id.rpartition("::")[2], f"soak.stability[{last['clause']}]",
                str(last.get("node")), passed, "" if passed else f"{text}: beyond {limits}",
                gpu=last.get("gpu"), props=props)


@dataclass(frozen=True)
class NicReading:
    """One NIC probe answer of a node in a round: when it was read, its counted ports."""

    at: float
    ports: list[Port]


def nic_readings(round_dir: Path, devices: str | None) -> dict[str, list[NicReading]]:
    """Per node, the counted ports of a round's NIC readings, in the order read (its
    start's, its end's); an answer without a time or not a list of ports is left out."""
    found: dict[str, list[NicReading]] = {}
    for path in sorted((round_dir / "probes").glob("nic-*.json")):
        for node, payload in _payloads(path).items():
            at = payload.get("read_at")
            if isinstance(at, bool) or not isinstance(at, (int, float)) \
                    or not math.isfinite(at):
                continue
            with contextlib.suppress(ValueError):  # a malformed answer: nothing to compare
                ports = fabric.counted(fabric.ports_of(payload), devices)
                found.setdefault(node, []).append(NicReading(float(at), ports))
    for readings in found.values():
        readings.sort(key=lambda reading: reading.at)
    return found


def _payloads(path: Path) -> dict[str, Answer]:
    """Per node, the payload of a probe's results file (nodes whose probe failed left
    out; an unreadable file: none), as read: every part checked before it is read."""
    found: dict[str, Answer] = {}
    with contextlib.suppress(*UNREADABLE):
        for node, result in json.loads(path.read_text(encoding="utf-8")).items():
            data = result.get("data") if isinstance(result, dict) else None
            if isinstance(data, dict) and not result.get("error"):
                found[str(node)] = data
    return found


def gpu_payloads(round_dir: Path, probe: str = "gpu") -> dict[str, Answer]:
    """Per node, a probe's payload in a round (nodes whose probe failed left out): the
    NVML probe's, or (probe "gpu_perf") the torch probe's, the SDC check's there."""
    found: dict[str, Answer] = {}
    for path in sorted((round_dir / "probes").glob(f"{probe}-*.json")):
        found.update(_payloads(path))
    return found


# -- the soak's own cases from the rounds' cases ------------------------------------------------

def aggregate(tally: CaseTally) -> ResultLine:
    """One contract case over the soak: failed if it failed (or could not start) in any
    round, naming those rounds; skipped when it was skipped in every one; passed
    otherwise. Its figures are its last round's (its first failing round's when it
    failed)."""
    ran = len(tally.rounds)
    if tally.first_failed is not None:
        first, failing = tally.first_failed, tally.failed
        sim = any(said.startswith(SIM_MARK) for _, _, said in tally.spells)
        spells = "; ".join(f"{span(a, b)}: {said.removeprefix(SIM_MARK)}"
                           for a, b, said in tally.spells)
        if tally.more_spells:
            spells += f"; and {tally.more_spells} more spell(s)"
        message = (f"{SIM_MARK if sim else ''}failed in {len(failing)} of {ran} round(s) "
                   f"({span_words(failing)}); {spells}")
        return {**first, "outcome": "failed", "message": message, "rounds": ran,
                "rounds_failed": spans_of(failing)}
    if tally.all_skipped:
        return {**tally.last, "rounds": ran, "rounds_failed": []}
    return {**tally.last, "outcome": "passed", "phase": "call", "message": "",
            "rounds": ran, "rounds_failed": []}
