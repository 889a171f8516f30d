"""What a run holds and when it lets go of it (README: "What is closed when").

- The run's launcher: one per pytest process (the controller's, each pytest-xdist
  worker's), made when the `cluster` fixture or the inventory first needs it, shared by
  both, and closed once when pytest lets go of its config (config.add_cleanup: after every
  pytest_unconfigure, whatever raised), which it does at the end of the run, after Ctrl-C
  or SIGTERM, and after a usage error. For ssh that ends every shared connection and
  removes its control directory (launchers/ssh.py).
- SIGTERM (SLURM's time limit, `kill`, a CI runner's cancel) is Ctrl-C: a
  KeyboardInterrupt, so that the run ends as for Ctrl-C (results kept, run directory
  sealed, launcher closed) rather than vanish. A SIGTERM handler set by someone else is
  left alone. The launchers' own handler (launchers/process.py) stops every launch first.
- Once the run writes its evidence (after a first Ctrl-C, or after the checks), a further
  Ctrl-C or SIGTERM does not cut it short: it is said once and noted (session.py,
  hold_interrupts), and the run ends as it was going to, its directory sealed.
- A soak's round takes SIGINT, which is how its soak stops it, even where the soak was
  started with SIGINT ignored (a script's background job, `&`), which the round inherits.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from typing import TYPE_CHECKING

import pytest

from pytest_cluster.errors import LaunchError
from pytest_cluster.launchers import Launcher, get_launcher
from pytest_cluster.launchers.process import as_ctrl_c

if TYPE_CHECKING:
    from pytest_cluster.contract.model import Spec

#: What a run asks for its launcher (absent without --cluster).
LAUNCHER_KEY = pytest.StashKey["RunLauncher"]()
CLOSED = "the run's launcher is closed: the run has ended"


class RunLauncher:
    """The one launcher of a run in this process: made on first use, closed once."""

    def __init__(self, spec: Spec) -> None:
        self.spec = spec
        self._launcher: Launcher | None = None
        self._closed = False
        self._lock = threading.Lock()

    def get(self) -> Launcher:
        with self._lock:
            if self._closed:
                raise LaunchError(CLOSED)
            if self._launcher is None:
                self._launcher = get_launcher(self.spec)
            return self._launcher

    def close(self) -> None:
        with self._lock:
            launcher, self._launcher, self._closed = self._launcher, None, True
        if launcher is not None:
            launcher.close()


def run_launcher(config: pytest.Config) -> Launcher:
    """The launcher of this run (made now if it is the first ask)."""
    return config.stash[LAUNCHER_KEY].get()


def open_run(config: pytest.Config, spec: Spec, soak_round: bool) -> None:
    """At configure, with --cluster: SIGTERM as Ctrl-C, SIGINT taken by a soak's round,
    and the run's launcher, closed when pytest lets go of `config` (before the signal
    handlers are put back: a SIGTERM while it closes still unwinds as Ctrl-C)."""
    _sigterm_as_ctrl_c(config)
    if soak_round and signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        with contextlib.suppress(ValueError):  # not the main thread: nothing to do
            signal.signal(signal.SIGINT, signal.default_int_handler)
    owner = RunLauncher(spec)
    config.stash[LAUNCHER_KEY] = owner
    config.add_cleanup(owner.close)


def _sigterm_as_ctrl_c(config: pytest.Config) -> None:
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return
    with contextlib.suppress(ValueError):  # not the main thread: nothing to do
        signal.signal(signal.SIGTERM, as_ctrl_c)
        config.add_cleanup(_default_sigterm)


def _default_sigterm() -> None:
    with contextlib.suppress(ValueError):
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
