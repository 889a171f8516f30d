"""What a node may plausibly report, and what physics lets it measure: declared once.

A node's answer is the other party's claim. A fact it reports (its cores, its memory, a
GPU's memory, a port's rate or error counter) outside the range any real machine has, or
a figure above the physical ceiling of what the spec declares (a busbw above the links'
theoretical rate, a round trip shorter than any wire's), is bad output of that node: its
check fails naming the field, the value and the range, and the figure never enters a
median or an aggregate. The ranges are wide on purpose: they refuse the impossible, never
the unusual (a machine of 4,096 cores passes; one of 1e308 does not).

- `FACTS`: per clause family (`host.cpu_cores`), the field it reads and its range;
- `PORT_FIELDS`, `COUNTER`: the NIC probe's per-port numbers (fabric.ports_of);
- `CEILING_FACTOR`, `PEAK_FIGURES`, `MIN_ROUND_TRIP_S`: the physical bounds a measured
  figure is held to (interconnect busbw over the theoretical rate the spec implies; a
  GPU's matmul and memory bandwidth over its model's published peak; a network round
  trip's floor).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from pytest_cluster.units import finite, format_number

KIB, GIB, TIB, PIB = 2**10, 2**30, 2**40, 2**50
GBIT = 1e9 / 8  # bytes/s in a Gb/s
#: The most a 64-bit counter holds (an int: compared exactly, never as the float 2.0**64).
MOST_COUNT = 2**64 - 1


@dataclass(frozen=True)
class Range:
    """A field a node reports and the values a real machine can have (both ends in)."""

    field: str  # as the probe names it: 'cpu.cores', 'counters.link_downed'
    low: float
    high: float
    unit: str = ""  # what the value counts, as shown: 'cores', 'bytes', 'C'
    whole: bool = False  # a count: a whole number only

    def holds(self, value: object) -> bool:
        number = finite(value)
        if number is None:
            return False
        # an integer as the node gave it, not as the float it rounds to (2**64 + 1 is
        # 2.0**64 as a float, and no 64-bit counter holds it)
        exact: float = value if isinstance(value, int) else number
        return self.low <= exact <= self.high and (not self.whole or number.is_integer())

    def shown(self) -> str:
        unit = f" {self.unit}" if self.unit else ""
        whole = " (a whole number)" if self.whole else ""
        return f"{_said(self.low)} to {_said(self.high)}{unit}{whole}"

    def refused(self, value: object) -> str | None:
        """None where `value` is plausible, else the one line saying why not: 'the node
        reported cpu.cores = 1e+308, outside the plausible 1 to 65536 cores'."""
        if self.holds(value):
            return None
        number = finite(value)
        said = _said(value) if number is not None else repr(value)[:60]
        return (f"the node reported {self.field} = {said}, outside the plausible "
                f"{self.shown()} (bad output of the node)")


#: Per clause family: the fact a node reports and its plausible range (base units).
FACTS: Mapping[str, Range] = MappingProxyType({
    "host.cpu_cores": Range("cpu.cores", 1, 65_536, "cores", whole=True),
    "host.cpu_threads": Range("cpu.threads", 1, 262_144, "threads", whole=True),
    "host.memory": Range("memory.total_bytes", 64 * 2**20, 64 * TIB, "bytes"),
    "host.memory_available": Range("memory.available_bytes", 0, 64 * TIB, "bytes"),
    "storage.capacity": Range("capacity.total_bytes", 0, 2**70, "bytes", whole=True),
    "storage.free": Range("capacity.free_bytes", 0, 2**70, "bytes", whole=True),
    "gpus.count": Range("count", 0, 1_024, "GPUs", whole=True),
    "gpus.memory": Range("memory.total", 0, 16 * TIB, "bytes"),
    "gpus.temperature": Range("temperature_c", -60, 200, "C"),
    "gpus.power_limit": Range("power_limit_w", 0, 20_000, "W"),
    "gpus.ecc_uncorrected": Range("ecc.volatile.uncorrected", 0, MOST_COUNT, "errors",
                                  whole=True),
    "gpus.ecc_corrected": Range("ecc.volatile.corrected", 0, MOST_COUNT, "errors", whole=True),
    # what any GPU can measure, whatever model it names (a model the reference table
    # lacks has no published peak to bound it): about 10 x the fastest there is
    "gpus.matmul": Range("matmul", 0, 1e17, "FLOP/s"),  # B200: 4.5e15 dense fp8
    "gpus.memory_bandwidth": Range("copy.bytes_per_s", 0, 100e12, "bytes/s"),  # B200: 8e12
    "gpus.h2d": Range("h2d.bytes_per_s", 0, 2e12, "bytes/s"),  # NVLink-C2C: 450e9
    "gpus.d2h": Range("d2h.bytes_per_s", 0, 2e12, "bytes/s"),
    "gpus.p2p": Range("p2p.bytes_per_s", 0, 4e12, "bytes/s"),  # NVLink 5: 900e9 each way
})

#: A NIC port's numbers (the NIC probe's `ports[]`), each where the probe gives one.
PORT_FIELDS: tuple[Range, ...] = (
    Range("rate_gbit", 0, 12_800, "Gb/s"),
    Range("mtu", 68, 2**20, "bytes"),
)
#: Every error or traffic counter of a port: a count, never negative, within 64 bits.
COUNTER = Range("counters", 0, MOST_COUNT, whole=True)

#: A time a rank reports of one step or exchange (a training rank's forward pass, its
#: wait, a link exchange): a day at most; a figure outside is in no median.
STEP_SECONDS = Range("seconds", 0, 86_400, "s")

#: The CPU time a single-threaded worker (a data loader's) spends per second of its wall
#: time, both taken over the same calls: at most 1, and a margin for the clocks' grain.
ONE_THREAD_CPU = Range("cpu_s per second", 0, 1.5, "CPU s/s")
#: ... plus this many CPU seconds, whatever the wall time (a short metadata test).
CPU_GRAIN_S = 0.05

#: A measured figure above CEILING_FACTOR x its theoretical peak is bad output: busbw over
#: the rate the spec's links imply (NVLink SHARP and in-network reduction reach a little
#: over the plain formula's rate, never twice it); a GPU's matmul or memory bandwidth
#: over its model's published figure (reference.GPU_FIGURES: a datasheet peak, or what
#: mamf-finder reached).
CEILING_FACTOR = 2.0
#: The figures of reference.GPU_FIGURES that bound a measurement from above.
PEAK_FIGURES = ("matmul.", "memory_bandwidth")
#: The shortest round trip a network between two nodes has: RDMA's best is about 1.5 us,
#: shared memory inside one host about 0.4 us; a pair timed under 0.5 us has measured
#: nothing that crossed a wire (a one-way latency of 0.25 us).
MIN_ROUND_TRIP_S = 0.5e-6

def _said(value: object) -> str:
    """A number as shown: an integer of 16 digits or more as it is (2**64 + 1 is not
    2**64 - 1, though both are 1.845e+19), else format_number's."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**15:
        return str(value)[:40] + ("..." if len(str(value)) > 40 else "")
    number = finite(value)
    return format_number(number) if number is not None else repr(value)[:60]


def family(key: str) -> str:
    """A clause's family from its key: 'storage[/data].capacity' is storage.capacity,
    'gpus.memory' itself."""
    return re.sub(r"\[[^\]]*\]", "", key)


def fact_refused(key: str, value: object) -> str | None:
    """Why the value a node reported for the clause `key` is no plausible one (None where
    it is, or where the clause reads no fact)."""
    name = family(key)  # a table's clause ('gpus.matmul.bf16') is bound as its table's
    limit = FACTS.get(name) or FACTS.get(name.rsplit(".", 1)[0])
    return None if limit is None else limit.refused(value)


def over_ceiling(measured: float, peak: float, what: str) -> str | None:
    """Why `measured` cannot be (above CEILING_FACTOR x `peak`; `what` names the peak, as
    'the theoretical 450 GB/s'), or None where it can."""
    if peak <= 0 or measured <= CEILING_FACTOR * peak:
        return None
    return (f"{format_number(measured / peak)} x {what}: above the physical ceiling of "
            f"{format_number(CEILING_FACTOR)} x it (bad output of the node)")


def floor_refused(what: str, seconds: float) -> str:
    """What a node claimed of a round trip under MIN_ROUND_TRIP_S, in one line."""
    return (f"a {what} of {format_number(seconds * 1e6)} us, under the "
            f"{format_number(MIN_ROUND_TRIP_S * 1e6)} us no network between two nodes "
            "goes below (bad output of the node)")
