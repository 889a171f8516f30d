"""A soak round's child process: the signals noted while it starts."""

from __future__ import annotations

import signal

import pytest

from pytest_cluster.soak import round_process


def test_a_signal_while_a_round_is_started_is_noted_and_raised_once_the_soak_holds_it(
        ) -> None:
    """Ctrl-C or SIGTERM inside Popen would lose the child it just forked (it would run
    its round on alone): while a round is started they are noted, and raised after, where
    the soak stops the round; their handlers are back, and one ignored stays ignored."""
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        with round_process.noting_signals() as noted:
            signal.raise_signal(signal.SIGINT)  # its handler runs before this returns
            signal.raise_signal(signal.SIGTERM)
        assert noted == [signal.SIGINT]
        assert signal.getsignal(signal.SIGINT) is before[0]
        assert signal.getsignal(signal.SIGTERM) == signal.SIG_IGN
        with pytest.raises(KeyboardInterrupt):
            for signum in noted:
                signal.raise_signal(signum)
    finally:
        signal.signal(signal.SIGTERM, before[1])
