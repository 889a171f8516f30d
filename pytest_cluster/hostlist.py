"""SLURM hostlist expressions (`gpu-[001-004,007]`, `r[1-2]-n[01-02]`) and hostname checks."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable

from pytest_cluster.errors import UnitError, head

#: More nodes than this in one expression is almost certainly a typo (`n[1-1000000]`).
MAX_NODES = 65536

_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9])?"
_HOSTNAME_RE = re.compile(rf"^{_LABEL}(?:\.{_LABEL})*$")
_RANGE_RE = re.compile(r"^([0-9]{1,63})(?:-([0-9]{1,63}))?$")  # a label has at most 63
_GROUP_RE = re.compile(r"\[([^\]]*)\]")


def spans_of(numbers: Iterable[int]) -> list[list[int]]:
    """Numbers as [first, last] spans of consecutive ones: [[5, 18], [22, 22]] (a soak's
    rounds, a job's ranks)."""
    found: list[list[int]] = []
    for number in sorted(set(numbers)):
        if found and number == found[-1][1] + 1:
            found[-1][1] = number
        else:
            found.append([number, number])
    return found


def is_valid_hostname(name: str) -> bool:
    """RFC 1123 host names only: plus `_`; no spaces, quotes, `;`, `$`, leading `-` or `@`."""
    return len(name) <= 253 and bool(_HOSTNAME_RE.match(name))


def _split_top_level(expr: str) -> list[str]:
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for char in expr:
        if char == "[":
            depth += 1
            if depth > 1:
                raise UnitError(f"nested '[' in hostlist {head(expr)!r}")
        elif char == "]":
            depth -= 1
            if depth < 0:
                raise UnitError(f"unbalanced ']' in hostlist {head(expr)!r}")
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    if depth != 0:
        raise UnitError(f"unbalanced '[' in hostlist {head(expr)!r}")
    parts.append("".join(current))
    return [p.strip() for p in parts]


def _ranges(body: str, expr: str) -> list[tuple[int, int, int]]:
    """The ranges of one `[...]`, as (low, high, zero-padded width)."""
    out: list[tuple[int, int, int]] = []
    for item in body.split(","):
        match = _RANGE_RE.match(item.strip())
        if not match:
            raise UnitError(f"bad range {head(item)!r} in hostlist {head(expr)!r} (expected "
                            "like 001-004)")
        low_text, high_text = match.group(1), match.group(2) or match.group(1)
        low, high = int(low_text), int(high_text)
        if high < low:
            raise UnitError(f"range {head(item)!r} in hostlist {head(expr)!r} goes backwards")
        if high - low + 1 > MAX_NODES:
            raise UnitError(f"range {head(item)!r} in hostlist {head(expr)!r} has more than "
                            f"{MAX_NODES} nodes")
        out.append((low, high, len(low_text) if low_text.startswith("0") else 0))
    return out


def _expand_one(pattern: str, expr: str) -> list[str]:
    """Every name of one part (`r[1-2]-n[01-02]`), the first `[...]` varying slowest;
    counted before anything is expanded, so `n[1-60000]x[1-60000]` costs nothing."""
    pieces = _GROUP_RE.split(pattern)  # literal, body, literal, body, ..., literal
    groups = [_ranges(body, expr) for body in pieces[1::2]]
    total = 1
    for ranges in groups:
        total *= sum(high - low + 1 for low, high, _ in ranges)
        if total > MAX_NODES:
            raise UnitError(f"hostlist {head(expr)!r} expands to more than {MAX_NODES} nodes")
    choices = [[str(n).zfill(width) for low, high, width in ranges
                for n in range(low, high + 1)] for ranges in groups]
    literals = pieces[0::2]
    names = []
    for values in itertools.product(*choices):
        parts = [literals[0]]
        for value, literal in zip(values, literals[1:], strict=True):
            parts += [value, literal]
        names.append("".join(parts))
    return names


def expand_hostlist(expr: str) -> list[str]:
    """Expand a hostlist expression in order (at most MAX_NODES names); every name must be
    a valid hostname."""
    names: list[str] = []
    for part in _split_top_level(expr):
        if not part:
            raise UnitError(f"empty name in hostlist {head(expr)!r}")
        expanded = _expand_one(part, expr)
        if len(names) + len(expanded) > MAX_NODES:
            raise UnitError(f"hostlist {head(expr)!r} expands to more than {MAX_NODES} nodes")
        for name in expanded:
            if not is_valid_hostname(name):
                raise UnitError(
                    f"{head(name)!r} is not a valid hostname (letters, digits, '-', '_' and '.')")
            names.append(name)
    return names


#: The longest number a name's last number is read as (a label's length).
_MAX_DIGITS = 63


def _last_number(name: str) -> tuple[str, str, str] | None:
    """(prefix, digits, suffix) of `name` split at its last run of digits ('gpu-', '0127',
    '.ib' of 'gpu-0127.ib'); None where it has none, or one longer than a label. A scan
    from the end: linear in the name."""
    end = len(name)
    while end and not name[end - 1].isdecimal():
        end -= 1
    start = end
    while start and name[start - 1].isdecimal():
        start -= 1
    if start == end or end - start > _MAX_DIGITS:
        return None
    return name[:start], name[start:end], name[end:]


def compress_hostlist(names: Iterable[str]) -> str:
    """The shortest-to-read hostlist of `names` (`gpu-[0001-0127,0129-1024]`), as SLURM's
    `scontrol show hostlist` writes one: names that differ only in their last number, with
    as many digits, share a `[...]` of sorted runs where that is shorter than listing
    them; other names stand alone; repeats once. Groups keep the order of their first
    name. `expand_hostlist` gives the names back."""
    groups: dict[tuple[str, str, int] | str, set[int]] = {}
    for name in names:
        split = _last_number(name)
        if split is None:
            groups.setdefault(name, set())
            continue
        prefix, digits, suffix = split
        groups.setdefault((prefix, suffix, len(digits)), set()).add(int(digits))
    parts: list[str] = []
    for key, numbers in groups.items():
        if isinstance(key, str):
            parts.append(key)
            continue
        prefix, suffix, width = key
        body = ",".join(f"{low:0{width}d}" if low == high else f"{low:0{width}d}-{high:0{width}d}"
                        for low, high in _runs(sorted(numbers)))
        plain = ",".join(f"{prefix}{n:0{width}d}{suffix}" for n in sorted(numbers))
        bracketed = f"{prefix}[{body}]{suffix}"
        parts.append(plain if len(plain) <= len(bracketed) else bracketed)  # never longer
    return ",".join(parts)


def _runs(numbers: list[int]) -> list[tuple[int, int]]:
    """Sorted numbers as (first, last) runs of consecutive ones."""
    runs: list[tuple[int, int]] = []
    for number in numbers:
        if runs and number == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], number)
        else:
            runs.append((number, number))
    return runs
