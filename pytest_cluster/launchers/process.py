"""Launched commands and stopping them: how a command is run on behalf of a probe and how
it ended (execute, run_process, probe_result, launched).

Every command a launcher starts runs in its own process group and is registered while it
runs, with the action that cancels it where it runs (scancel for a srun step). Ctrl-C and
SIGTERM (handled once a launcher exists, see stop_on_interrupt), an exception in a
fan-out, and pytest's keyboard-interrupt hook call stop_everything(): every launch is
cancelled and its group gets SIGTERM, then SIGKILL after KILL_GRACE_S, and the work that
was under way starts no new launch (the main thread's cleanup still may, see _Interrupts).
Over ssh the killed client's hang-up makes the node runner end the probe; locally and on
the nodes, job_node ends its ranks when it is told to stop or dies. While the run writes its
evidence, an interrupt stops launches and is noted, but does not unwind it (hold_interrupts).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from types import FrameType
from typing import IO, Any

from pytest_cluster.launchers.capture import Capture
from pytest_cluster.launchers.result import ErrorKind, ProbeResult, parse_probe_output
from pytest_cluster.units import format_size

STDERR_TAIL = 2000


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

    process: subprocess.Popen[Any]
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
        #: while the run's evidence is written (hold_interrupts): the line said at the
        #: first interrupt held, and how many were held
        self.hold_note: str | None = None
        self.held = 0

    def epoch(self) -> int | None:
        if threading.current_thread() is threading.main_thread():
            return self.count
        epoch: int | None = getattr(self.local, "epoch", None)
        return epoch

    def may_start(self) -> bool:
        epoch = self.epoch()
        return not self.pending if epoch is None else epoch == self.count


_INTERRUPTS = _Interrupts()


def working_on() -> int | None:
    """What the work of this thread is on (the interrupts so far when the main thread
    asked): for a pool thread that works for it (working_for)."""
    return _INTERRUPTS.epoch()


@contextlib.contextmanager
def working_for(epoch: int | None) -> Iterator[None]:
    """In a pool thread, for the block: it works for a caller that was `working_on()`
    `epoch`, and may start launches after an interrupt when that caller may."""
    _INTERRUPTS.local.epoch = epoch
    try:
        yield
    finally:
        _INTERRUPTS.local.epoch = None


def interrupted() -> bool:
    """Whether the work of this thread was interrupted (Ctrl-C, SIGTERM): it starts
    nothing new (see _Interrupts), and what waits for others (a simulated job's
    rendezvous) stops waiting."""
    return not _INTERRUPTS.may_start()


def running_launches() -> list[Launch]:
    with _RUNNING_LOCK:
        return list(_RUNNING)


def _signal_group(process: subprocess.Popen[Any], sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, sig)


def _has_ended(process: subprocess.Popen[Any]) -> bool:
    """Whether the group's leader has exited, without reaping it (its group id stays
    reserved for the SIGKILL that follows)."""
    if process.returncode is not None:
        return True
    try:
        return os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) \
            is not None
    except ChildProcessError:  # reaped already
        return True


def _end_groups(processes: Sequence[subprocess.Popen[Any]], grace_s: float) -> None:
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
    _install()


def _install() -> None:
    for sig in (signal.SIGINT, signal.SIGTERM):
        current = signal.getsignal(sig)
        if current is _on_interrupt or current is signal.SIG_IGN or current is None:
            continue
        _PREVIOUS_HANDLERS[sig] = current
        signal.signal(sig, _on_interrupt)


def as_ctrl_c(signum: int, frame: FrameType | None) -> None:
    """A signal handler: the signal is a Ctrl-C (KeyboardInterrupt), e.g. SIGTERM's."""
    raise KeyboardInterrupt(f"signal {signum}")


#: What an interrupt does that hold_interrupts holds back: the run unwinding as for Ctrl-C
#: (a handler someone else set is still called).
_UNWINDS: tuple[Any, ...] = (signal.default_int_handler, as_ctrl_c, signal.SIG_DFL)


def hold_interrupts(note: str) -> None:
    """From now until release_interrupts(), SIGINT and SIGTERM still stop every launch
    but no longer unwind the run (KeyboardInterrupt, the default action): the run is
    writing its evidence, which a second Ctrl-C (or a CI cancel's SIGTERM after it) would
    cut short, unsealed or sealed as if whole. The first one held says `note` on stderr;
    each is counted. SIGKILL remains the hard stop. Main thread only (it holds the
    handlers)."""
    if threading.current_thread() is not threading.main_thread():
        return
    with _RUNNING_LOCK:
        if _INTERRUPTS.hold_note is not None:
            return
        _INTERRUPTS.hold_note, _INTERRUPTS.held = note, 0
    _install()


def release_interrupts() -> int:
    """The evidence is written: interrupts unwind the run again. How many were held."""
    with _RUNNING_LOCK:
        held, _INTERRUPTS.held, _INTERRUPTS.hold_note = _INTERRUPTS.held, 0, None
    return held


def _on_interrupt(signum: int, frame: FrameType | None) -> None:
    with _RUNNING_LOCK:
        _INTERRUPTS.count += 1
        _INTERRUPTS.pending = True
    stop_everything()
    previous = _PREVIOUS_HANDLERS.get(signum, signal.SIG_DFL)
    if _hold(previous):
        return
    if callable(previous):
        previous(signum, frame)
        return
    signal.signal(signum, previous)
    os.kill(os.getpid(), signum)


def _hold(previous: Any) -> bool:
    """Whether this interrupt is held (hold_interrupts); the first one held is said, with
    os.write: the main thread may be inside sys.stderr's own write."""
    with _RUNNING_LOCK:
        note = _INTERRUPTS.hold_note
        if note is None or not any(previous is unwinds for unwinds in _UNWINDS):
            return False
        _INTERRUPTS.held += 1
        first = _INTERRUPTS.held == 1
    if first:
        with contextlib.suppress(OSError):
            os.write(2, f"\n{note}\n".encode(errors="replace"))  # past a progress line
    return True


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
def launched(argv: list[str], **popen: Any) -> Iterator[subprocess.Popen[Any] | None]:
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
    overflow: str = ""  # a stream past its limit: 'stdout: more than 16 MiB (...)'


#: The most of a command's stdout, and of its stderr, kept (cluster.probe_output).
OUTPUT_LIMIT = 16 * 2**20


def execute(argv: list[str], stdin_text: str, timeout_s: float,
            env: dict[str, str] | None = None, hold_stdin: bool = False,
            cancel: Callable[[], None] | None = None,
            limit: int = OUTPUT_LIMIT) -> Finished:
    """Run argv in its own process group feeding stdin; at the timeout, on Ctrl-C or at
    stop_everything: `cancel()` (e.g. scancel) when given, SIGTERM to the group, SIGKILL
    after KILL_GRACE_S. Its stdout and stderr are each kept up to `limit` bytes; past
    that it is stopped and `overflow` says which stream and how much (capture.py).

    With `hold_stdin`, stdin stays open until the process ends (the node runner of the ssh
    and slurm launchers kills the probe when it closes)."""
    try:
        launch = _start(argv, cancel, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, env=env)
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
    try:
        return _collect(launch, stdin_text, timeout_s, hold_stdin, limit)
    finally:
        _finish(launch)  # Ctrl-C in this thread: stopped before it propagates


def _collect(launch: Launch, stdin_text: str, timeout_s: float, hold_stdin: bool,
             limit: int) -> Finished:
    """Write stdin_text (then close stdin, unless `hold_stdin`), read stdout and stderr
    within `limit` each until the process ends, or stop it at the timeout or when a
    stream runs over."""
    process = launch.process
    assert process.stdin is not None and process.stdout is not None
    assert process.stderr is not None
    stopping = threading.Event()
    streams = [Capture(name, pipe, limit, stopping.set).start()
               for name, pipe in (("stdout", process.stdout), ("stderr", process.stderr))]
    writer = threading.Thread(target=_feed, args=(process.stdin, stdin_text, hold_stdin),
                              daemon=True)
    writer.start()
    timed_out = False
    deadline = time.monotonic() + timeout_s
    try:
        while process.poll() is None:
            if stopping.is_set():
                _stop([launch])
                break
            if time.monotonic() >= deadline:
                _stop([launch])
                timed_out = True
                break
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(min(0.05, max(deadline - time.monotonic(), 0.0)))
        process.wait()
    finally:
        with contextlib.suppress(BrokenPipeError, OSError):
            process.stdin.close()
    for stream in streams:
        stream.join(5)
    overflow = "; ".join(found for stream in streams
                         if (found := stream.overflow(format_size)))
    return Finished(process.returncode, streams[0].text, streams[1].text,
                    timed_out and not overflow, overflow=overflow)


def _feed(stdin: IO[bytes], text: str, hold: bool) -> None:
    """Write `text` to a process's stdin; close it unless the process is to keep it."""
    with contextlib.suppress(BrokenPipeError, OSError, ValueError):
        stdin.write(text.encode("utf-8"))
        stdin.flush()
        if not hold:
            stdin.close()


def run_process(node: str, probe: str, argv: list[str], stdin_text: str,
                timeout_s: float, env: dict[str, str] | None = None,
                simulated: bool = False, hold_stdin: bool = False,
                within: str | None = None, limit: int = OUTPUT_LIMIT) -> ProbeResult:
    """Run a probe on one node (execute) and map every outcome to a ProbeResult."""
    started = time.time()
    clock = time.perf_counter()
    done = execute(argv, stdin_text, timeout_s, env=env, hold_stdin=hold_stdin,
                   limit=limit)
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
    if done.overflow:
        return result(data=None, error=ErrorKind.BAD_OUTPUT, exit_code=done.returncode,
                      message=f"the probe printed too much, so it was stopped: "
                              f"{done.overflow} (cluster.probe_output)", stderr_tail=tail)
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
