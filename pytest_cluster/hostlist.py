"""SLURM hostlist expressions (`gpu-[001-004,007]`, `r[1-2]-n[01-02]`) and hostname checks."""

from __future__ import annotations

import re

from pytest_cluster.errors import UnitError

#: More nodes than this in one expression is almost certainly a typo (`n[1-1000000]`).
MAX_NODES = 65536

_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9])?"
_HOSTNAME_RE = re.compile(rf"^{_LABEL}(?:\.{_LABEL})*$")
_RANGE_RE = re.compile(r"^(\d+)(?:-(\d+))?$")


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
                raise UnitError(f"nested '[' in hostlist {expr!r}")
        elif char == "]":
            depth -= 1
            if depth < 0:
                raise UnitError(f"unbalanced ']' in hostlist {expr!r}")
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    if depth != 0:
        raise UnitError(f"unbalanced '[' in hostlist {expr!r}")
    parts.append("".join(current))
    return [p.strip() for p in parts]


def _expand_ranges(body: str, expr: str) -> list[str]:
    out: list[str] = []
    for item in body.split(","):
        match = _RANGE_RE.match(item.strip())
        if not match:
            raise UnitError(f"bad range {item!r} in hostlist {expr!r} (expected like 001-004)")
        low_text, high_text = match.group(1), match.group(2) or match.group(1)
        low, high = int(low_text), int(high_text)
        if high < low:
            raise UnitError(f"range {item!r} in hostlist {expr!r} goes backwards")
        if high - low + 1 > MAX_NODES:
            raise UnitError(f"range {item!r} in hostlist {expr!r} has more than {MAX_NODES} nodes")
        width = len(low_text) if low_text.startswith("0") else 0
        out.extend(str(n).zfill(width) for n in range(low, high + 1))
    return out


def _expand_one(pattern: str, expr: str) -> list[str]:
    match = re.search(r"\[([^\]]*)\]", pattern)
    if match is None:
        return [pattern]
    head, tail = pattern[: match.start()], pattern[match.end():]
    names: list[str] = []
    for value in _expand_ranges(match.group(1), expr):
        names.extend(_expand_one(head + value + tail, expr))
        if len(names) > MAX_NODES:
            raise UnitError(f"hostlist {expr!r} expands to more than {MAX_NODES} nodes")
    return names


def expand_hostlist(expr: str) -> list[str]:
    """Expand a hostlist expression in order; every name must be a valid hostname."""
    names: list[str] = []
    for part in _split_top_level(expr):
        if not part:
            raise UnitError(f"empty name in hostlist {expr!r}")
        for name in _expand_one(part, expr):
            if not is_valid_hostname(name):
                raise UnitError(
                    f"{name!r} is not a valid hostname (letters, digits, '-', '_' and '.')")
            names.append(name)
    return names
