"""Our own exception hierarchy: foreign errors are mapped to these at each boundary."""

from __future__ import annotations

#: The longest line an error shows; a longer one (a huge value from a spec) is cut in the
#: middle, keeping how it starts (where, what was expected) and how it ends (hints).
MAX_LINE = 1000
#: The most problems one SpecError lists; the rest are counted.
MAX_SHOWN = 20


def head(text: str, limit: int = 100) -> str:
    """`text` as an error echoes a value it was given: its first `limit` characters and,
    where it was longer, '... (N characters)'."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def clip(text: str, limit: int = MAX_LINE) -> str:
    """`text` with every line at most `limit` characters long: a longer line keeps its
    start and its end and says how many characters were cut between them."""
    lines = text.split("\n")
    for index, line in enumerate(lines):
        if len(line) > limit:
            keep = limit - len(f" [...{len(line)} characters cut...] ")
            head = keep * 2 // 3
            marker = f" [...{len(line) - keep} characters cut...] "
            lines[index] = line[:head] + marker + line[len(line) - (keep - head):]
    return "\n".join(lines)


def printable(text: str) -> str:
    """`text` with every character a terminal or a browser would act on rather than show
    (controls such as ESC, bidi overrides, zero-width characters: `str.isprintable` is
    false) written as its Python escape, so a hostile value can neither clear a screen
    nor reorder a line. Printable text, accented or not, is kept as it is."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text)


def log_line(text: str, limit: int = MAX_LINE) -> str:
    """`text` as one line of a log (stderr, syslog, a gate's lines): every character a
    terminal would act on escaped (`printable`: a newline is written \\n, so the line is
    never split), at most `limit` characters, cut in the middle with a marker saying how
    many were cut (`clip`)."""
    return clip(printable(text), limit)


class ClusterError(Exception):
    """Base of every error pytest-cluster raises on purpose."""


class SpecError(ClusterError):
    """The contract spec is invalid; the message names the file, line and key path."""

    def __init__(self, message: str, *, file: str = "", line: int | None = None,
                 path: str = "") -> None:
        self.file = file
        self.line = line
        self.path = path
        self.detail = message
        super().__init__(clip(self.render()))

    @classmethod
    def listing(cls, errors: list[SpecError], file: str, count: int = 0,
                of: str = "the spec") -> SpecError:
        """One error for `count` (default: as many as `errors`), in line order: the first
        MAX_SHOWN, then how many more; `of`: what they are problems of."""
        count = count or len(errors)
        ordered = sorted(errors, key=lambda error: error.line or 0)
        lines = [f"  {error}" for error in ordered[:MAX_SHOWN]]  # each line already clipped
        if count > MAX_SHOWN:
            lines.append(f"  ... and {count - MAX_SHOWN} more")
        listed = cls(f"{count} problems in {of}:", file=file)
        listed.detail = "\n".join([listed.detail, *lines])
        listed.args = (clip(listed.render(), MAX_LINE + 2),)  # the indent
        return listed

    def render(self) -> str:
        return located(self.file, self.line, self.path, self.detail)


def located(file: str, line: int | None, path: str, detail: str) -> str:
    """'FILE:LINE: KEY: detail', each part there only where known."""
    where = file
    if line is not None:
        where = f"{where}:{line}" if where else f"line {line}"
    prefix = ": ".join(part for part in (where, path) if part)
    return f"{prefix}: {detail}" if prefix else detail


class UnitError(ClusterError):
    """A value with a unit could not be parsed (mapped to SpecError with a location)."""


class LaunchError(ClusterError):
    """A launcher could not be set up at all (not a per-node failure)."""


class ProbeFailed(ClusterError):
    """A probe result was asked for its payload but carries an error."""


class JobFailed(ClusterError):
    """A distributed job did not complete on every rank; the message names which."""


class BundleError(ClusterError):
    """A run's evidence bundle cannot be read, signed or checked (a missing or malformed
    manifest, an unusable key); the message names the file and what was expected."""

    def __init__(self, message: str) -> None:
        super().__init__(clip(message))


class InputError(ClusterError):
    """A file from elsewhere (a baseline's evidence) is too big, not strict JSON, or not
    of its declared shape; the message names the file, the field and what was expected,
    every value in it cut short."""


class BadAnswer(ClusterError):
    """What an installed extension's code gave back (its sim's answer to a probe) is not
    of the shape asked for, or not finite: bad output of the node it speaks for; the
    message names the extension."""

