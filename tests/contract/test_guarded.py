"""contract/guarded.py: another party's code run caught, timed and quietened, and what it
changes of the process put back."""

from __future__ import annotations

import os
import signal
import sys
import threading
from pathlib import Path

import pytest

from pytest_cluster.contract import guarded


def test_a_callers_alarm_is_put_back_after_a_guarded_import() -> None:
    """The time limit borrows SIGALRM (pytest-timeout's, a test's): its handler and what was
    left of its timer are put back, whether the code ended or was stopped."""
    from pytest_cluster.contract import guarded

    def theirs(_signum: int, _frame: object) -> None:
        raise AssertionError("the caller's alarm went off during the guarded code")

    def loops() -> None:
        while True:
            pass

    before = signal.signal(signal.SIGALRM, theirs)
    signal.setitimer(signal.ITIMER_REAL, 30.0)
    try:
        stopped = guarded.run(loops, 0.2)
        ended = guarded.run(lambda: 7, 0.2)
        assert signal.getsignal(signal.SIGALRM) is theirs
        left = signal.getitimer(signal.ITIMER_REAL)[0]
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, before)
    assert isinstance(stopped.failure, guarded.Overdue) and stopped.value is None
    assert (ended.value, ended.failure) == (7, None)
    assert 25 < left < 30


def test_what_an_import_changes_of_the_process_is_put_back(tmp_path: Path) -> None:
    """An import that ignored SIGINT and SIGTERM made the run deaf to Ctrl-C and to
    `timeout`; one that changed directory moved the run's evidence."""
    from pytest_cluster.contract import guarded

    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM,
                                                     signal.SIGUSR1)}
    here = os.getcwd()

    def hostile() -> None:
        for sig in before:
            signal.signal(sig, signal.SIG_IGN)
        os.chdir(tmp_path)

    outcome = guarded.run(hostile, 5.0)
    assert outcome.failure is None
    assert {sig: signal.getsignal(sig) for sig in before} == before
    assert os.getcwd() == here


def test_a_process_an_import_forks_ends_where_the_import_returns(tmp_path: Path) -> None:
    """Before, the child went on as a second run, its lines mixed with the first's."""
    from pytest_cluster.contract import guarded

    forked: list[int] = []
    outcome = guarded.run(lambda: forked.append(os.fork()), 5.0)
    (tmp_path / f"went-on-{os.getpid()}").touch()  # only this process gets here
    child, = forked
    assert outcome.failure is None and child > 0
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert [p.name for p in tmp_path.iterdir()] == [f"went-on-{os.getpid()}"]


@pytest.mark.parametrize("raised", [SystemExit(2), KeyboardInterrupt(), ValueError("no")])
def test_whatever_the_code_raises_is_given_back(raised: BaseException) -> None:
    def raises() -> None:
        raise raised

    outcome = guarded.run(raises, 5.0)
    assert outcome.failure is raised and outcome.value is None


def test_what_the_code_prints_is_counted_and_its_head_kept(
        capfd: pytest.CaptureFixture[str]) -> None:
    def prints() -> int:
        print("a" * 150, end="")
        sys.stderr.write("b" * 150)
        return 7

    outcome = guarded.run(prints, 5.0)
    assert outcome.value == 7 and outcome.failure is None
    assert outcome.printed.size == 300
    assert outcome.printed.excerpt == "a" * 150 + "b" * (guarded.EXCERPT - 150)
    assert capfd.readouterr() == ("", "")  # none of it reached the terminal


def test_what_the_code_writes_to_the_file_descriptors_is_taken(
        capfd: pytest.CaptureFixture[str]) -> None:
    outcome = guarded.run(lambda: os.write(1, b"to fd 1\n"), 5.0)
    assert outcome.value == len(b"to fd 1\n")
    assert outcome.printed.size == len(b"to fd 1\n") and "to fd 1" in outcome.printed.excerpt
    assert "to fd 1" not in capfd.readouterr().out


def test_a_thread_the_code_leaves_running_is_named() -> None:
    stop = threading.Event()
    started: list[threading.Thread] = []

    def starts() -> None:
        thread = threading.Thread(target=stop.wait, name="left-behind", daemon=True)
        thread.start()
        started.append(thread)

    try:
        outcome = guarded.run(starts, 5.0)
        assert outcome.left == tuple(started)
        assert guarded.not_waited_for(outcome.left)  # a daemon: no exit waits for it
    finally:
        stop.set()
    assert guarded.run(lambda: None, 5.0).left == ()


def test_within_gives_back_the_value_what_was_raised_or_overdue() -> None:
    assert guarded.within(lambda: 3, 5.0) == (3, None)

    def interrupted() -> None:
        raise KeyboardInterrupt

    value, failure = guarded.within(interrupted, 5.0)
    assert value is None and isinstance(failure, KeyboardInterrupt)
    stop = threading.Event()
    try:
        value, failure = guarded.within(stop.wait, 0.05)
        assert value is None and isinstance(failure, guarded.Overdue)
    finally:
        stop.set()
