"""perftest's bandwidth tools (ib_write_bw) between two nodes, one rail at a time: the
command line each side runs (the perftest rank program, probes/jobs/perftest.py, runs it) and
what the client printed, read into a rate. Pure functions on untrusted text.

The result line follows the header perftest prints (src/perftest_parameters.h,
RESULT_FMT*): `#bytes #iterations BW peak[U] BW average[U] MsgRate[Mpps]`, with `#sl`
after `#bytes` for QoS runs; U is `Gb/sec` with --report_gbits (125,000,000 bytes/s: the
code's format_factor), else `MB/sec` (MiB/sec in newer versions: 2^20 bytes/s).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

#: The tools a rail may be measured with (fabric.rail_tool), besides the collective.
TOOLS = ("ib_write_bw",)
#: Bytes/s in each unit perftest reports.
UNITS = {"Gb/sec": 125_000_000.0, "MB/sec": float(2**20), "MiB/sec": float(2**20)}
_UNIT = re.compile(r"BW average\[([A-Za-z/]+)\]")
#: How much of a client's output is read.
MAX_TEXT = 256 * 1024


@dataclass(frozen=True)
class Result:
    bytes: int  # message size
    iterations: int
    peak: float  # bytes/s (0: not measured, as perftest says with -D)
    average: float  # bytes/s


def parse(text: str) -> Result:
    """The result line under perftest's bandwidth header; ValueError saying why not."""
    factor = None
    qos = False
    found = None
    for line in text[-MAX_TEXT:].splitlines():
        unit = _UNIT.search(line)
        if unit is not None and "#bytes" in line:
            factor = UNITS.get(unit.group(1))
            if factor is None:
                raise ValueError(f"perftest reported its bandwidth in {unit.group(1)!r}")
            qos = "#sl" in line
            continue
        words = line.split()
        if factor is None or len(words) < 5 + qos or not words[0].isdigit():
            continue
        try:
            values = [float(w) for w in words[:5 + qos]]
        except ValueError:
            continue
        if qos:
            values.pop(1)
        found = Result(int(values[0]), int(values[1]), values[2] * factor, values[3] * factor)
    if factor is None:
        raise ValueError("no perftest bandwidth table (no '#bytes ... BW average[...]' line)")
    if found is None or not math.isfinite(found.average):
        raise ValueError("perftest printed its header but no result line")
    return found


#: A device name as the kernel gives it (the command line takes it from a node's answer).
_DEVICE = re.compile(r"^[A-Za-z0-9_.\-]{1,64}$")
#: The message size and the duration of each client's run.
MESSAGE = 2**20
SECONDS = 5.0


def command(tool: str, device: str, port: int, cuda: int | None = None,
            size: int = MESSAGE, seconds: float = SECONDS) -> list[str]:
    """Both sides' command line without the TCP port and the server, which the perftest
    rank program adds (`-p`, MASTER_ADDR): bandwidth in Gb/s (--report_gbits) for
    `seconds` (-D) on the HCA port; --use_cuda puts the buffer in that GPU's memory
    (GPUDirect RDMA). ValueError for a tool or device name it will not run."""
    if tool not in TOOLS:
        raise ValueError(f"not a perftest tool this runs: {tool!r}")
    if not _DEVICE.match(device) or not 1 <= port <= 255:
        raise ValueError(f"not an HCA port: {device[:64]!r} port {port}")
    line = [tool, "-d", device, "-i", str(port), "-s", str(size), "-D", f"{seconds:g}",
            "--report_gbits", "-F"]
    return [*line, f"--use_cuda={cuda}"] if cuda is not None else line


def group_rate(clients: Sequence[dict[str, object]]) -> tuple[float, str]:
    """(the slowest client's average bytes/s, why not: '' when every client read)."""
    rates = []
    for client in clients:
        if client.get("exit_code") != 0:
            said = str(client.get("stderr_tail") or "").strip().splitlines()
            return math.nan, (f"rank {client.get('rank')}: {client.get('tool')} exited with "
                              f"{client.get('exit_code')}: {said[-1][:300] if said else ''}")
        try:
            rates.append(parse(str(client.get("stdout") or "")).average)
        except ValueError as exc:
            return math.nan, f"rank {client.get('rank')}: {exc}"
    if not rates:
        return math.nan, "no client measured"
    return min(rates), ""
