"""The spec's errors collected while validation goes on, each located (its file, line,
column and key path) and echoing the value as the spec wrote it; and its warnings (likely
slips that do not stop the run)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from yaml.nodes import Node, ScalarNode

from pytest_cluster.contract.reading.yaml_nodes import NUMBER_TAGS, scalar
from pytest_cluster.errors import SpecError, head

if TYPE_CHECKING:
    from pytest_cluster.contract.reading.profiles import Profile

#: Errors kept with their text; later ones are counted (a SpecError shows 20 anyway).
MAX_KEPT = 200


class Ctx:
    """Collects errors, and warnings (likely slips that do not stop the run), with their
    location while validation goes on."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.errors: list[SpecError] = []  # the first MAX_KEPT
        self.where: list[tuple[int, int]] = []  # each kept error's line and column
        self.count = 0  # of all errors
        self.warnings: list[SpecError] = []  # located and rendered like errors
        self.paths: set[str] = set()  # of all errors
        #: the profile the spec extends (its nodes are marked with its file)
        self.profile: Profile | None = None
        self.extends: Node | None = None  # the spec's `extends` value (its line)
        #: the rules turned off on purpose (`pcie: false`): each id and how it was said
        self.off: dict[str, str] = {}

    def file_of(self, node: Node | None) -> str:
        """The file `node` was written in: the spec's, or its profile's."""
        name = getattr(node.start_mark, "name", None) if node is not None else None
        if self.profile is not None and name == self.profile.file:
            return self.profile.file
        return self.file

    def in_spec(self, *nodes: Node | None) -> Node | None:
        """The first of `nodes` the spec itself wrote, else its `extends` line: where an
        error about what the profile leaves out is the spec's to fix."""
        return next((node for node in nodes if node is not None
                     and self.file_of(node) == self.file), self.extends)

    def cited(self, node: Node | None, path: str) -> str:
        """Where the bound at `path` came from when the profile wrote it ('profile NAME:
        URL (what it says)'); '' when the spec did."""
        if self.profile is None or node is None or self.file_of(node) == self.file:
            return ""
        return self.profile.cites(path)

    @property
    def full(self) -> bool:
        """Whether errors are only counted now: skip costly hints (did-you-mean)."""
        return self.count >= MAX_KEPT

    def error(self, node: Node | None, path: str, message: str) -> None:
        self.count += 1
        self.paths.add(path)
        if len(self.errors) < MAX_KEPT:
            line = node.start_mark.line + 1 if node is not None else None
            self.errors.append(SpecError(as_written(node, message), file=self.file_of(node),
                                         line=line, path=path))
            self.where.append((line or 0, node.start_mark.column if node is not None else 0))

    def in_order(self) -> list[SpecError]:
        """The kept errors as they stand in the file (line, then column), whatever order
        the sections were validated in."""
        order = sorted(range(len(self.errors)), key=self.where.__getitem__)
        return [self.errors[index] for index in order]

    def failed(self, path: str) -> bool:
        """Whether an error was recorded at `path` (one set lookup, however many errors)."""
        return path in self.paths

    def warn(self, line: int, path: str, message: str) -> None:
        self.warnings.append(SpecError(message, file=self.file, line=line, path=path))


#: The most characters of a value an error echoes; a longer one is cut, saying so.
MAX_ECHO = 100


def as_written(node: Node | None, message: str) -> str:
    """`message` about the value YAML read at `node` with that value as the spec wrote it:
    'got 1000.0' is 'got 1e3' (the parsers echo the value they were given, which is YAML's
    reading of a number), and a value of more than MAX_ECHO characters echoed cut, saying
    so where it is cut (a 4,000-digit number was a 1,000-character line of digits, cut in
    its middle)."""
    if not isinstance(node, ScalarNode):
        return message
    read = repr(scalar(node))
    shown = head(str(node.value), MAX_ECHO) if node.tag in NUMBER_TAGS else \
        repr(head(node.value, MAX_ECHO)) if isinstance(node.value, str) else read
    if read == shown:
        return message
    # found as text, not by a pattern made of it: a 1 MB value made a 1 MB pattern (3.4 s)
    needle = f"got {read}"
    at = message.find(needle)
    while at >= 0:
        end = at + len(needle)
        if not _word(message[at - 1:at]) and not (_word(message[end:end + 1])
                                                  or message[end:end + 1] in (".", "+", "-")):
            return f"{message[:at]}got {shown}{message[end:]}"
        at = message.find(needle, at + 1)
    return message


def _word(char: str) -> bool:
    """Whether `char` (one character, or none) is part of a word, as the regex \\w."""
    return char.isalnum() or char == "_"
