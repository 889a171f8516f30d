"""What nccl-tests printed (its `-J` JSON file, else the table on stdout), read into rows:
per payload the out-of-place and in-place time, algbw and busbw, and the wrong elements;
the run's out-of-bounds count and average bus bandwidth. Pure functions on untrusted text
(a node's output): bounded, and any text that is not nccl-tests' output is a ValueError
saying why.

The formats read, by nccl-tests version (src/util.cu writes both):
- the table, 2.0-2.10: `size count type time algbw busbw error ...` (`error` as 0e+00), or
  with `redop` before `time`; 2.10 on: `size count type redop root time algbw busbw #wrong
  time algbw busbw #wrong` (`#wrong` N/A without -c); 2.19 with per-iteration timing adds
  `i_min i_max i_p99 i_cv%` to each side; `-R` adds a timestamp at the end;
- the JSON file (2.17 on, `-J FILE.json`): `results` rows with `size`, `count`, `type`,
  `redop`, `out_of_place` and `in_place` (`time` or `cpu_time` in us, `alg_bw`, `bus_bw` in
  GB/s, `nwrong`), `out_of_bounds.count` and `average_bus_bandwidth.bandwidth` (spelled
  `average_bus_bandwidith.bandwidith` before 2.17.9). It writes NaN as "nan" and an
  infinity as a bare `inf`, which JSON has not.

Either form is also read as `srun -l` / `--label` prints it, `0: ` before every line. A
time, a bandwidth or a count that is not a finite number, or is negative (`nan`, `inf`,
`-5`, `#wrong -3`, `Avg bus bandwidth : nan`), is refused naming its row and field, in
the table as in the JSON file: no figure a contract is judged on is ever NaN or infinite.
Every line is read by splitting it and by anchored patterns of bounded repeats, and a
header's columns are laid out once: linear in the text.

GB/s is nccl-tests' 1e9 bytes/s; every rate here is in bytes/s.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from pytest_cluster.contract.sections.busbw import CollectiveRun, SizePoint
from pytest_cluster.probes.nccl_tests import COLLECTIVE_BINARY

#: The most text read of one run, and the most rows kept.
MAX_TEXT = 4 * 2**20
MAX_ROWS = 4096
#: The most columns a header may name (2.19's per-iteration table, the widest: 23).
MAX_COLUMNS = 64
GB = 1e9


@dataclass(frozen=True)
class Side:
    """One side of a row: out-of-place or in-place."""

    time_us: float  # as nccl-tests prints it: one operation, microseconds
    algbw: float  # bytes/s
    busbw: float  # bytes/s
    wrong: int | None  # None: not checked (nccl-tests run without -c)


@dataclass(frozen=True)
class Row:
    bytes: int
    count: int
    type: str
    redop: str
    out_of_place: Side | None  # None: a trace replay prints only in-place
    in_place: Side | None

    @property
    def busbw(self) -> float:
        """The figure: out-of-place busbw (in-place where there is none)."""
        side = self.out_of_place or self.in_place
        return side.busbw if side is not None else math.nan

    @property
    def wrong(self) -> int:
        return sum(side.wrong or 0 for side in (self.out_of_place, self.in_place)
                   if side is not None)


@dataclass(frozen=True)
class Report:
    rows: tuple[Row, ...]
    out_of_bounds: int | None  # wrong values over the run, as its footer says
    avg_busbw: float | None  # bytes/s, the footer's average
    source: str  # "json" or "text"
    version: str | None = None  # nccl-tests' version, where printed
    errors: tuple[str, ...] = ()  # what nccl-tests reported as errors


def _number(value: Any, what: str) -> float:
    """A number nccl-tests wrote (a JSON number, "nan", "inf"); ValueError if not one."""
    if isinstance(value, bool):
        raise ValueError(f"{what} is not a number: {value!r}")
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str) and value.strip().lower() in ("nan", "-nan", "inf", "-inf"):
        return float(value)
    raise ValueError(f"{what} is not a number: {str(value)[:40]!r}")


def _shown(value: Any) -> str:
    """A value as a message quotes it: a string's first 40 characters, quoted."""
    return repr(value[:40]) if isinstance(value, str) else repr(value)[:40]


def _measured(value: Any, what: str) -> float:
    """A time, a bandwidth or a count nccl-tests wrote (a number, or its text in the
    table), finite and not negative; ValueError naming `what` otherwise."""
    try:
        number = _number(value, what) if not isinstance(value, str) else float(value)
    except OverflowError:  # an integer beyond a float
        number = math.inf
    except ValueError:
        raise ValueError(f"{what} is not a number: {_shown(value)}") from None
    if not math.isfinite(number):
        raise ValueError(f"{what} is not a finite number: {_shown(value)}")
    if number < 0:
        raise ValueError(f"{what} is negative: {_shown(value)}")
    return number


def _wrong(value: Any, what: str) -> int | None:
    """A count of wrong elements; None where not checked (N/A, null)."""
    if value is None or value == "N/A":
        return None
    try:
        number = _measured(value, what)
    except ValueError:
        raise ValueError(f"{what} is not a count: {_shown(value)}") from None
    if number != int(number):
        raise ValueError(f"{what} is not a count: {_shown(value)}")
    return int(number)


# -- the JSON file ------------------------------------------------------------------------------

_BARE = re.compile(r"(?<=[:\[,])(\s*)(-?inf|-?nan)(?=\s*[,\]}])")


def parse_json(text: str) -> Report:
    """The `-J` file's results; ValueError saying what is wrong."""
    if len(text) > MAX_TEXT:
        raise ValueError(f"the JSON file is {len(text)} characters (at most {MAX_TEXT})")
    try:
        data = json.loads(_BARE.sub(r'\1"\2"', text))
    except RecursionError:
        raise ValueError("not JSON: nested too deeply") from None
    except ValueError as exc:
        raise ValueError(f"not JSON: {str(exc)[:200]}") from None
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise ValueError("not nccl-tests' JSON output: no list of results")
    if len(data["results"]) > MAX_ROWS:
        raise ValueError(f"{len(data['results'])} results (at most {MAX_ROWS})")
    rows = []
    for index, item in enumerate(data["results"]):
        if not isinstance(item, dict):
            raise ValueError(f"result {index} is not a map")
        if "size" not in item:
            raise ValueError(f"result {index} has no 'size'")
        rows.append(Row(_count(item["size"], f"result {index} size"),
                        _count(item.get("count", 0), f"result {index} count"),
                        _label(item.get("type")), _label(item.get("redop")),
                        _json_side(item.get("out_of_place"), f"result {index} out_of_place"),
                        _json_side(item.get("in_place"), f"result {index} in_place")))
    bounds = data.get("out_of_bounds")
    average = data.get("average_bus_bandwidth", data.get("average_bus_bandwidith"))
    bandwidth = (average.get("bandwidth", average.get("bandwidith"))
                 if isinstance(average, dict) else None)
    errors = data.get("errors")
    return Report(tuple(rows),
                  _wrong(bounds.get("count"), "out_of_bounds.count")
                  if isinstance(bounds, dict) else None,
                  _measured(bandwidth, "average_bus_bandwidth") * GB
                  if bandwidth is not None else None, "json", None,
                  tuple(str(e)[:400] for e in errors[:8]) if isinstance(errors, list) else ())


def _json_side(side: Any, what: str) -> Side | None:
    if side is None:
        return None
    if not isinstance(side, dict):
        raise ValueError(f"{what} is not a map")
    time_us = side.get("time", side.get("cpu_time"))
    return Side(_measured(time_us, f"{what}.time"),
                _measured(side.get("alg_bw"), f"{what}.alg_bw") * GB,
                _measured(side.get("bus_bw"), f"{what}.bus_bw") * GB,
                _wrong(side.get("nwrong"), f"{what}.nwrong"))


def _count(value: Any, what: str) -> int:
    """A size or an element count: a whole number, not negative."""
    if isinstance(value, str) and value.strip().isascii() and value.strip().isdigit() \
            and len(value.strip()) <= 20:
        return int(value)
    counted = _wrong(value, what)
    if counted is None:
        raise ValueError(f"{what} is not a count: {_shown(value)}")
    return counted


def _label(value: Any) -> str:
    """A type or a reduction's name, at most 16 characters."""
    return value[:16] if isinstance(value, str) else ""


# -- the table on stdout ------------------------------------------------------------------------

#: A side's columns in the table, by header name. The wrong count is `#wrong` (2.10 on);
#: before, `error` was the largest relative error (1e-06), not a count: the footer's out
#: of bounds values say whether any was wrong.
_SIDE = ("time", "algbw", "busbw")
_VERSION = re.compile(r"# nccl-tests version (\S{1,32})")
_FOOTER = re.compile(r"#[ \t]{0,16}(Out of bounds values|Avg bus bandwidth)[ \t]{0,16}:[ \t]{0,16}"
                     r"(\S{1,40})")
#: What `srun -l` / `--label` prints before each line: the task's number (padded).
_LABEL = re.compile(r" {0,8}\d{1,8}: ")


def _unlabelled(line: str) -> str:
    """`line` without the task label `srun -l` puts before it (`0: `, ` 12: `)."""
    label = _LABEL.match(line)
    return line[label.end():] if label is not None else line


@dataclass(frozen=True)
class _Layout:
    """A header's columns: the leading ones (size, count, type, ...) and each side's."""

    lead: list[str]
    sides: list[list[str]]  # each side's names: time algbw busbw #wrong (i_min ...)

    @classmethod
    def of(cls, header: list[str]) -> _Layout:
        starts = [i for i, name in enumerate(header) if name in ("time", "cputime")]
        lead = starts[0] if starts else len(header)
        width = (starts[1] - starts[0]) if len(starts) > 1 else len(header) - lead
        return cls(header[:lead], [header[lead + n * width:lead + (n + 1) * width]
                                   for n in range(len(starts))])


def parse_text(text: str) -> Report:
    """The table nccl-tests printed (as is, or labelled by `srun -l`); rows are read by the
    header's columns, so every version's table reads the same. Lines that are not the
    table (NCCL's log, MPI's warnings) are passed over. ValueError when there is no table
    or no row, or a row or the footer says a number that is not finite or is negative."""
    if len(text) > MAX_TEXT:
        text = text[-MAX_TEXT:]
    layout: _Layout | None = None
    rows: list[Row] = []
    version = None
    bounds: int | None = None
    average: float | None = None
    for line in map(_unlabelled, text.splitlines()):
        words = line.split(maxsplit=MAX_COLUMNS + 1)
        if not words:
            continue
        if words[0] == "#":
            found = _VERSION.match(line)
            version = found.group(1) if found else version
            names = words[1:]
            if "size" in names and "busbw" in names and len(names) <= MAX_COLUMNS:
                layout = _Layout.of(names)
            footer = _FOOTER.match(line)
            if footer is not None and footer.group(1).startswith("Out"):
                bounds = _wrong(footer.group(2), "the footer's Out of bounds values")
            elif footer is not None:
                average = _measured(footer.group(2), "the footer's Avg bus bandwidth") * GB
            continue
        if layout is None or not words[0].isdigit() or len(rows) >= MAX_ROWS:
            continue
        row = _text_row(layout, words)
        if row is not None:
            rows.append(row)
    if layout is None:
        raise ValueError("no nccl-tests table (no header line with size and busbw)")
    if not rows:
        raise ValueError("the nccl-tests table has no rows")
    return Report(tuple(rows), bounds, average, "text", version)


def _text_row(layout: _Layout, words: list[str]) -> Row | None:
    """One line of the table by the header's columns; None when it is not one (a line
    of another program that starts with a number, or has words where numbers go);
    ValueError when it is one whose figures are not finite or are negative."""
    fields = dict(zip(layout.lead, words, strict=False))
    try:
        size, count = int(fields["size"]), int(fields.get("count", "0"))
    except (KeyError, ValueError):
        return None
    values = words[len(layout.lead):]
    parts, at = [], 0
    for names in layout.sides:
        parts.append(dict(zip(names, values[at:at + len(names)], strict=False)))
        at += len(names)
    if not all(_numbers(got) for got in parts):
        return None
    sides = [_text_side(got, f"the row of size {size}: {'in-place' if n else 'out-of-place'}")
             for n, got in enumerate(parts)]
    if not sides or all(side is None for side in sides):
        return None
    if len(sides) == 2 and sides[1] is None:
        sides = [None, sides[0]]  # a trace replay: blanks, then in-place only
    return Row(size, count, fields.get("type", "")[:16], fields.get("redop", "")[:16],
               sides[0], sides[1] if len(sides) > 1 else None)


def _numbers(got: dict[str, str]) -> bool:
    """Whether a side's time, algbw, busbw and #wrong are written as numbers (a blank side
    of a trace replay is: it has none)."""
    try:
        for name in ("time", "cputime", "algbw", "busbw"):
            if name in got:
                float(got[name])
        if got.get("#wrong", "N/A") != "N/A":
            float(got["#wrong"])
    except ValueError:
        return False
    return True


def _text_side(got: dict[str, str], what: str) -> Side | None:
    """One side of a row (None where the row has not its columns: a trace replay's
    blanks); ValueError naming `what` and the column for a figure that is not finite or
    is negative."""
    if len(got) < len(_SIDE) + 1 or "algbw" not in got or "busbw" not in got:
        return None
    return Side(_measured(got.get("time", got.get("cputime", "nan")), f"{what} time"),
                _measured(got["algbw"], f"{what} algbw") * GB,
                _measured(got["busbw"], f"{what} busbw") * GB,
                _wrong(got.get("#wrong", "N/A"), f"{what} #wrong"))


def parse(stdout: str, json_text: str | None) -> Report:
    """The run's report: its JSON file when it reads, else its table; ValueError naming
    both problems when neither does."""
    problem = ""
    if json_text:
        try:
            return parse_json(json_text)
        except ValueError as exc:
            problem = f"the JSON file: {exc}; "
    try:
        return parse_text(stdout)
    except ValueError as exc:
        raise ValueError(f"{problem}the output: {exc}") from None


#: The binary nccl-tests builds for each collective the spec may name (the probe's).
BINARY = COLLECTIVE_BINARY


def probe_args(folder: str, collective: str, sizes: Sequence[int], gpus: int, warmup: int,
               iterations: int, timeout_s: float) -> tuple[str, ...]:
    """The nccl_tests probe's arguments for one node's job."""
    return ("--dir", folder, "--binary", BINARY[collective],
            "--sizes", ",".join(str(s) for s in sizes), "--gpus", str(gpus),
            "--warmup", str(warmup), "--iterations", str(iterations),
            "--timeout", f"{timeout_s:g}")


def to_run(base: CollectiveRun, payload: Any, sizes: Sequence[int],
           how: str = "") -> CollectiveRun:
    """The nccl_tests probe's answer (untrusted) as the run of `base`: one point per payload
    asked for, its out-of-place figures (in-place, the average and the out-of-bounds count
    kept in the details), or the error: the probe's, a run's exit, or why its output does
    not read. `how`: how its processes ran, for the method (default: one process driving
    every GPU of the node)."""
    if not isinstance(payload, dict) or not isinstance(payload.get("runs", []), list):
        return replace(base, error="the nccl_tests probe's answer is not a map of runs")
    if "error" in payload:
        return replace(base, error=str(payload["error"])[:400])
    how = how or f"-g {base.ranks_per_node}: one process driving every GPU of the node"
    rows: dict[int, Row] = {}
    reports = []
    for index, run in enumerate(payload.get("runs", [])[:64]):
        if not isinstance(run, dict):
            return replace(base, error=f"the nccl_tests probe's run {index} is not a map")
        argv = run.get("argv")
        line = " ".join(str(a)[:600] for a in (argv if isinstance(argv, list) else [])[:40])[:600]
        if run.get("exit_code") != 0:
            said = [text for text in str(run.get("stderr_tail") or run.get("stdout") or "")
                    .splitlines() if text.strip()]
            last = " ".join(said[-2:])[:400] if said else "nothing on stderr"
            if run.get("exit_code") == "unavailable":
                return replace(base, error=f"`{line}` did not start: {last}")
            return replace(base, error=f"`{line}` exited with {run.get('exit_code')}: {last}")
        try:
            report = parse(str(run.get("stdout") or ""),
                           run.get("json") if isinstance(run.get("json"), str) else None)
        except ValueError as exc:
            return replace(base, error=f"`{line}`: {exc}")
        stdout = str(run.get("stdout") or "")
        version = report.version or next(
            (found.group(1) for text in stdout.splitlines()[:50]
             if (found := _VERSION.match(_unlabelled(text)))), None)
        reports.append({"argv": line, "source": report.source, "version": version,
                        "out_of_bounds": report.out_of_bounds, "avg_busbw": report.avg_busbw,
                        "errors": list(report.errors)})
        rows.update((row.bytes, row) for row in report.rows)
    points = []
    for size in sorted(set(sizes)):
        row = rows.get(size)
        side = (row.out_of_place or row.in_place) if row is not None else None
        if row is None or side is None:
            continue
        points.append(SizePoint(size, side.time_us / 1e6, side.algbw, side.busbw,
                                (side.busbw,), row.wrong, None))  # no per-rank times
    in_place = {str(size): row.in_place.busbw for size, row in rows.items()
                if row.in_place is not None and size in sizes}
    details = {"engine": "nccl-tests", "binary": str(payload.get("binary", ""))[:300],
               "nccl_tests": reports, "in_place_busbw": in_place,
               "method": f"nccl-tests {BINARY.get(base.collective, '?')} {how}, its "
                         f"out-of-place busbw (nccl-tests' own factor), results checked "
                         f"(-c 1)"}
    if not points:
        return replace(base, error="nccl-tests printed none of the payloads asked for",
                       details=details)
    return replace(base, points=tuple(points), details=details)
