"""A client of NCCL's RAS service (NCCL 2.24 and later), run on a node by a rank of a job
that hangs: it asks the RAS thread of the job's processes on this node which ranks are
missing, dead or behind, and reads the answer into a small record.

The protocol, as read in NVIDIA/nccl at commit 5067397c2676d5aed50042fc39e5c8ee96eb0027
(v2.30.7-1; src/ras/client_support.cc, the server's command loop and its text and JSON
writers; src/ras/client.cc, the `ncclras` client; src/ras/ras_internal.h;
docs/userguide/source/troubleshooting/ras.rst and env.rst), with no code taken from it:

- the service listens on NCCL_RAS_ADDR (`host:port`, IPv6 in brackets), by default
  localhost:28028 (NCCL_RAS_CLIENT_PORT), in every process of a job unless
  NCCL_RAS_ENABLE=0; nothing listens with an older NCCL or between jobs;
- each command is one line. The client says `CLIENT PROTOCOL 2` (NCCL_RAS_CLIENT_PROTOCOL)
  and the server answers `SERVER PROTOCOL <n>` (a different n is only a warning);
  `TIMEOUT <seconds>` bounds the server's gathering from the other processes (5 s by
  default) and is answered `OK`; `SET FORMAT json` (NCCL 2.28.7 and later) is answered
  `OK`, and by an older server with `ERROR: Unknown command ...`: the text then;
- `STATUS` or `VERBOSE STATUS` (which lists every outlier rank rather than at most 10 and
  25 % of them) is answered with the whole report, after which the server closes the
  connection;
- the text report has an `Errors` section: `INCOMPLETE` (processes that sent no data),
  `DEAD` ("N job process(es) considered dead (unreachable via the RAS network)", each
  `Process <pid> on node <host> managing GPU <g>`), and per communicator
  `#<group>-<index> (<hash>) INCOMPLETE` with `Rank <r> -- GPU <g> managed by process
  <pid> on node <host>` (2.24's documentation shows `The missing rank: 21`); its
  `Warnings` section has `#.. MISMATCH` with `Communicator ranks have different <Coll>
  operation counts`, then `<n> ranks have launched up to operation <v>` (or `have not
  launched any operations`) and the outliers' `Rank <r> -- ...` or `Rank <r> has launched
  up to operation <v> -- ...` lines;
- the JSON report has `nccl_version` and `communicators`, each with `size`, `ranks` (each
  `rank`, `host`, `pid`, `cuda_dev`, `collective_counts` per collective) and
  `missing_ranks` (each `rank`, `host`, `pid`, `cuda_dev`, `status: {unresponsive,
  considered_dead}`): the dead are the missing ranks considered dead, and a count that
  differs among a communicator's ranks is a mismatch (RAS leaves that reading to us).

Every answer is a node's, not trusted: at most MAX_BYTES are read, within the deadline;
JSON must be strict (no NaN or Infinity) and of the shape above; whatever else comes back
is said (`reason`), never raised. Stdlib only: the job programs carry it.
"""

from __future__ import annotations

import json
import os
import re
import socket
import time
from typing import TypedDict

DEFAULT_ADDR = "localhost:28028"
PROTOCOL = 2
#: The most of an answer read (a status of thousands of ranks in JSON is some 100 kB).
MAX_BYTES = 1 << 20
#: The most ranks, processes and mismatches a report keeps of each kind.
MAX_KEPT = 64
_LINE = 1024  # the longest handshake line


class RankRef(TypedDict, total=False):
    """A rank RAS named: its number in its communicator, the communicator's size (None:
    not said), its host as RAS names it (an address), its process and GPU."""

    rank: int
    size: int | None
    host: str
    pid: int | None
    gpu: str


class CountGroup(TypedDict):
    """The ranks of a communicator at one operation count: how many, and which (RAS lists
    only the outliers' ranks; `ranks` may be empty)."""

    count: int
    ranks_count: int
    ranks: list[int]


class Mismatch(TypedDict):
    """A collective whose operation counts differ among a communicator's ranks: each count
    with the ranks at it."""

    collective: str
    size: int | None
    groups: list[CountGroup]


class DeadProcess(TypedDict):
    """A process the text report's DEAD section names (it names no rank)."""

    host: str
    pid: int
    gpus: str


class RasReport(TypedDict, total=False):
    """What RAS said (`available`), or why it could not be asked (`reason`)."""

    available: bool
    reason: str
    addr: str
    format: str  # json or text
    nccl: str
    communicators: int
    dead: list[RankRef]
    missing: list[RankRef]  # missing, not (yet) considered dead
    dead_processes: list[DeadProcess]  # the text's DEAD list
    mismatched: list[Mismatch]
    truncated: bool


class RasError(Exception):
    """Why RAS could not be asked or answered nothing readable."""


def address(value: str | None = None) -> tuple[str, int]:
    """(host, port) of NCCL_RAS_ADDR's value (`value`, else the environment's, else
    DEFAULT_ADDR): 'host:port', '[::1]:port'. RasError for a value that is not."""
    text = value if value is not None else os.environ.get("NCCL_RAS_ADDR") or DEFAULT_ADDR
    found = re.fullmatch(r"\[([0-9A-Fa-f:.]{1,64})\]:(\d{1,5})|([^:\s\[\]]{1,255}):(\d{1,5})",
                         text.strip())
    if found is None:
        raise RasError(f"NCCL_RAS_ADDR {text[:80]!r} is not host:port")
    host = found.group(1) or found.group(3)
    port = int(found.group(2) or found.group(4))
    if not 0 < port < 65536:
        raise RasError(f"NCCL_RAS_ADDR {text[:80]!r}: no such port")
    return host, port


def disabled() -> str:
    """Why RAS is off in this process's environment ('' when it is not)."""
    value = os.environ.get("NCCL_RAS_ENABLE", "").strip()
    return "NCCL_RAS_ENABLE=0: RAS is disabled" if value == "0" else ""


class _Connection:
    """A socket read a line or everything at a time, within a deadline and MAX_BYTES."""

    def __init__(self, sock: socket.socket, deadline: float, limit: int) -> None:
        self.sock, self.deadline, self.limit = sock, deadline, limit
        self.buffer = b""
        self.read = 0

    def _more(self) -> bool:
        """Read what comes (False at the end of the stream)."""
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise RasError("no answer within the time allowed")
        self.sock.settimeout(left)
        try:
            chunk = self.sock.recv(min(65536, self.limit - self.read + 1))
        except TimeoutError:
            raise RasError("no answer within the time allowed") from None
        self.read += len(chunk)
        self.buffer += chunk
        return bool(chunk)

    def line(self) -> str:
        while b"\n" not in self.buffer:
            if len(self.buffer) > _LINE:
                raise RasError("the answer's line is too long: not NCCL's RAS")
            if not self._more():
                raise RasError("the connection was closed before an answer")
        raw, _, self.buffer = self.buffer.partition(b"\n")
        return raw.decode("utf-8", "replace").strip()

    def rest(self) -> tuple[str, bool]:
        """Everything up to the end of the stream, and whether it was cut at the limit."""
        while self.read <= self.limit and self._more():
            pass
        cut = self.read > self.limit
        data = self.buffer[:self.limit]
        return data.decode("utf-8", "replace"), cut

    def send(self, line: str) -> None:
        self.sock.settimeout(max(0.01, self.deadline - time.monotonic()))
        try:
            self.sock.sendall(line.encode() + b"\n")
        except TimeoutError:
            raise RasError("no answer within the time allowed") from None


def ask(addr: str | None = None, timeout_s: float = 10.0, verbose: bool = True,
        fmt: str = "json", limit: int = MAX_BYTES) -> tuple[str, str, bool]:
    """(the format it answered in, the status report, whether it was cut at `limit`) from
    the RAS service at `addr` (NCCL_RAS_ADDR's form; None: the environment's or the
    default), within `timeout_s` in all. JSON is asked for and text taken from a server
    that does not know it. RasError says why there is no report."""
    host, port = address(addr)
    deadline = time.monotonic() + timeout_s
    try:
        sock = socket.create_connection((host, port), timeout=max(0.01, timeout_s))
    except OSError as exc:
        why = exc.strerror or str(exc) or type(exc).__name__
        raise RasError(f"nothing answers at {host}:{port} ({why}): NCCL older than "
                       "2.24, RAS disabled (NCCL_RAS_ENABLE=0), another NCCL_RAS_ADDR, or "
                       "no NCCL job running on this node") from None
    with sock:
        conn = _Connection(sock, deadline, limit)
        try:
            conn.send(f"CLIENT PROTOCOL {PROTOCOL}")
            hello = conn.line()
            if not hello.upper().startswith("SERVER PROTOCOL "):
                raise RasError(f"not NCCL's RAS: it answered {hello[:80]!r} to the handshake")
            # the server's own gathering ends well before our deadline
            conn.send(f"TIMEOUT {max(1, int(timeout_s / 2))}")
            said = conn.line()
            if said.upper() != "OK":
                raise RasError(f"RAS refused its timeout: {said[:80]!r}")
            answered = "text"
            if fmt == "json":
                conn.send("SET FORMAT json")
                said = conn.line()
                if said.upper() == "OK":
                    answered = "json"
                elif not said.upper().startswith("ERROR"):
                    raise RasError(f"RAS answered {said[:80]!r} to SET FORMAT json")
            conn.send("VERBOSE STATUS" if verbose else "STATUS")
            text, cut = conn.rest()
        except OSError as exc:
            raise RasError(f"the connection failed: {exc.strerror or exc}") from None
    if not text.strip():
        raise RasError("RAS closed the connection without a status")
    return answered, text, cut


# -- reading the answer -----------------------------------------------------------------

def _whole(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _short(value: object) -> str:
    return value[:100] if isinstance(value, str) else ""


def _constant(name: str) -> float:
    raise ValueError(f"{name} is not JSON")


def parse_json(text: str) -> RasReport:
    """The JSON report read (strict: no NaN or Infinity; a shape not NCCL's is a
    RasError)."""
    try:
        data = json.loads(text, parse_constant=_constant)
    except (ValueError, RecursionError) as exc:
        raise RasError(f"RAS's JSON does not parse: {str(exc)[:80]}") from None
    comms = data.get("communicators") if isinstance(data, dict) else None
    if not isinstance(comms, list):
        raise RasError("RAS's JSON has no list of communicators")
    report: RasReport = {"available": True, "format": "json",
                         "nccl": _short(data.get("nccl_version")),
                         "communicators": len(comms), "dead": [], "missing": [],
                         "dead_processes": [], "mismatched": []}
    for comm in comms:
        if not isinstance(comm, dict):
            raise RasError("a communicator of RAS's JSON is not an object")
        size = _whole(comm.get("size"))
        ranks, missing = comm.get("ranks"), comm.get("missing_ranks", [])
        if not isinstance(ranks, list) or not isinstance(missing, list):
            raise RasError("a communicator of RAS's JSON has no list of ranks")
        for entry in missing:
            if not isinstance(entry, dict) or _whole(entry.get("rank")) is None:
                raise RasError("a missing rank of RAS's JSON has no rank number")
            given = entry.get("status")
            dead = isinstance(given, dict) and given.get("considered_dead") is True
            ref: RankRef = {"rank": int(entry["rank"]), "size": size,
                            "host": _short(entry.get("host")), "pid": _whole(entry.get("pid")),
                            "gpu": str(_whole(entry.get("cuda_dev")))}
            (report["dead"] if dead else report["missing"]).append(ref)
        report["mismatched"] += _json_mismatches(ranks, size)
    return _bounded(report)


def _json_mismatches(ranks: list[object], size: int | None) -> list[Mismatch]:
    """The collectives whose counts differ among a communicator's ranks."""
    counts: dict[str, dict[int, list[int]]] = {}
    for entry in ranks:
        if not isinstance(entry, dict) or _whole(entry.get("rank")) is None:
            raise RasError("a rank of RAS's JSON has no rank number")
        per = entry.get("collective_counts")
        if not isinstance(per, dict):
            continue
        for name, count in per.items():
            if _whole(count) is not None:
                counts.setdefault(str(name)[:40], {}).setdefault(count, []).append(
                    int(entry["rank"]))
    found: list[Mismatch] = []
    for name, by_count in counts.items():
        if len(by_count) > 1:
            groups: list[CountGroup] = [
                {"count": count, "ranks_count": len(members),
                 "ranks": sorted(members)[:MAX_KEPT]}
                for count, members in sorted(by_count.items(),
                                             key=lambda kv: (-len(kv[1]), kv[0]))]
            found.append({"collective": name, "size": size, "groups": groups})
    return found


_PROCESS = re.compile(r"Process (\d{1,10}) on node (\S{1,255}) managing GPUs? (.{0,200})")
_RANK = re.compile(r"Rank (\d{1,10})(?: has launched up to operation (\d{1,20})"
                   r"| has not launched any operations)?(?: has status \S{1,20})?"
                   r"(?: -- GPU (\S{1,20})(?: \(NVML \d{1,10}\))? managed by process "
                   r"(\d{1,10}) on node (\S{1,255}))?")
_GROUP = re.compile(r"(\d{1,10}) ranks have (?:launched up to operation (\d{1,20})"
                    r"|not launched any operations)")
_DIFFERENT = re.compile(r"Communicator ranks have different (\w{1,40}) operation counts")
_COMM = re.compile(r"#\d{1,10}-\d{1,10} \([0-9a-fA-F]{1,32}\) (INCOMPLETE|MISMATCH|ERROR)")
_OLD_MISSING = re.compile(r"The missing ranks?: ([\d, ]{1,2000})")
_VERSION = re.compile(r"NCCL version (\S{1,40})")


def parse_text(text: str) -> RasReport:
    """The text report read line by line (each pattern anchored and bounded: linear)."""
    report: RasReport = {"available": True, "format": "text", "nccl": "", "communicators": 0,
                         "dead": [], "missing": [], "dead_processes": [], "mismatched": []}
    section, missing = "", list[RankRef]()
    mismatch: Mismatch | None = None
    for raw in text.splitlines():
        line = raw.strip()[:600]
        if not report["nccl"] and (found := _VERSION.match(line)):
            report["nccl"] = found.group(1)
        if line in ("DEAD", "INCOMPLETE", "TIMEOUT", "Errors", "Warnings"):
            section, mismatch = line, None
            continue
        if (found := _COMM.match(line)):
            section, mismatch = f"comm {found.group(1)}", None
            continue
        if section == "DEAD" and (found := _PROCESS.match(line)):
            report["dead_processes"].append({"host": found.group(2),
                                             "pid": int(found.group(1)),
                                             "gpus": found.group(3).strip()})
        elif section == "comm INCOMPLETE":
            if (found := _OLD_MISSING.match(line)):
                missing += [{"rank": int(r), "size": None, "host": "", "pid": None, "gpu": ""}
                            for r in re.findall(r"\d{1,10}", found.group(1))]
            elif (found := _RANK.match(line)):
                missing.append(_text_rank(found))
        elif section == "comm MISMATCH":
            mismatch = _text_mismatch(line, mismatch, report["mismatched"])
    dead = {(p["host"], p["pid"]) for p in report["dead_processes"]}
    for ref in missing:
        (report["dead"] if (ref.get("host"), ref.get("pid")) in dead
         else report["missing"]).append(ref)
    return _bounded(report)


def _text_rank(found: re.Match[str]) -> RankRef:
    pid = found.group(4)
    return {"rank": int(found.group(1)), "size": None, "host": found.group(5) or "",
            "pid": int(pid) if pid else None, "gpu": found.group(3) or ""}


def _text_mismatch(line: str, mismatch: Mismatch | None,
                   found: list[Mismatch]) -> Mismatch | None:
    """One line of a MISMATCH block: a collective's counts and the ranks at each."""
    if (match := _DIFFERENT.match(line)):
        mismatch = {"collective": match.group(1), "size": None, "groups": []}
        found.append(mismatch)
    elif mismatch is not None and (match := _GROUP.match(line)):
        mismatch["groups"].append({"count": int(match.group(2) or 0),
                                   "ranks_count": int(match.group(1)), "ranks": []})
    elif mismatch is not None and (match := _RANK.match(line)):
        rank = int(match.group(1))
        if match.group(2) is not None or "has not launched" in line:  # a group of one
            mismatch["groups"].append({"count": int(match.group(2) or 0), "ranks_count": 1,
                                       "ranks": [rank]})
        elif mismatch["groups"]:
            mismatch["groups"][-1]["ranks"].append(rank)
    elif line.startswith("Communicator ranks have different status"):
        return None  # a status mismatch: not a count
    return mismatch


def _bounded(report: RasReport) -> RasReport:
    for key in ("dead", "missing", "dead_processes", "mismatched"):
        values = report.get(key)
        if isinstance(values, list) and len(values) > MAX_KEPT:
            report[key] = values[:MAX_KEPT]
            report["truncated"] = True
    return report


def status(addr: str | None = None, timeout_s: float = 10.0) -> RasReport:
    """RAS's status read (`available`), or why there is none (`reason`): never raises."""
    where = addr if addr is not None else os.environ.get("NCCL_RAS_ADDR") or DEFAULT_ADDR
    off = disabled()
    if off:
        return {"available": False, "reason": off, "addr": where[:100]}
    try:
        fmt, text, cut = ask(addr, timeout_s)
        if cut and fmt == "json":
            raise RasError(f"RAS's JSON answer is over {MAX_BYTES} bytes: not read")
        report = parse_json(text) if fmt == "json" else parse_text(text)
    except RasError as exc:
        return {"available": False, "reason": str(exc), "addr": where[:100]}
    except Exception as exc:  # a node's answer must never crash the rank
        return {"available": False, "reason": f"RAS's answer could not be read "
                f"({type(exc).__name__})", "addr": where[:100]}
    if cut:  # the text read as far as it came
        report["truncated"] = True
    report["addr"] = where[:100]
    return report


#: How long a hung rank asks RAS for, in all (RAS's own gathering gets half).
HANG_QUERY_S = 10.0


def hang_status(backend: str, timeout_s: float = HANG_QUERY_S) -> RasReport:
    """What a rank past its bound adds to its hang report: RAS's status over NCCL, or why
    there is none (a gloo job has no RAS)."""
    if backend != "nccl":
        return {"available": False, "reason": f"the job ran over {backend[:20]}, not NCCL"}
    return status(None, timeout_s)
