"""What every launcher returns: one typed ProbeResult per node, never an exception per node.

Every command a launcher starts runs in its own process group and is registered while it
runs, with the action that cancels it where it runs (scancel for a srun step). Ctrl-C and
SIGTERM (handled once a launcher exists, see stop_on_interrupt), an exception in a
fan-out, and pytest's keyboard-interrupt hook call stop_everything(): every launch is
cancelled and its group gets SIGTERM, then SIGKILL after KILL_GRACE_S, and the work that
was under way starts no new launch (the main thread's cleanup still may, see _Interrupts).
Over ssh the killed client's hang-up makes the node runner end the probe; locally and on
the nodes, job_node ends its ranks when it is told to stop or dies.
"""

from __future__ import annotations

import contextlib
import enum
import json
import os
import random
import signal
import socket
import subprocess
import threading
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from types import FrameType
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from pytest_cluster.errors import JobFailed, ProbeFailed
from pytest_cluster.probes import ProbeCall

STDERR_TAIL = 2000
Item = TypeVar("Item")
Result = TypeVar("Result")

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


#: A launch asked to stop gets SIGTERM (a probe may clean up: storage removes its files),
#: then SIGKILL to its whole process group this many seconds later; the node runner gives
#: its probe the same grace.
KILL_GRACE_S = 3.0
#: How long stop_everything waits for the launches' cancel actions (scancel).
CANCEL_WAIT_S = 10.0


@dataclass(eq=False)
class Launch:
    """A running launched command: its process (leader of its own process group) and the
    action that cancels it where it runs (scancel for a srun step), if any."""

    process: subprocess.Popen[str]
    cancel: Callable[[], None] | None = None
    stopping: bool = False


_RUNNING: list[Launch] = []
# re-entrant: the Ctrl-C handler runs in the main thread, which may hold it already
_RUNNING_LOCK = threading.RLock()
_PREVIOUS_HANDLERS: dict[int, Any] = {}
INTERRUPTED_MESSAGE = "not started: the run was interrupted (Ctrl-C or SIGTERM)"


class _Interrupts:
    """Which launches may start after an interrupt: those the main thread asks for (it
    unwinds: finally blocks, teardown, e.g. a shared check removing its file), also
    through in_parallel's threads; never those of work that was under way in other
    threads (a pool of benchmark jobs would start its next job)."""

    def __init__(self) -> None:
        self.count = 0  # interrupts so far
        self.pending = False  # since the last launcher was made
        self.local = threading.local()  # .epoch: `count` when the main thread asked

    def epoch(self) -> int | None:
        if threading.current_thread() is threading.main_thread():
            return self.count
        epoch: int | None = getattr(self.local, "epoch", None)
        return epoch

    def may_start(self) -> bool:
        epoch = self.epoch()
        return not self.pending if epoch is None else epoch == self.count


_INTERRUPTS = _Interrupts()


def interrupted() -> bool:
    """Whether the work of this thread was interrupted (Ctrl-C, SIGTERM): it starts
    nothing new (see _Interrupts), and what waits for others (a simulated job's
    rendezvous) stops waiting."""
    return not _INTERRUPTS.may_start()


def running_launches() -> list[Launch]:
    with _RUNNING_LOCK:
        return list(_RUNNING)


def _signal_group(process: subprocess.Popen[str], sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, sig)


def _has_ended(process: subprocess.Popen[str]) -> bool:
    """Whether the group's leader has exited, without reaping it (its group id stays
    reserved for the SIGKILL that follows)."""
    if process.returncode is not None:
        return True
    try:
        return os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) \
            is not None
    except ChildProcessError:  # reaped already
        return True


def _end_groups(processes: Sequence[subprocess.Popen[str]], grace_s: float) -> None:
    """SIGTERM every process group, wait for their leaders up to `grace_s`, then SIGKILL
    every group (what a leader left behind in it too); at once on a second Ctrl-C."""
    for process in processes:
        _signal_group(process, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    try:
        while time.monotonic() < deadline and not all(_has_ended(p) for p in processes):
            time.sleep(0.05)
    finally:
        for process in processes:
            _signal_group(process, signal.SIGKILL)


def _quietly(action: Callable[[], None]) -> None:
    with contextlib.suppress(Exception):
        action()


def _stop(launches: Sequence[Launch], grace_s: float = KILL_GRACE_S) -> int:
    """Cancel each launch where it runs and end its process group (each launch once)."""
    with _RUNNING_LOCK:
        todo = [launch for launch in launches if not launch.stopping]
        for launch in todo:
            launch.stopping = True
    cancels = [threading.Thread(target=_quietly, args=(launch.cancel,), daemon=True)
               for launch in todo if launch.cancel is not None]
    for thread in cancels:
        thread.start()
    _end_groups([launch.process for launch in todo], grace_s)
    deadline = time.monotonic() + CANCEL_WAIT_S
    for thread in cancels:
        thread.join(max(0.0, deadline - time.monotonic()))
    return len(todo)


def stop_everything(grace_s: float = KILL_GRACE_S) -> int:
    """Stop every launch still running, on every node, at once: each one's cancel action
    (scancel for a srun step), then SIGTERM to its process group (for ssh: the client,
    whose hang-up makes the node runner end the probe and its ranks; locally: the probe,
    whose job_node ends its ranks), SIGKILL after `grace_s`. Called on Ctrl-C and SIGTERM
    (stop_on_interrupt), by fan_out and jobs on any exception, and at pytest's
    keyboard-interrupt hook. Returns how many were stopped."""
    return _stop(running_launches(), grace_s)


def stop_on_interrupt() -> None:
    """From now on, SIGINT (Ctrl-C) and SIGTERM first stop every launch (and the work
    under way starts no new one), then do what they did before (KeyboardInterrupt; a
    SIGTERM handler someone set; the default action). Ctrl-C lands in the main thread
    while the launches wait in pool threads: only a handler reaches them before the pools'
    shutdown waits for them. A signal ignored stays ignored. Called by every launcher made
    in the main thread (a new run: threads of its own may start launches again after an
    earlier interrupt)."""
    if threading.current_thread() is not threading.main_thread():
        return
    _INTERRUPTS.pending = False
    for sig in (signal.SIGINT, signal.SIGTERM):
        current = signal.getsignal(sig)
        if current is _on_interrupt or current is signal.SIG_IGN or current is None:
            continue
        _PREVIOUS_HANDLERS[sig] = current
        signal.signal(sig, _on_interrupt)


def _on_interrupt(signum: int, frame: FrameType | None) -> None:
    with _RUNNING_LOCK:
        _INTERRUPTS.count += 1
        _INTERRUPTS.pending = True
    stop_everything()
    previous = _PREVIOUS_HANDLERS.get(signum, signal.SIG_DFL)
    if callable(previous):
        previous(signum, frame)
        return
    signal.signal(signum, previous)
    os.kill(os.getpid(), signum)


def _start(argv: list[str], cancel: Callable[[], None] | None,
           **popen: Any) -> Launch | None:
    """Start argv in its own process group, registered for stop_everything; None (nothing
    started) for work under way when the run was interrupted (see _Interrupts). OSError
    when it cannot start."""
    with _RUNNING_LOCK:  # no launch slips in between an interrupt and its stop
        if not _INTERRUPTS.may_start():
            return None
        launch = Launch(subprocess.Popen(argv, start_new_session=True, **popen), cancel)
        _RUNNING.append(launch)
        return launch


def _finish(launch: Launch) -> None:
    """The launch is over: stopped if it still runs (an exception, Ctrl-C in this thread),
    and no longer registered."""
    if not _has_ended(launch.process):
        _stop([launch])
    with _RUNNING_LOCK:
        _RUNNING.remove(launch)


@contextlib.contextmanager
def launched(argv: list[str], **popen: Any) -> Iterator[subprocess.Popen[str] | None]:
    """A registered launch (see _start) for the block; stopped if it still runs after it."""
    launch = _start(argv, None, **popen)
    if launch is None:
        yield None
        return
    try:
        yield launch.process
    finally:
        _finish(launch)


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
    """Run argv in its own process group feeding stdin; at the timeout, on Ctrl-C or at
    stop_everything: `cancel()` (e.g. scancel) when given, SIGTERM to the group, SIGKILL
    after KILL_GRACE_S.

    With `hold_stdin`, stdin stays open until the process ends (the node runner of the ssh
    and slurm launchers kills the probe when it closes)."""
    try:
        launch = _start(argv, cancel, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, text=True, encoding="utf-8",
                        errors="replace", env=env)
    except FileNotFoundError:
        return Finished(None, "", "", start_error=ErrorKind.INTERPRETER_MISSING,
                        start_message=f"{argv[0]!r} not found (check cluster.python in the "
                                      f"spec)")
    except OSError as exc:
        return Finished(None, "", "", start_error=ErrorKind.UNREACHABLE,
                        start_message=f"cannot start {argv[0]!r}: {exc.strerror}")
    if launch is None:
        return Finished(None, "", "", start_error=ErrorKind.CANCELLED,
                        start_message=INTERRUPTED_MESSAGE)
    process = launch.process
    try:
        if hold_stdin:
            stdout, stderr, timed_out = _wait_holding_stdin(launch, stdin_text, timeout_s)
        else:
            try:
                stdout, stderr = process.communicate(stdin_text, timeout=timeout_s)
                timed_out = False
            except subprocess.TimeoutExpired:
                _stop([launch])
                stdout, stderr = process.communicate()
                timed_out = True
    finally:
        _finish(launch)  # Ctrl-C in this thread: stopped before it propagates
    return Finished(process.returncode, stdout, stderr, timed_out)


def run_process(node: str, probe: str, argv: list[str], stdin_text: str,
                timeout_s: float, env: dict[str, str] | None = None,
                simulated: bool = False, hold_stdin: bool = False,
                within: str | None = None) -> ProbeResult:
    """Run a probe on one node (execute) and map every outcome to a ProbeResult."""
    started = time.time()
    clock = time.perf_counter()
    done = execute(argv, stdin_text, timeout_s, env=env, hold_stdin=hold_stdin)
    return probe_result(node, probe, done, timeout_s, started, time.perf_counter() - clock,
                        simulated=simulated, within=within)


def probe_result(node: str, probe: str, done: Finished, timeout_s: float, started: float,
                 duration_s: float, simulated: bool = False,
                 within: str | None = None) -> ProbeResult:
    """A node's ProbeResult from how its probe process ended; `within` says the timeout
    in a message (Launcher.timeout_text: '10 s (cluster.probe_timeout)')."""

    def result(**kwargs: Any) -> ProbeResult:
        return ProbeResult(node=node, probe=probe, started_at=started, duration_s=duration_s,
                           simulated=simulated, **kwargs)

    if done.start_error is not None:
        return result(data=None, error=done.start_error, message=done.start_message)
    tail = done.stderr[-STDERR_TAIL:]
    if done.timed_out:
        return result(data=None, error=ErrorKind.TIMEOUT,
                      message=f"no answer within {within or f'{timeout_s:g} s'}; killed",
                      stderr_tail=tail)
    if done.returncode != 0:
        return result(data=None, error=ErrorKind.CRASHED, exit_code=done.returncode,
                      message="the probe exited with an error", stderr_tail=tail)
    try:
        data = parse_probe_output(done.stdout, probe)
    except ValueError as exc:
        return result(data=None, error=ErrorKind.BAD_OUTPUT, exit_code=0, message=str(exc),
                      stderr_tail=tail)
    return result(data=data, exit_code=0, stderr_tail=tail)


def _wait_holding_stdin(launch: Launch, stdin_text: str,
                        timeout_s: float) -> tuple[str, str, bool]:
    """Write stdin_text, keep stdin open, collect stdout and stderr until the process ends
    (or stop it at the timeout); the last item says whether it timed out."""
    process = launch.process
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
            _stop([launch])
            process.wait()
            timed_out = True
    finally:
        with contextlib.suppress(BrokenPipeError, OSError):
            process.stdin.close()
    for reader in readers:
        reader.join(5)
    return chunks.get("out", ""), chunks.get("err", ""), timed_out


def in_parallel(work: Callable[[Item], Result], items: Sequence[Item],
                at_once: int) -> list[Result]:
    """`work(item)` for every item in threads, at most `at_once` at a time, results in
    order. When this thread is interrupted (Ctrl-C lands in the main thread while the
    launches wait in the pool's threads) or a call raises, the calls not yet started are
    dropped and every running launch is stopped before the exception goes on: the pool's
    shutdown would otherwise wait for them to end by themselves."""
    if not items:
        return []
    epoch = _INTERRUPTS.epoch()

    def on_behalf(item: Item) -> Result:
        """In a pool thread, for the caller: may it start launches after an interrupt."""
        _INTERRUPTS.local.epoch = epoch
        try:
            return work(item)
        finally:
            _INTERRUPTS.local.epoch = None

    pool = ThreadPoolExecutor(max_workers=max(1, min(at_once, len(items))))
    try:
        return list(pool.map(on_behalf, items))
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        stop_everything()
        raise
    finally:
        pool.shutdown(wait=True)


def fan_out(nodes: Sequence[str], one: Callable[[str], ProbeResult],
            parallel: int) -> dict[str, ProbeResult]:
    """Run `one(node)` for every node, at most `parallel` at once, results in node order."""
    return {result.node: result for result in in_parallel(one, nodes, parallel)}


#: The master address of a job whose ranks all run on this machine.
LOOPBACK = "127.0.0.1"
#: The ports a job's master listens on when the nodes' free ports are not known here.
MASTER_PORTS = (29500, 30499)


def free_local_port() -> int:
    """A TCP port free on this machine now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        port: int = sock.getsockname()[1]
        return port


class Launcher(ABC):
    """Runs a probe on nodes, in parallel, each under a timeout, and says what it can do:
    the rest of the code asks that, never which launcher it is.

    - `name`: the spec's `cluster.launcher` that picks it (the registry's key); for
      messages, not to branch on.
    - `simulated`: every result comes from the spec's description of the cluster, not
      from hardware (the sim); its results are marked simulated, and so is the run
      (report.is_simulated).
    - `one_host`: every "node" is this machine (local): distributed jobs run one at a
      time (they would share its CPUs and network), their master is 127.0.0.1 and their
      port one that is free here.
    - `master_address(node, timeout_s)`: where the other ranks of a job reach its rank 0
      on `node` (MASTER_ADDR).
    - `master_port()`: the port a new job's master listens on (MASTER_PORT).
    """

    name: ClassVar[str]
    simulated: ClassVar[bool] = False
    one_host: ClassVar[bool] = False

    def __init__(self, spec: ClusterSpec) -> None:
        self.spec = spec
        stop_on_interrupt()

    def timeout_text(self, timeout_s: float) -> str:
        """A timeout for a message, named when it is the spec's probe timeout:
        '10 s (cluster.probe_timeout)'."""
        name = " (cluster.probe_timeout)" if timeout_s == self.spec.probe_timeout_s else ""
        return f"{timeout_s:g} s{name}"

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

    def master_address(self, node: str, timeout_s: float) -> str:
        """The address the other nodes reach `node` on: 127.0.0.1 on one host; else the
        first address the node reports (job_node --whereami) that is not a loopback one.
        JobFailed says why there is none."""
        if self.one_host:
            return LOOPBACK
        result = self.run(ProbeCall("job_node", ("--whereami",)), [node], timeout_s)[node]
        if not result.ok:
            raise JobFailed(f"cannot find {node}'s address for MASTER_ADDR: "
                            f"{result.describe()}")
        addresses: Sequence[str] = result.payload().get("addresses", [])
        usable = [a for a in addresses if not a.startswith("127.")]
        if not usable:
            raise JobFailed(f"{node} has no address other nodes can reach (found "
                            f"{list(addresses)}); give JobSpec.master_addr")
        return usable[0]

    def master_port(self) -> int:
        """A port for a new job's master: one free here on one host; else a random one
        in 29500-30499 (which ports are free on the node is not known here)."""
        if self.one_host:
            return free_local_port()
        return random.randint(*MASTER_PORTS)  # noqa: S311 - not a secret

    def close(self) -> None:  # noqa: B027 - most launchers hold nothing
        """Release what the launcher holds (e.g. shared ssh connections)."""
