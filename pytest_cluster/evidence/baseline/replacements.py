"""Replaced parts accepted against the baseline (--cluster-baseline-accept): after an RMA
the node's new board has a serial the baseline never saw, and its hardware case would fail
until the whole cluster was baselined again. Named here, by the serial on the new part's
box (`NEW`, or `OLD=NEW` to accept it only in place of that one), the change of that part's
identity is an accepted replacement, said in the case and recorded; every other change of
the node still fails, and the part's figures are still compared with the baseline's.

A part's identity is what the inventory records of it: a GPU's serial, a disk's serial, a
NIC's MAC address, an InfiniBand HCA's node GUID (hardware.py). Matched without regard to
case (a label's `AB12` is sysfs' `ab12`). The values are untrusted input: each a serial of
at most MAX_SERIAL characters of SERIAL_CHARS, at most MAX_ACCEPTED of them, a file of them
a regular file of at most MAX_FILE bytes (read_regular: a FIFO is never waited on).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_cluster.errors import InputError, head, printable
from pytest_cluster.evidence.record.lines import AcceptedEntry, SeenReplacement
from pytest_cluster.evidence.regular_file import read_regular

if TYPE_CHECKING:
    from pytest_cluster.evidence.record.derived_cases import Case

OPTION = "--cluster-baseline-accept"
FAMILY = "baseline.hardware"  # the cases that find replacements
KEY = "accepted_replacements"  # their props' (results.jsonl's) list of them
MAX_SERIAL = 64
MAX_ACCEPTED = 1000
MAX_FILE = 64 * 1024
SERIAL_CHARS = "letters, digits and . _ : -"
_SERIAL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]*")


class AcceptError(ValueError):
    """A value of --cluster-baseline-accept that names no serial (says which and why)."""


@dataclass(frozen=True)
class Accepted:
    """A replaced part accepted: by its `new` serial, and only in place of `old` if given."""

    new: str
    old: str | None = None

    @property
    def given(self) -> str:
        """As the option spells it: 'NEW' or 'OLD=NEW'."""
        return self.new if self.old is None else f"{self.old}={self.new}"

    def covers(self, old: Any, new: Any) -> bool:
        """Whether a part whose identity was `old` at baseline and is `new` now is this
        replacement (case aside; an unreadable identity is none)."""
        if not isinstance(new, str) or new.casefold() != self.new.casefold():
            return False
        return self.old is None or (isinstance(old, str)
                                    and old.casefold() == self.old.casefold())


def covering(accepted: Iterable[Accepted], old: Any, new: Any) -> Accepted | None:
    """The first of `accepted` that covers the change from `old` to `new`, if one does."""
    return next((each for each in accepted if each.covers(old, new)), None)


@dataclass(frozen=True)
class Replacement:
    """A part found replaced and accepted: its name on the node (gpu6, NIC eth0, HCA
    mlx5_0, disk under /data nvme0n1), its identity then and now (as shown), and the value
    of the option that accepted it."""

    part: str
    old: str
    new: str
    accepted: str

    @property
    def said(self) -> str:
        return replaced(self)

    def to_json(self) -> dict[str, str]:
        return {"part": self.part, "old": self.old, "new": self.new,
                "accepted": self.accepted}


def nameable(value: Any) -> bool:
    """Whether `value` (an inventory's identity of a part) is one the option accepts."""
    return isinstance(value, str) and len(value) <= MAX_SERIAL and bool(
        _SERIAL.fullmatch(value))


def _serial(text: str, where: str) -> str:
    if not text:
        raise AcceptError(f"{where}: an empty serial")
    if len(text) > MAX_SERIAL:
        raise AcceptError(f"{where}: {printable(head(text, 40))} is longer than "
                          f"{MAX_SERIAL} characters: no serial")
    if not _SERIAL.fullmatch(text):
        raise AcceptError(f"{where}: {printable(head(text, 40))!r} is no serial (expected "
                          f"{SERIAL_CHARS}, starting with a letter or digit)")
    return text


def _entry(text: str, where: str) -> Accepted:
    """'NEW' or 'OLD=NEW', stripped of blanks around it."""
    old, sep, new = text.strip().partition("=")
    if not sep:
        return Accepted(_serial(old.strip(), where))
    return Accepted(_serial(new.strip(), where), _serial(old.strip(), where))


def _file_entries(path: str, read: Callable[[Path], bytes]) -> list[tuple[str, str]]:
    """(text, where) of each serial in the file: one a line (or several, as the option
    takes them: SERIAL,SERIAL), `#` to the end of a line a comment, blank lines skipped."""
    if not path:
        raise AcceptError("@: expected a file's path after @")
    try:
        data = read(Path(path))
    except InputError as exc:  # names the file
        raise AcceptError(printable(str(exc))) from None
    except OSError as exc:
        raise AcceptError(f"{printable(head(path, 200))}: {exc.strerror or exc}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise AcceptError(f"{printable(head(path, 200))}: not UTF-8 text") from None
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        kept = line.split("#", 1)[0].strip()
        if kept:
            found += [(each, f"{printable(head(path, 200))}:{number}")
                      for each in kept.split(",")]
    return found


def _read(path: Path) -> bytes:
    return read_regular(path, MAX_FILE)


def parse(values: Sequence[str], read: Callable[[Path], bytes] = _read) -> tuple[Accepted, ...]:
    """The replacements accepted by the option's values (each `SERIAL[,SERIAL...]` or
    `@FILE`); AcceptError naming the bad one. The same one twice is kept once."""
    items: list[tuple[str, str]] = []
    for value in values:
        if value.startswith("@"):
            items += _file_entries(value[1:], read)
        elif not value.strip():
            raise AcceptError("an empty value: expected SERIAL[,SERIAL...] or @FILE")
        else:
            of = f" of {printable(head(value, 60))}" if len(values) > 1 else ""
            items += [(part, f"item {number}{of}")
                      for number, part in enumerate(value.split(","), 1)]
        if len(items) > MAX_ACCEPTED:
            raise AcceptError(f"more than {MAX_ACCEPTED} serials: no RMA is that large; "
                              "make a new baseline instead")
    accepted: dict[tuple[str, str | None], Accepted] = {}
    for text, where in items:
        each = _entry(text, where)
        accepted.setdefault((each.new.casefold(), each.old and each.old.casefold()), each)
    return tuple(accepted.values())


def replaced(seen: SeenReplacement | Replacement) -> str:
    """'accepted replacement: gpu6 1654... -> 1654... (--cluster-baseline-accept)'."""
    part, old, new = ((seen["part"], seen["old"], seen["new"]) if isinstance(seen, dict)
                      else (seen.part, seen.old, seen.new))
    return f"accepted replacement: {part} {old} -> {new} ({OPTION})"


def summary(accepted: Sequence[Accepted], cases: Iterable[Case]) -> list[AcceptedEntry]:
    """Each value accepted, with the replacements the hardware cases (`cases`) found of it:
    one found nowhere is 'accepted but not seen', never left unsaid."""
    found = [(case.node, each) for case in cases if case.family == FAMILY
             for each in case.props.get(KEY) or ()]
    entries: list[AcceptedEntry] = []
    for one in accepted:
        seen = [SeenReplacement(node=node, part=str(r["part"]), old=str(r["old"]),
                                new=str(r["new"])) for node, r in found
                if r.get("accepted") == one.given]
        said = ("; ".join(f"{each['node']}: {replaced(each)}" for each in seen) if seen
                else f"accepted but not seen: {one.given} ({OPTION}): no part of the nodes "
                     "compared was replaced by it")
        entries.append(AcceptedEntry(serial=one.new, old=one.old, seen=seen, said=said))
    return entries
