"""Our own exception hierarchy: foreign errors are mapped to these at each boundary."""

from __future__ import annotations


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
        super().__init__(self.render())

    def render(self) -> str:
        where = self.file
        if self.line is not None:
            where = f"{where}:{self.line}" if where else f"line {self.line}"
        parts = [p for p in (where, self.path) if p]
        prefix = ": ".join(parts)
        return f"{prefix}: {self.detail}" if prefix else self.detail


class UnitError(ClusterError):
    """A value with a unit could not be parsed (mapped to SpecError with a location)."""


class LaunchError(ClusterError):
    """A launcher could not be set up at all (not a per-node failure)."""


class ProbeFailed(ClusterError):
    """A probe result was asked for its payload but carries an error."""
