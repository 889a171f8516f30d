"""Running another party's code that should be quick and quiet (an installed extension's
module, its launcher's module) so that nothing it does at import reaches the run unsaid:

- whatever it raises, `SystemExit` and `KeyboardInterrupt` included, is caught and given
  back (`Outcome.failure`);
- it runs under a time limit: where the platform has SIGALRM and this is the main thread,
  an interval timer raises `Overdue` in it once the limit is past (and again every
  `_AGAIN_S` while it keeps running, so that one `except BaseException` does not swallow
  it). Elsewhere (Windows, a thread) it runs unbounded; the timer a caller had set (a
  test's timeout) is put back, less the time spent here;
- what it prints, to `sys.stdout`/`sys.stderr` or to the file descriptors 1 and 2, is
  taken: counted, and its first `EXCERPT` characters kept (`Outcome.printed`), the rest
  thrown away as it comes, so 1 GiB printed costs neither the memory nor the terminal;
- what of the process it changes for everyone is put back: the signal handlers (one
  that ignored SIGINT and SIGTERM made the run deaf to Ctrl-C and to `timeout`), the
  working directory (a `chdir` moved the run's evidence) and `sys.stdout`/`sys.stderr`;
- a process it forks ends where the code returns in it (`os._exit(0)`, its output
  taken), where before the child went on as a second run, its lines mixed with the
  first's.

A thread it leaves running is named (`Outcome.left`) and, where it is no daemon (the
interpreter would wait for it at exit: a loop made the run never end), not waited for
(`not_waited_for`: once the run has ended, the process exits with the run's status
without waiting for it). It keeps running until then, and what it prints is the run's.

Code the timer cannot stop (it ignores SIGALRM, turns the timer off, or catches Overdue
every time) ends the process STOP_GRACE_S after its limit, one line on stderr naming it,
UNKNOWN_STATUS (`_watched`): an error said, where the run hung.

What it cannot be kept from: `os._exit` (the process ends there, with the status it
gives: no handler runs), a signal it sends itself that cannot be caught (SIGKILL), a
process it forks that never returns to here, memory it takes. An extension is installed
code run with the run's rights (docs/development.md).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import FrameType
from typing import Generic, TextIO, TypeVar

#: The most of what was printed that is kept (characters)
EXCERPT = 200
#: While the code keeps running past its limit, Overdue is raised again this often (s)
_AGAIN_S = 0.05
#: How long the drain of a file descriptor is waited for once the code is done (s): a
#: process it started may hold the descriptor open; its drain is then left to run on
_DRAIN_WAIT_S = 0.5
#: The name of the threads that drain them (never counted as the code's)
_DRAIN = "pytest-cluster-drain-"

T = TypeVar("T")


class Overdue(BaseException):
    """Raised in the code run by `run` once its time limit is past."""


class _Kept:
    """What was printed on one channel: its size and its first EXCERPT characters."""

    def __init__(self) -> None:
        self.size = 0
        self.head = ""
        self._lock = threading.Lock()

    def add(self, text: str) -> None:
        with self._lock:
            if len(self.head) < EXCERPT:
                self.head += text[:EXCERPT - len(self.head)]
            self.size += len(text)

    def add_bytes(self, chunk: bytes) -> None:
        with self._lock:
            if len(self.head) < EXCERPT:
                text = chunk[:EXCERPT * 4].decode("utf-8", "replace")
                self.head += text[:EXCERPT - len(self.head)]
            self.size += len(chunk)


class _Bytes:
    """The `buffer` of _Writer: bytes written to it are kept as _Kept keeps them."""

    def __init__(self, kept: _Kept) -> None:
        self._kept = kept

    def write(self, data: bytes) -> int:
        self._kept.add_bytes(bytes(data))
        return len(data)

    def flush(self) -> None:
        pass


class _Writer:
    """`sys.stdout` or `sys.stderr` while the code runs: a text stream that keeps nothing
    but what _Kept keeps."""

    def __init__(self, kept: _Kept) -> None:
        self._kept = kept
        self.buffer = _Bytes(kept)

    def write(self, text: str) -> int:
        self._kept.add(str(text))
        return len(text)

    def writelines(self, lines: Iterator[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        raise OSError("printing at import is taken by pytest-cluster")

    @property
    def encoding(self) -> str:
        return "utf-8"


@dataclass(frozen=True)
class Printed:
    """What the code printed: how many characters (bytes, for what went to the file
    descriptors) and the first EXCERPT of them."""

    size: int
    excerpt: str


@dataclass(frozen=True)
class Outcome(Generic[T]):
    """What the code returned, or what it raised (None: nothing), and what it printed."""

    value: T | None
    failure: BaseException | None
    printed: Printed
    seconds: float
    left: tuple[threading.Thread, ...] = ()  # threads it started, still running


def _drain(fd: int, kept: _Kept) -> None:
    with contextlib.suppress(OSError):
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            kept.add_bytes(chunk)
    with contextlib.suppress(OSError):
        os.close(fd)


@contextlib.contextmanager
def _taken_fds(kept: _Kept) -> Iterator[None]:
    """File descriptors 1 and 2 pointed at a pipe, drained by a thread into `kept`, and
    put back after. A descriptor that is not open is left as it is."""
    saved: list[tuple[int, int]] = []
    drains: list[threading.Thread] = []
    try:
        for fd in (1, 2):
            try:
                saved.append((fd, os.dup(fd)))
            except OSError:
                continue
            read, write = os.pipe()
            with contextlib.suppress(OSError, AttributeError):  # Linux: fewer, larger reads
                fcntl.fcntl(write, fcntl.F_SETPIPE_SZ, 1 << 20)
            os.dup2(write, fd)
            os.close(write)
            drain = threading.Thread(target=_drain, args=(read, kept), daemon=True,
                                     name=f"{_DRAIN}{fd}")
            drain.start()
            drains.append(drain)
        yield
    finally:
        for fd, copy in saved:
            os.dup2(copy, fd)  # the pipe's last writer closed: its drain ends
            os.close(copy)
        for drain in drains:
            drain.join(_DRAIN_WAIT_S)


@contextlib.contextmanager
def _taken_streams(kept: _Kept) -> Iterator[None]:
    streams = sys.stdout, sys.stderr
    writer: TextIO = _Writer(kept)  # type: ignore[assignment]
    sys.stdout = sys.stderr = writer
    try:
        yield
    finally:
        sys.stdout, sys.stderr = streams


class _Timer:
    """SIGALRM raising Overdue after `limit_s` (main thread, where there is SIGALRM)."""

    def __init__(self, limit_s: float) -> None:
        self.limit_s = limit_s
        self.done = False
        self.armed = (hasattr(signal, "setitimer") and limit_s > 0
                      and threading.current_thread() is threading.main_thread())
        self._handler: signal.Handlers | Callable[[int, FrameType | None], object] | int | None
        self._handler = None
        self._before = (0.0, 0.0)
        self._started = 0.0

    def _raise(self, _signum: int, _frame: FrameType | None) -> None:
        if not self.done:
            raise Overdue

    def __enter__(self) -> _Timer:
        if self.armed:
            self._started = time.monotonic()
            self._handler = signal.signal(signal.SIGALRM, self._raise)
            self._before = signal.setitimer(signal.ITIMER_REAL, self.limit_s, _AGAIN_S)
        return self

    def stop(self) -> None:
        self.done = True
        if self.armed:
            signal.setitimer(signal.ITIMER_REAL, 0)

    def __exit__(self, *_: object) -> None:
        self.stop()
        if self.armed:
            signal.signal(signal.SIGALRM, self._handler)
            delay, interval = self._before
            if delay > 0:  # a caller's timer: what was left of it
                left = delay - (time.monotonic() - self._started)
                signal.setitimer(signal.ITIMER_REAL, max(left, 0.001), interval)


@contextlib.contextmanager
def _kept_handlers() -> Iterator[None]:
    """Every signal's handler as it was before (where this is the main thread: only there
    can one be set)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    handlers = {}
    for signum in signal.valid_signals():
        with contextlib.suppress(OSError, ValueError):
            handlers[signum] = signal.getsignal(signum)
    try:
        yield
    finally:
        for signum, handler in handlers.items():
            if handler is not None and signal.getsignal(signum) is not handler:
                with contextlib.suppress(OSError, ValueError, TypeError):
                    signal.signal(signum, handler)


@contextlib.contextmanager
def _kept_directory() -> Iterator[None]:
    try:
        where: str | None = os.getcwd()
    except OSError:
        where = None
    try:
        yield
    finally:
        if where is not None:
            with contextlib.suppress(OSError):
                if os.getcwd() != where:
                    os.chdir(where)


#: How long past its limit code that will not be stopped (it ignores SIGALRM, turns the
#: timer off, or catches Overdue again and again) may run before the process ends (s)
STOP_GRACE_S = 1.0


@contextlib.contextmanager
def _watched(limit_s: float, what: str) -> Iterator[None]:
    """A watchdog: where the code has not returned STOP_GRACE_S after `limit_s` (the timer
    could not stop it), one line on stderr (as it was before the code ran) naming `what`,
    and the process ends, UNKNOWN_STATUS (an error, never a pass; a gate says ERROR): a
    hang is the one outcome worse than that."""
    if not limit_s > 0:
        yield
        return
    try:
        err: int | None = os.dup(2)
    except OSError:  # no stderr: the process still ends, unsaid
        err = None
    done = threading.Event()

    def watch() -> None:
        if done.wait(limit_s + STOP_GRACE_S):
            return
        line = (f"ERROR: pytest-cluster: {what or 'code run guarded'} did not finish within "
                f"{limit_s:g} s and could not be stopped (it ignores SIGALRM, turns the timer "
                f"off or catches every exception): the run ends here, exit {UNKNOWN_STATUS}\n")
        if err is not None:
            with contextlib.suppress(OSError):
                os.write(err, line.encode("utf-8", "replace"))
        os._exit(UNKNOWN_STATUS)

    watchdog = threading.Thread(target=watch, daemon=True, name="pytest-cluster-watchdog")
    watchdog.start()
    try:
        yield
    finally:
        done.set()
        if err is not None:
            os.close(err)


def run(code: Callable[[], T], limit_s: float, what: str = "") -> Outcome[T]:
    """`code()` caught, timed and quietened (see the module's docstring); `what` names it
    where the process must end for it (`_watched`)."""
    kept = _Kept()
    value: T | None = None
    failure: BaseException | None = None
    started = time.monotonic()
    pid = os.getpid()
    before = set(threading.enumerate())
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            if stream is not None:
                stream.flush()  # what was printed before is not the code's
    with _kept_directory(), _kept_handlers(), _watched(limit_s, what), _taken_fds(kept), \
            _taken_streams(kept), _Timer(limit_s) as timer:
        try:
            try:
                value = code()
            finally:
                timer.stop()
                if os.getpid() != pid:  # a child it forked: it goes no further
                    os._exit(0)
        except BaseException as exc:  # whatever another party's code raises
            failure = exc
    left = tuple(thread for thread in threading.enumerate() if thread not in before
                 and thread.is_alive() and not thread.name.startswith(_DRAIN)
                 and thread.name != "pytest-cluster-watchdog")
    return Outcome(value, failure, Printed(kept.size, kept.head), time.monotonic() - started,
                   left)


#: The status the process exits with, not waiting for a thread left, where none was given
#: (`ends_with`): pytest's internal error, never a pass
UNKNOWN_STATUS = 3


@dataclass
class _Ending:
    """The threads no exit waits for, and what says the status the process then exits
    with."""

    threads: list[threading.Thread]
    status: Callable[[], int] = lambda: UNKNOWN_STATUS
    registered: bool = False


_ENDING = _Ending([])


def ends_with(status: Callable[[], int]) -> None:
    """What gives the status the process exits with where it does not wait for a thread
    left (asked then: pytest's session's exit status)."""
    _ENDING.status = status


def _exit_unwaiting() -> None:
    if any(thread.is_alive() for thread in _ENDING.threads):
        try:
            status = int(_ENDING.status())
        except Exception:  # the process ends: never a pass for want of its status
            status = UNKNOWN_STATUS
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                if stream is not None:
                    stream.flush()
        os._exit(status)


def not_waited_for(threads: tuple[threading.Thread, ...]) -> bool:
    """Where `threads` (left by code `run` ran) include one no daemon, the interpreter's
    exit does not wait for it: once the threads the run itself started are done, the
    process exits with `ends_with`'s status (os._exit, after stdout and stderr are
    flushed). False where Python offers no hook before it waits (then it waits)."""
    waited = [thread for thread in threads if not thread.daemon]
    if not waited:
        return True
    register = getattr(threading, "_register_atexit", None)  # 3.9 to 3.13 at least
    if register is None:
        return False
    _ENDING.threads.extend(waited)
    if not _ENDING.registered:
        register(_exit_unwaiting)
        _ENDING.registered = True
    return True


def within(code: Callable[[], T], limit_s: float) -> tuple[T | None, BaseException | None]:
    """(what `code()` returned, None), or (None, what it raised: anything, KeyboardInterrupt
    too), or (None, Overdue()) where it had not returned within `limit_s`: run in a daemon
    thread of its own, which, past the limit, is left running (it cannot be stopped; the
    process's exit does not wait for it). For another party's code called during the run
    (an extension's launcher, its sim answers), where SIGALRM cannot be borrowed."""
    ended: list[tuple[T | None, BaseException | None]] = []

    def target() -> None:
        try:
            ended.append((code(), None))
        except BaseException as exc:  # another party's code: whatever it raises
            ended.append((None, exc))

    thread = threading.Thread(target=target, daemon=True, name="pytest-cluster-guarded")
    thread.start()
    thread.join(limit_s)
    return ended[0] if ended else (None, Overdue())
