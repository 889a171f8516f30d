"""A contract clause's bound: a comparison and a quantity (or a version), and its verdict."""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from dataclasses import dataclass

from pytest_cluster.errors import UnitError
from pytest_cluster.units import (
    Dim,
    Quantity,
    foreign_digits,
    format_number,
    format_value,
    parse_quantity,
)

_OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge, ">": operator.gt, "<=": operator.le, "<": operator.lt, "==": operator.eq,
}
#: What a failed comparison reads like: ">= 10" failed means "measured < required".
_BROKEN = {">=": "<", ">": "<=", "<=": ">", "<": ">=", "==": "!="}
#: The comparisons a bound may open with, a longer one before its own first character.
_OP_TEXTS = (">=", "<=", "==", "=", ">", "<")


def _split_op(text: str) -> tuple[str | None, str]:
    """('>=', '10 GB/s') of ' >= 10 GB/s '; (None, '10 GB/s') without a comparison. By
    strip and startswith: linear in the text (a pattern `\\s*(.*?)\\s*$` was quadratic on
    a run of blanks inside it)."""
    stripped = text.strip()
    op = next((op for op in _OP_TEXTS if stripped.startswith(op)), None)
    return op, stripped[len(op):].lstrip() if op is not None else stripped


@dataclass(frozen=True)
class Verdict:
    ok: bool
    message: str


@dataclass(frozen=True)
class Requirement:
    """`op quantity`, e.g. `>= 10 GB/s`; `text` is the spec's own spelling (with what
    the bound is per: `>= 2 GB/s per GPU`); `per`: that basis as the message says it
    ('per GPU', 'per node'; '' for a bound of its own)."""

    op: str
    bound: Quantity
    text: str
    per: str = ""

    @property
    def unit(self) -> str:
        return self.bound.unit or ""

    def holds(self, measured: float) -> bool:
        return _OPS[self.op](measured, self.bound.value)

    def show(self, value: float) -> str:
        return format_value(value, self.bound.dim, self.bound.unit)

    def check(self, measured: float, what: str = "") -> Verdict:
        """Compare; the message reads `what: measured 4.1 GB/s < required 10 GB/s (41%)`
        (`measured 1.5 GB/s per GPU < required 2 GB/s per GPU` for a bound per GPU)."""
        ok = self.holds(measured)
        relation = self.op if ok else _BROKEN[self.op]
        word = "allowed" if self.op in ("<=", "<") else "required"
        per = f" {self.per}" if self.per else ""
        text = (f"measured {self.show(measured)}{per} {relation} {word} "
                f"{self.show(self.bound.value)}{per}")
        if not ok and self.op in (">=", ">") and self.bound.value > 0:
            text += f" ({format_number(100 * measured / self.bound.value)}% of required)"
        return Verdict(ok, f"{what}: {text}" if what else text)


def parse_requirement(raw: object, dim: Dim, default_op: str = ">=") -> Requirement:
    """Parse `">= 10 GB/s"`, `"10 GB/s"` (default comparison) or a bare number."""
    if isinstance(raw, str):
        op_text, rest = _split_op(raw)
        op = "==" if op_text == "=" else (op_text or default_op)
        try:
            bound = parse_quantity(rest, dim)
        except UnitError as exc:
            said = str(exc).replace(repr(rest), repr(raw), 1)
            meant = _respelled_comparison(raw)
            raise UnitError(said + (f"; did you mean {meant!r}?" if meant else "")) from None
        return Requirement(op, bound, raw.strip())
    bound = parse_quantity(raw, dim)
    return Requirement(default_op, bound, f"{default_op} {raw}")


#: Comparisons written another way, as they are meant.
_SLIPS = {"=>": ">=", "=<": "<=", "≥": ">=", "≤": "<=", "==": "=", "!=": None, "<>": None}


def _respelled_comparison(raw: str) -> str | None:
    """'=> 700' as meant ('>= 700'), or None if it is no such slip."""
    text = raw.strip()
    for slip, meant in _SLIPS.items():
        if text.startswith(slip) and meant is not None:
            return f"{meant} {text[len(slip):].strip()}"[:60]
    return None


#: A version's dotted number: each part at most 18 digits (a longer run, a node's doing, is
#: read in parts of 18, never as an integer beyond what int() converts).
_VERSION_RE = re.compile(r"\d{1,18}(?:\.\d{1,18})*")


def version_tuple(text: str) -> tuple[int, ...] | None:
    """The leading dotted number of a version string: '6.1.0-18-amd64' -> (6, 1, 0)."""
    match = _VERSION_RE.search(text)
    if match is None:
        return None
    return tuple(int(part) for part in match.group(0).split("."))


@dataclass(frozen=True)
class VersionRequirement:
    """`>= 5.15` or `== 550.54` (equality compares only the components given)."""

    op: str
    version: tuple[int, ...]
    text: str

    def holds(self, found: str) -> bool:
        have = version_tuple(found)
        if have is None:
            return False
        if self.op == "==":
            return have[: len(self.version)] == self.version
        width = max(len(have), len(self.version))
        have += (0,) * (width - len(have))
        want = self.version + (0,) * (width - len(self.version))
        return {">=": have >= want, ">": have > want, "<=": have <= want,
                "<": have < want}[self.op]

    def check(self, found: str | None, what: str) -> Verdict:
        if found is None:
            return Verdict(False, f"{what}: not found on the node (required {self.text})")
        ok = self.holds(found)
        word = "satisfies" if ok else "does not satisfy"
        return Verdict(ok, f"{what}: found {found}, which {word} {self.text}")


def parse_version_requirement(raw: object) -> VersionRequirement:
    text = str(raw) if isinstance(raw, (int, float)) and not isinstance(raw, bool) else raw
    if not isinstance(text, str):
        raise UnitError(f"expected a version bound like '>= 5.15', got {raw!r}")
    op_text, rest = _split_op(text)
    if not re.fullmatch(r"[0-9]{1,18}(?:\.[0-9]{1,18}){0,15}", rest):
        raise UnitError(f"expected a version bound like '>= 5.15', got {raw!r}"
                        f"{foreign_digits(rest)}")
    op = "==" if op_text == "=" else (op_text or ">=")
    return VersionRequirement(op, tuple(int(p) for p in rest.split(".")), f"{op} {rest}")
