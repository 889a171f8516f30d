"""What every launcher returns: one typed ProbeResult per node, never an exception per
node, and how a probe's output becomes one (parse_probe_output)."""

from __future__ import annotations

import enum
import json
import math
import uuid
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, TypeVar

from pytest_cluster.errors import ProbeFailed

T = TypeVar("T")


class ErrorKind(str, enum.Enum):
    TIMEOUT = "timeout"
    CRASHED = "crashed"
    BAD_OUTPUT = "bad_output"
    UNREACHABLE = "unreachable"  # the node's own: its address refused or did not answer
    AUTH_REFUSED = "auth_refused"  # this machine's credentials refused (controller-side)
    #: this machine could not launch the probe: a node name it cannot resolve, the
    #: launcher's client (ssh, srun) not installed, no SLURM controller answering, a name
    #: SLURM does not know (controller-side)
    CONTROLLER = "controller"
    INTERPRETER_MISSING = "interpreter_missing"
    CANCELLED = "cancelled"
    BUSY = "busy"  # another job holds the node (SLURM): not measured, not its fault

    @property
    def controller_side(self) -> bool:
        """The fault is this machine's (the controller's: its name resolution, its
        credentials, its launcher's client, its SLURM controller), not the node's: nothing
        was learned about the node, and no verdict may blame it."""
        return self in CONTROLLER_SIDE


#: The error kinds whose fault is the controller's, not the node's (ErrorKind.controller_side;
#: evidence/verdict/blame.py's CONTROLLER_SIDE is their values).
CONTROLLER_SIDE = frozenset({ErrorKind.CONTROLLER, ErrorKind.AUTH_REFUSED})


@dataclass(frozen=True)
class ProbeResult:
    """The outcome of one probe on one node: its payload, or an error with its kind."""

    node: str
    probe: str
    data: dict[str, Any] | None
    error: ErrorKind | None = None
    message: str = ""
    exit_code: int | None = None
    stderr_tail: str = ""
    duration_s: float = 0.0
    started_at: float = 0.0
    simulated: bool = False
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex)

    @property
    def ok(self) -> bool:
        return self.error is None and self.data is not None

    @property
    def controller_side(self) -> bool:
        """It failed for a fault of this machine's, not the node's (ErrorKind.controller_side):
        a name that does not resolve here, credentials refused, ssh or srun missing."""
        return self.error is not None and self.error.controller_side

    def payload(self) -> dict[str, Any]:
        if self.data is None or self.error is not None:
            raise ProbeFailed(self.describe())
        return self.data

    def payload_as(self, read: Callable[[Mapping[str, object]], T]) -> T:
        """The payload as the probe's record (the TypedDict its probe declares: WhereAmI,
        NicData), once `read`, the record's reader, has checked what its readers rely on:
        a node's answer is untrusted, so the reader takes it as plain JSON and types it
        only once checked; its ValueError says what is wrong. ProbeFailed, as `payload`,
        when the probe gave none."""
        return read(self.payload())

    def describe(self) -> str:
        """One line a user can act on: node, probe, what went wrong."""
        if self.ok:
            return f"{self.node}: {self.probe} probe ok in {self.duration_s:.1f} s"
        text = f"{self.node}: {self.probe} probe {self.error.value if self.error else 'failed'}"
        text += f": {self.message}" if self.message else ""
        if self.exit_code is not None and self.error is ErrorKind.CRASHED:
            text += f" (exit code {self.exit_code})"
        tail = self.stderr_tail.strip().splitlines()[-3:]
        if tail:
            text += " | stderr: " + " / ".join(tail)
        return text

    def to_json(self) -> dict[str, object]:
        record = asdict(self)
        record["error"] = self.error.value if self.error else None
        return record

    @classmethod
    def from_json(cls, record: dict[str, Any]) -> ProbeResult:
        values = dict(record)
        values["error"] = ErrorKind(values["error"]) if values.get("error") else None
        return cls(**values)


def _not_a_number(name: str) -> Any:
    raise ValueError(f"the probe's JSON has {name}: not a finite number (strict JSON has "
                     "none)")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the probe's JSON has {text[:40]}: not a finite number")
    return value


def parse_probe_output(stdout: str, probe: str) -> dict[str, Any]:
    """The probe's `data` object from its stdout; ValueError says what is wrong."""
    text = stdout.strip()
    if not text:
        raise ValueError("the probe printed nothing")
    try:
        document = json.loads(text.splitlines()[-1], parse_constant=_not_a_number,
                              parse_float=_finite_float)
    except json.JSONDecodeError as exc:
        raise ValueError(f"the probe's last line is not JSON ({exc.msg})") from None
    except RecursionError:
        raise ValueError("the probe's JSON is nested too deeply") from None
    if not isinstance(document, dict) or not isinstance(document.get("data"), dict):
        raise ValueError("the probe's JSON has no 'data' object")
    if document.get("probe") != probe:
        raise ValueError(f"expected output of probe {probe!r}, got {document.get('probe')!r}")
    data: dict[str, Any] = document["data"]
    return data


@dataclass(frozen=True)
class ProgramRun:
    """A program run as one parallel job (Launcher.run_program): how it ended (its exit
    code, or why it did not run: "unavailable", "timeout"), what its first task printed,
    and the end of what its tasks and the launcher said on stderr."""

    exit_code: int | str
    first_task: str
    stderr_tail: str = ""
    simulated: bool = False
