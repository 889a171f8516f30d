"""What every launcher returns: one typed ProbeResult per node, never an exception per node."""

from __future__ import annotations

import contextlib
import enum
import json
import os
import signal
import subprocess
import threading
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from pytest_cluster.errors import ProbeFailed
from pytest_cluster.probes import ProbeCall

STDERR_TAIL = 2000

if TYPE_CHECKING:  # the spec imports the registry to validate launcher names
    from pytest_cluster.spec.model import ClusterSpec, Spec


class ErrorKind(str, enum.Enum):
    TIMEOUT = "timeout"
    CRASHED = "crashed"
    BAD_OUTPUT = "bad_output"
    UNREACHABLE = "unreachable"
    AUTH_REFUSED = "auth_refused"
    INTERPRETER_MISSING = "interpreter_missing"
    CANCELLED = "cancelled"
    BUSY = "busy"  # another job holds the node (SLURM): not measured, not its fault


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

    def payload(self) -> dict[str, Any]:
        if self.data is None or self.error is not None:
            raise ProbeFailed(self.describe())
        return self.data

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

    def to_json(self) -> dict[str, Any]:
        record = asdict(self)
        record["error"] = self.error.value if self.error else None
        return record

    @classmethod
    def from_json(cls, record: dict[str, Any]) -> ProbeResult:
        values = dict(record)
        values["error"] = ErrorKind(values["error"]) if values.get("error") else None
        return cls(**values)


def parse_probe_output(stdout: str, probe: str) -> dict[str, Any]:
    """The probe's `data` object from its stdout; ValueError says what is wrong."""
    text = stdout.strip()
    if not text:
        raise ValueError("the probe printed nothing")
    try:
        document = json.loads(text.splitlines()[-1])
    except json.JSONDecodeError as exc:
        raise ValueError(f"the probe's last line is not JSON ({exc.msg})") from None
    if not isinstance(document, dict) or not isinstance(document.get("data"), dict):
        raise ValueError("the probe's JSON has no 'data' object")
    if document.get("probe") != probe:
        raise ValueError(f"expected output of probe {probe!r}, got {document.get('probe')!r}")
    data: dict[str, Any] = document["data"]
    return data


_LIVE: set[subprocess.Popen[str]] = set()
_LIVE_LOCK = threading.Lock()


def _kill_group(process: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


def kill_all_running() -> int:
    """Kill every probe process group still running (Ctrl-C, fatal error); how many."""
    with _LIVE_LOCK:
        running = list(_LIVE)
    for process in running:
        _kill_group(process)
    return len(running)


@dataclass(frozen=True)
class Finished:
    """How a launched command ended: exit code and output, or that it was killed."""

    returncode: int | None
    stdout: str
    stderr: str
    timed_out: bool = False
    start_error: ErrorKind | None = None  # could not start: interpreter missing, ...
    start_message: str = ""


def execute(argv: list[str], stdin_text: str, timeout_s: float,
            env: dict[str, str] | None = None, hold_stdin: bool = False,
            cancel: Callable[[], None] | None = None) -> Finished:
    """Run argv in its own process group feeding stdin; kill the group at the timeout or
    on Ctrl-C (after `cancel()`, e.g. scancel, when given).

    With `hold_stdin`, stdin stays open until the process ends (the node runner of the ssh
    and slurm launchers kills the probe when it closes)."""
    try:
        process = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, text=True, encoding="utf-8",
                                   errors="replace", start_new_session=True, env=env)
    except FileNotFoundError:
        return Finished(None, "", "", start_error=ErrorKind.INTERPRETER_MISSING,
                        start_message=f"{argv[0]!r} not found (check cluster.python in the "
                                      f"spec)")
    except OSError as exc:
        return Finished(None, "", "", start_error=ErrorKind.UNREACHABLE,
                        start_message=f"cannot start {argv[0]!r}: {exc.strerror}")
    with _LIVE_LOCK:
        _LIVE.add(process)
    try:
        if hold_stdin:
            stdout, stderr, timed_out = _wait_holding_stdin(process, stdin_text, timeout_s,
                                                            cancel)
        else:
            try:
                stdout, stderr = process.communicate(stdin_text, timeout=timeout_s)
                timed_out = False
            except subprocess.TimeoutExpired:
                _stop(process, cancel)
                stdout, stderr = process.communicate()
                timed_out = True
    except BaseException:
        _stop(process, cancel)  # Ctrl-C: leave no orphan behind, then let it propagate
        process.wait()
        raise
    finally:
        with _LIVE_LOCK:
            _LIVE.discard(process)
    return Finished(process.returncode, stdout, stderr, timed_out)


def _stop(process: subprocess.Popen[str], cancel: Callable[[], None] | None) -> None:
    if cancel is not None:
        with contextlib.suppress(Exception):
            cancel()
    _kill_group(process)


def run_process(node: str, probe: str, argv: list[str], stdin_text: str,
                timeout_s: float, env: dict[str, str] | None = None,
                simulated: bool = False, hold_stdin: bool = False) -> ProbeResult:
    """Run a probe on one node (execute) and map every outcome to a ProbeResult."""
    started = time.time()
    clock = time.perf_counter()
    done = execute(argv, stdin_text, timeout_s, env=env, hold_stdin=hold_stdin)
    return probe_result(node, probe, done, timeout_s, started, time.perf_counter() - clock,
                        simulated=simulated)


def probe_result(node: str, probe: str, done: Finished, timeout_s: float, started: float,
                 duration_s: float, simulated: bool = False) -> ProbeResult:
    """A node's ProbeResult from how its probe process ended."""

    def result(**kwargs: Any) -> ProbeResult:
        return ProbeResult(node=node, probe=probe, started_at=started, duration_s=duration_s,
                           simulated=simulated, **kwargs)

    if done.start_error is not None:
        return result(data=None, error=done.start_error, message=done.start_message)
    tail = done.stderr[-STDERR_TAIL:]
    if done.timed_out:
        return result(data=None, error=ErrorKind.TIMEOUT,
                      message=f"no answer within {timeout_s:g} s; killed", stderr_tail=tail)
    if done.returncode != 0:
        return result(data=None, error=ErrorKind.CRASHED, exit_code=done.returncode,
                      message="the probe exited with an error", stderr_tail=tail)
    try:
        data = parse_probe_output(done.stdout, probe)
    except ValueError as exc:
        return result(data=None, error=ErrorKind.BAD_OUTPUT, exit_code=0, message=str(exc),
                      stderr_tail=tail)
    return result(data=data, exit_code=0, stderr_tail=tail)


def _wait_holding_stdin(process: subprocess.Popen[str], stdin_text: str, timeout_s: float,
                        cancel: Callable[[], None] | None) -> tuple[str, str, bool]:
    """Write stdin_text, keep stdin open, collect stdout and stderr until the process ends
    (or kill its group at the timeout); the last item says whether it timed out."""
    assert process.stdin is not None and process.stdout is not None
    assert process.stderr is not None
    chunks: dict[str, str] = {}
    readers = [threading.Thread(target=lambda name=name, pipe=pipe: chunks.__setitem__(
        name, pipe.read()), daemon=True) for name, pipe in (("out", process.stdout),
                                                            ("err", process.stderr))]
    for reader in readers:
        reader.start()
    timed_out = False
    try:
        with contextlib.suppress(BrokenPipeError):
            process.stdin.write(stdin_text)
            process.stdin.flush()
        try:
            process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            _stop(process, cancel)
            process.wait()
            timed_out = True
    finally:
        with contextlib.suppress(BrokenPipeError, OSError):
            process.stdin.close()
    for reader in readers:
        reader.join(5)
    return chunks.get("out", ""), chunks.get("err", ""), timed_out


def fan_out(nodes: Sequence[str], one: Callable[[str], ProbeResult],
            parallel: int) -> dict[str, ProbeResult]:
    """Run `one(node)` for every node, at most `parallel` at once, results in node order."""
    if not nodes:
        return {}
    with ThreadPoolExecutor(max_workers=max(1, min(parallel, len(nodes)))) as pool:
        try:
            results = list(pool.map(one, nodes))
        except BaseException:
            # Ctrl-C lands in this thread; the probes run in the pool's threads.
            kill_all_running()
            raise
    return {result.node: result for result in results}


class Launcher(ABC):
    """Runs a probe on nodes, in parallel, each under a timeout."""

    name: ClassVar[str]
    simulated: ClassVar[bool] = False

    def __init__(self, spec: ClusterSpec) -> None:
        self.spec = spec

    @classmethod
    def from_spec(cls, spec: Spec) -> Launcher:
        """The launcher for a whole spec (the sim launcher also reads its sim section)."""
        return cls(spec.cluster)

    @classmethod
    def default_python(cls) -> str:
        """The interpreter on the nodes when the spec names none: found on their PATH."""
        return "python3"

    @abstractmethod
    def run(self, call: ProbeCall, nodes: Sequence[str],
            timeout_s: float) -> dict[str, ProbeResult]:
        """One ProbeResult per node; per-node failures are results, not exceptions."""

    def close(self) -> None:  # noqa: B027 - most launchers hold nothing
        """Release what the launcher holds (e.g. shared ssh connections)."""
