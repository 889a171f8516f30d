"""A soak (--cluster-soak=48h, --cluster-soak-rounds=N): the selected suite repeated in
rounds, each round a whole ordinary run with its own sealed evidence, and what only the
rounds together can say.

    SOAK/                       the soak's own evidence (results.jsonl, junit.xml, ...)
    SOAK/soak.json              what the soak is: spec, its start, its time and rounds
    SOAK/rounds/round-0001/     round 1: an ordinary run directory, sealed
    SOAK/logs/round-0001.log    what round 1 printed
    SOAK/stops/stop-01/         the soak's own evidence as an earlier, stopped session left it

Pure functions over the rounds' directories: which rounds there are, what each says per
node (healthy, failed, unreachable), the nodes' timelines, the counters that grew, the
figures that did not stay steady, and the command line of a round. soak_driver.py runs
the rounds and reports these as cases.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import statistics
from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_cluster.errors import UnitError
from pytest_cluster.evidence.baseline import Figure, figures
from pytest_cluster.evidence.derived_cases import Case
from pytest_cluster.evidence.results import read_results
from pytest_cluster.hostlist import spans_of
from pytest_cluster.measure import fabric
from pytest_cluster.soak import counters
from pytest_cluster.soak.sla import FAILED, HEALTHY, UNREACHABLE, Span
from pytest_cluster.units import Dim, parse_quantity, utc

if TYPE_CHECKING:
    from pytest_cluster.spec.model import SoakSpec

SOAK_FILE = "soak.json"
ROUNDS_DIR = "rounds"
LOGS_DIR = "logs"
STOPS_DIR = "stops"
#: What a soak keeps from session to session; anything else in its directory is the
#: evidence of the session that wrote it, moved to stops/ when the soak is resumed.
KEPT = (SOAK_FILE, ROUNDS_DIR, LOGS_DIR, STOPS_DIR)
_ROUND = re.compile(r"^round-(\d{4,})$")

#: Options of the soak's own command line that a round does not take: the soak's and
#: where its evidence goes (each round writes into SOAK/rounds/round-NNNN).
ROUND_DROPS_VALUED = ("--cluster-soak", "--cluster-soak-rounds", "--cluster-soak-resume",
                      "--cluster-soak-round", "--cluster-reports", "--junitxml",
                      "--junit-xml", "--html", "--cluster-metrics")
ROUND_DROPS_FLAGS = ("--self-contained-html",)


class SoakError(Exception):
    """A soak that cannot go on as asked (a bad duration, a directory that is no soak)."""


#: The longest soak and the most rounds one may ask for: beyond them a value is a slip.
MAX_DURATION_S = 366 * 86400.0
MAX_ROUNDS = 1_000_000


def parse_duration(raw: str) -> float:
    """'48h', '90 min', '600 s' in seconds (above 0, at most a year)."""
    shown = raw[:40]
    if not raw.strip():
        raise SoakError("expected a duration like '48h', got an empty value")
    try:
        seconds = parse_quantity(raw, Dim.TIME).value
    except UnitError as exc:
        raise SoakError(str(exc)[:300]) from None
    if not math.isfinite(seconds) or seconds <= 0:
        raise SoakError(f"expected a time above 0 like '48h', got {shown!r}")
    if seconds > MAX_DURATION_S:
        raise SoakError(f"expected at most a year (366 days) like '48h', got {shown!r} "
                        f"({seconds / 86400:.0f} days)")
    return seconds


def parse_rounds(raw: str) -> int:
    """A number of rounds: a whole number from 1 to MAX_ROUNDS, written in digits."""
    text = raw.strip()
    if not text.isdigit() or not text.isascii():
        raise SoakError(f"expected a whole number of rounds from 1 to {MAX_ROUNDS:,} like "
                        f"48, got {raw[:40]!r}")
    if len(text) > 7 or not 1 <= int(text) <= MAX_ROUNDS:
        raise SoakError(f"expected a whole number of rounds from 1 to {MAX_ROUNDS:,}, got "
                        f"{text[:40]}")
    return int(text)


def round_name(number: int) -> str:
    return f"round-{number:04d}"


def round_argv(python: str, args: Sequence[str], rounds_dir: Path,
               number: int) -> list[str]:
    """The command line of round `number`: the soak's own, without the soak's options and
    its report paths, writing into `rounds_dir/round-NNNN`."""
    kept: list[str] = []
    skip_value = False
    for arg in args:
        if skip_value:
            skip_value = False
            continue
        name, equals, _ = arg.partition("=")
        if name in ROUND_DROPS_VALUED:
            skip_value = not equals
            continue
        if arg in ROUND_DROPS_FLAGS:
            continue
        kept.append(arg)
    return [python, "-m", "pytest", *kept, f"--cluster-reports={rounds_dir}",
            f"--cluster-soak-round={number}"]


def round_numbers(soak_dir: Path) -> list[int]:
    """The rounds a soak directory holds, in order."""
    where = soak_dir / ROUNDS_DIR
    if not where.is_dir():
        return []
    found = (_ROUND.match(p.name) for p in where.iterdir() if p.is_dir())
    return sorted(int(m.group(1)) for m in found if m)


#: How a simulated result's message starts.
SIM_MARK = "[SIMULATED] "
#: Failure spells a case's message names one by one, and how much of each it quotes.
MAX_SPELLS, MAX_SAID = 5, 400


def ranges(numbers: Iterable[int], most: int = 40) -> str:
    """Round numbers as ranges: '5-18, 22' (at most `most` ranges, then how many more)."""
    found = spans_of(numbers)
    shown = ", ".join(f"{a}-{b}" if b > a else str(a) for a, b in found[:most])
    return shown + (f" and {len(found) - most} more range(s)" if len(found) > most else "")


def _span(first: int, last: int) -> str:
    return f"rounds {first}-{last}" if last > first else f"round {first}"


def _span_words(numbers: Sequence[int]) -> str:
    shown = ranges(numbers)
    return f"round {shown}" if shown.isdigit() else f"rounds {shown}"


def clock(seconds: float) -> str:
    """'1:02:03' (h:mm:ss)."""
    whole = max(0, round(seconds))
    return f"{whole // 3600}:{whole % 3600 // 60:02d}:{whole % 60:02d}"


# -- resuming ----------------------------------------------------------------------------------

def resume_dir(soak_dir: Path, spec_sha256: str) -> list[str]:
    """Make an earlier soak's directory ready to go on: it must be a soak of this spec;
    the evidence its last session wrote moves to stops/stop-NN. What moved is returned."""
    marker = soak_dir / SOAK_FILE
    if not marker.is_file():
        raise SoakError(f"{soak_dir} is not a soak's directory (no {SOAK_FILE})")
    known = read_marker(marker)
    if known.get("spec_sha256") != spec_sha256:
        raise SoakError(f"{soak_dir} is a soak of another spec (sha256 "
                             f"{str(known.get('spec_sha256'))[:16]}..., this one "
                             f"{spec_sha256[:16]}...)")
    stale = [p for p in soak_dir.iterdir() if p.name not in KEPT]
    if not stale:
        return []
    stops = soak_dir / STOPS_DIR
    stops.mkdir(exist_ok=True)
    number = len([p for p in stops.iterdir() if p.name.startswith("stop-")]) + 1
    target = stops / f"stop-{number:02d}"
    target.mkdir()
    for path in stale:
        path.rename(target / path.name)
    return [p.name for p in stale]


#: soak.json is a few hundred bytes; a larger one is not ours.
MARKER_MOST = 64 * 1024


def read_marker(marker: Path) -> dict[str, Any]:
    """A soak's soak.json, checked as the untrusted input it is on resuming: bounded, an
    object, its duration and round count within what a soak may be asked for."""
    try:
        if marker.is_symlink() or marker.stat().st_size > MARKER_MOST:
            raise SoakError(f"{marker}: expected a soak's soak.json (a plain file of at most "
                            f"{MARKER_MOST // 1024} KiB)")
        known = json.loads(marker.read_bytes())
    except (OSError, ValueError, RecursionError) as exc:
        raise SoakError(f"{marker} cannot be read: {str(exc)[:200]}") from None
    if not isinstance(known, dict):
        raise SoakError(f"{marker}: expected a JSON object")
    duration, most = known.get("duration_s"), known.get("max_rounds")
    if duration is not None and (isinstance(duration, bool)
                                 or not isinstance(duration, (int, float))
                                 or not 0 < duration <= MAX_DURATION_S):
        raise SoakError(f"{marker}: duration_s: expected seconds above 0 and at most a year, "
                        f"got {str(duration)[:40]}")
    if most is not None and (isinstance(most, bool) or not isinstance(most, int)
                             or not 1 <= most <= MAX_ROUNDS):
        raise SoakError(f"{marker}: max_rounds: expected a whole number from 1 to "
                        f"{MAX_ROUNDS:,}, got {str(most)[:40]}")
    return known


# -- one round --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Round:
    """One finished (or stopped) round as its directory tells it."""

    number: int
    path: Path
    started: float
    ended: float
    status: str  # the round's end record: complete, partial, interrupted, ...
    states: dict[str, str]  # node -> healthy, failed or unreachable (nodes it checked)
    counts: dict[str, int] = field(default_factory=dict)


def node_state(entry: dict[str, Any]) -> str | None:
    """A node's state over a round from its verdict: None when the round checked nothing
    of it (deselected, not reached, or only undecided because SLURM had it busy)."""
    verdict = entry.get("verdict")
    if verdict == "UNREACHABLE":
        return UNREACHABLE
    if verdict == "REJECTED":
        return FAILED
    return HEALTHY if int(entry.get("checks_passed") or 0) > 0 else None


def read_round(path: Path, number: int) -> tuple[Round, list[dict[str, Any]]] | None:
    """The round in `path` and its result lines (read once, for the soak's tally); None
    when it left no results (it never started its checks)."""
    results_path = path / "results.jsonl"
    if not results_path.is_file():
        return None
    found = read_results(results_path)
    started = float(found.run.get("started_at") or 0.0)
    finished = [float(r["finished_at"]) for r in found.results
                if isinstance(r.get("finished_at"), (int, float))]
    ended = float(found.end["ended_at"]) if found.end is not None else \
        max(finished, default=started)
    states: dict[str, str] = {}
    with contextlib.suppress(*UNREADABLE):
        verdict = json.loads((path / "verdict.json").read_text(encoding="utf-8"))
        for entry in verdict.get("nodes") or []:
            state = node_state(entry) if isinstance(entry, dict) else None
            if state is not None:
                states[str(entry.get("node"))] = state
    counts = dict(found.end.get("counts") or {}) if found.end is not None else {}
    return Round(number, path, started, ended, found.status, states, counts), found.results


#: What a file a killed round left half-written raises as it is read: nothing is taken
#: from it.
UNREADABLE = (OSError, ValueError, TypeError)


# -- timelines --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Timelines:
    """Each node's spans over the soak, the soak's window, and the time in it when no round
    ran (a stopped soak, resumed later): not observed, so counted neither up nor down."""

    spans: dict[str, list[Span]]
    window: tuple[float, float]
    unobserved_s: float

    @property
    def observed_s(self) -> float:
        return max(0.0, self.window[1] - self.window[0] - self.unobserved_s)


def timelines(rounds: Sequence[Round], join_s: float = 120.0) -> Timelines:
    """A round's state holds from its start until the next round starts when that is
    within `join_s` of its end (the pause between rounds of one session), else until its
    own end; what lies between is not observed."""
    ordered = sorted(rounds, key=lambda r: r.started)
    spans: dict[str, list[Span]] = {}
    unobserved = 0.0
    for index, each in enumerate(ordered):
        end = each.ended
        after = ordered[index + 1] if index + 1 < len(ordered) else None
        if after is not None:
            if after.started - each.ended <= join_s:
                end = max(each.ended, after.started)
            else:
                unobserved += after.started - each.ended
        for node, state in each.states.items():
            spans.setdefault(node, []).append(Span(each.started, end, state))
    window = (ordered[0].started, ordered[-1].ended) if ordered else (0.0, 0.0)
    return Timelines(spans, window, unobserved)


# -- what the soak keeps of its rounds ------------------------------------------------------

@dataclass
class CaseTally:
    """One contract case over the rounds it ran in: its rounds, those it failed in, its
    first failing line and its last line (never every round's line)."""

    rounds: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)
    first_failed: dict[str, Any] | None = None
    last: dict[str, Any] = field(default_factory=dict)
    all_skipped: bool = True
    #: Failure spells (consecutive failing rounds of the case): [first, last, what the
    #: first round of the spell said]; the first MAX_SPELLS are kept, the rest counted.
    spells: list[list[Any]] = field(default_factory=list)
    more_spells: int = 0

    def add(self, number: int, record: dict[str, Any]) -> None:
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
    meta: dict[str, Any] = field(default_factory=dict)


class Tally:
    """What a soak keeps of its rounds, a round at a time, in memory that grows with the
    cases and figures, not with the rounds' lines: per case its rounds and failures, per
    figure its values, per node its first GPU probe and the growth seen since."""

    def __init__(self, flap_s: float = 30.0) -> None:
        self.flap_s = flap_s  # a NIC port seen down this long fails its node
        self.cases: dict[str, CaseTally] = {}
        self.series: dict[str, RoundSeries] = {}
        self.first_gpu: dict[str, tuple[int, dict[str, Any]]] = {}
        self.gpu_rounds: dict[str, list[int]] = {}
        self.growth: dict[str, list[str]] = {}  # per node, each change in full
        self.changed: dict[str, list[str]] = {}  # ... and in short: what was measured
        self.first_sdc: dict[tuple[str, str], tuple[int, int]] = {}
        self.first_nic: dict[str, tuple[int, list[dict[str, Any]]]] = {}
        # per node and port seen down: the round and time of the first reading of the spell
        self.down_since: dict[tuple[str, str], tuple[int, float]] = {}
        self._seen: set[tuple[str, str, str]] = set()

    def add(self, number: int, started: float, results: Iterable[dict[str, Any]],
            gpus: dict[str, dict[str, Any]],
            perf: dict[str, dict[str, Any]] | None = None,
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
                      ports: list[dict[str, Any]]) -> None:
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
                 payload: dict[str, Any]) -> None:
        """The SDC check's checksum of each GPU (by UUID) against its first round's."""
        for gpu in payload.get("gpus") or []:
            sdc = gpu.get("sdc") if isinstance(gpu, dict) else None
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
                  payload: dict[str, Any]) -> None:
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
             "rounds": len(values), "compared_case": case_id, "requirement": limits}
    return Case(case_id.rpartition("::")[2], f"soak.stability[{last['clause']}]",
                str(last.get("node")), passed, "" if passed else f"{text}: beyond {limits}",
                gpu=last.get("gpu"), props=props)


@dataclass(frozen=True)
class NicReading:
    """One NIC probe answer of a node in a round: when it was read, its counted ports."""

    at: float
    ports: list[dict[str, Any]]


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


def _payloads(path: Path) -> dict[str, dict[str, Any]]:
    """Per node, the payload of a probe's results file (nodes whose probe failed left
    out; an unreadable file: none)."""
    found: dict[str, dict[str, Any]] = {}
    with contextlib.suppress(*UNREADABLE):
        for node, result in json.loads(path.read_text(encoding="utf-8")).items():
            data = result.get("data") if isinstance(result, dict) else None
            if isinstance(data, dict) and not result.get("error"):
                found[str(node)] = data
    return found


def gpu_payloads(round_dir: Path, probe: str = "gpu") -> dict[str, dict[str, Any]]:
    """Per node, a probe's payload in a round (nodes whose probe failed left out): the
    NVML probe's, or (probe "gpu_perf") the torch probe's, the SDC check's there."""
    found: dict[str, dict[str, Any]] = {}
    for path in sorted((round_dir / "probes").glob(f"{probe}-*.json")):
        found.update(_payloads(path))
    return found


# -- the soak's own cases from the rounds' cases ------------------------------------------------

def aggregate(tally: CaseTally) -> dict[str, Any]:
    """One contract case over the soak: failed if it failed (or could not start) in any
    round, naming those rounds; skipped when it was skipped in every one; passed
    otherwise. Its figures are its last round's (its first failing round's when it
    failed)."""
    ran = len(tally.rounds)
    if tally.first_failed is not None:
        first, failing = tally.first_failed, tally.failed
        sim = any(said.startswith(SIM_MARK) for _, _, said in tally.spells)
        spells = "; ".join(f"{_span(a, b)}: {said.removeprefix(SIM_MARK)}"
                           for a, b, said in tally.spells)
        if tally.more_spells:
            spells += f"; and {tally.more_spells} more spell(s)"
        message = (f"{SIM_MARK if sim else ''}failed in {len(failing)} of {ran} round(s) "
                   f"({_span_words(failing)}); {spells}")
        return {**first, "outcome": "failed", "message": message, "rounds": ran,
                "rounds_failed": spans_of(failing)}
    if tally.all_skipped:
        return {**tally.last, "rounds": ran, "rounds_failed": []}
    return {**tally.last, "outcome": "passed", "phase": "call", "message": "",
            "rounds": ran, "rounds_failed": []}
