"""launchers/base.py: what every launcher can do and say, from the Launcher class itself:
its capabilities as KINDS declares them, a timeout in a message, where a job's master is
reached and on which port, and no MPI program where it has no process manager."""

from __future__ import annotations

import socket
from collections.abc import Sequence

import pytest

from pytest_cluster.contract.model import ClusterSpec
from pytest_cluster.errors import JobFailed, ProbeFailed
from pytest_cluster.launchers import ErrorKind, ProbeResult
from pytest_cluster.launchers.base import LOOPBACK, MASTER_PORTS, Launcher, free_local_port
from pytest_cluster.probes import ProbeCall

SPEC = ClusterSpec("t", ("n1",), "stub", "python3", 60.0, 8)


class Stub(Launcher):
    """A launcher no registry knows: its job_node answer is given, its calls recorded."""

    name = "stub"

    def __init__(self, answer: ProbeResult | None = None) -> None:
        super().__init__(SPEC)
        self.answer = answer
        self.calls: list[tuple[ProbeCall, tuple[str, ...]]] = []

    def run(self, call: ProbeCall, nodes: Sequence[str],
            timeout_s: float) -> dict[str, ProbeResult]:
        self.calls.append((call, tuple(nodes)))
        assert self.answer is not None, "asked the nodes where it should not have"
        return {node: self.answer for node in nodes}


class OneHostStub(Stub):
    one_host = True


def whereami(*addresses: str) -> ProbeResult:
    return ProbeResult("n1", "job_node", {"addresses": list(addresses), "hostname": "n1"})


def test_each_launchers_capabilities_are_its_declarations() -> None:
    """`simulated` and `one_host` are said once, in KINDS; every class has them from there."""
    from pytest_cluster.contract.launchers import KINDS
    from pytest_cluster.launchers import launcher_class
    for name, kind in KINDS.items():
        cls = launcher_class(name)
        assert (cls.name, cls.simulated, cls.one_host) == (name, kind.simulated,
                                                          kind.one_host)
    assert [n for n, k in KINDS.items() if k.simulated] == ["sim"]


def test_a_class_outside_the_registry_keeps_what_it_says_of_itself() -> None:
    assert (Stub.simulated, Stub.one_host) == (False, False)
    assert (OneHostStub.simulated, OneHostStub.one_host) == (False, True)


def test_the_probe_timeout_is_named_in_a_message_as_the_specs() -> None:
    launcher = Stub()
    assert launcher.timeout_text(SPEC.probe_timeout_s) == "60 s (cluster.probe_timeout)"
    assert launcher.timeout_text(1.5) == "1.5 s"


def test_the_master_is_the_nodes_first_address_that_is_not_loopback() -> None:
    launcher = Stub(whereami("127.0.1.1", "10.0.0.7", "10.9.9.9"))
    assert launcher.master_address("n1", 30) == "10.0.0.7"
    assert launcher.calls == [(ProbeCall("job_node", ("--whereami",)), ("n1",))]


def test_a_node_with_no_address_for_the_others_fails_the_job_saying_what_it_found() -> None:
    with pytest.raises(JobFailed) as info:
        Stub(whereami("127.0.0.1", "127.0.1.1")).master_address("n1", 30)
    assert str(info.value) == ("n1 has no address other nodes can reach (found "
                               "['127.0.0.1', '127.0.1.1']); give JobSpec.master_addr")


def test_a_node_that_does_not_answer_where_it_is_fails_the_job_with_its_result() -> None:
    failed = ProbeResult("n1", "job_node", None, ErrorKind.UNREACHABLE, "no route")
    with pytest.raises(JobFailed) as info:
        Stub(failed).master_address("n1", 30)
    assert str(info.value) == (f"cannot find n1's address for MASTER_ADDR: "
                               f"{failed.describe()}")


def test_on_one_host_the_master_is_here_without_asking_the_node() -> None:
    launcher = OneHostStub()  # no answer: asking the node fails the test
    assert launcher.master_address("n1", 30) == LOOPBACK
    assert launcher.calls == []


def test_the_masters_port_is_free_here_on_one_host_else_in_the_agreed_range() -> None:
    port = OneHostStub().master_port()
    with socket.socket() as sock:  # free here: nothing holds it
        sock.bind((LOOPBACK, port))
    low, high = MASTER_PORTS
    assert low <= Stub().master_port() <= high


def test_a_free_local_port_can_be_bound() -> None:
    port = free_local_port()
    with socket.socket() as sock:
        sock.bind((LOOPBACK, port))
    assert 0 < port < 2**16


def test_a_launcher_without_a_process_manager_runs_no_mpi_program() -> None:
    assert Stub().run_program(["/opt/nt/all_reduce_perf"], ["n1"], 8, 60) is None


def _answer(data: dict[str, object] | None, error: ErrorKind | None = None) -> ProbeResult:
    return ProbeResult("n1", "job_node", data, error=error)


def test_a_payload_is_typed_once_its_reader_checked_it() -> None:
    """payload_as(read) is the reader's record of the node's answer: where_am_i keeps the
    addresses and host name it checked; an answer it refuses raises its ValueError; a
    probe that gave no answer raises ProbeFailed, as payload() does."""
    from pytest_cluster.launchers.base import where_am_i

    said = _answer({"addresses": ["10.0.0.1"], "hostname": "n1", "extra": 1})
    assert said.payload_as(where_am_i) == {"addresses": ["10.0.0.1"], "hostname": "n1"}
    assert _answer({}).payload_as(where_am_i) == {"addresses": [], "hostname": ""}
    wrongs: list[dict[str, object]] = [{"addresses": "10.0.0.1"}, {"addresses": [1]}]
    for wrong in wrongs:
        with pytest.raises(ValueError, match="not a list of texts"):
            _answer(wrong).payload_as(where_am_i)
    with pytest.raises(ProbeFailed, match="timeout"):
        _answer(None, ErrorKind.TIMEOUT).payload_as(where_am_i)


def test_a_node_whose_whereami_is_not_addresses_is_its_bad_output() -> None:
    """master_address reads job_node --whereami through its reader: an answer whose
    addresses are no list of texts is the node's bad output (JobFailed naming it), never
    an AttributeError of the controller's."""
    from pytest_cluster.errors import JobFailed
    from pytest_cluster.launchers.base import Launcher

    class Answering(Launcher):
        def run(self, call: ProbeCall, nodes: Sequence[str], timeout_s: float,
                ) -> dict[str, ProbeResult]:
            return {node: ProbeResult(node, call.name, {"addresses": [7]}) for node in nodes}

    launcher = Answering.__new__(Answering)
    with pytest.raises(JobFailed, match="n1: job_node probe bad_output: its addresses"):
        launcher.master_address("n1", 10)
