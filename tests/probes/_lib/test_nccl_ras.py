"""The RAS client against a fake RAS service that speaks NCCL's protocol (tests/fake_ras.py):
the handshake and commands it sends, the JSON and text reports read into dead, missing
and mismatched ranks, and every hostile or absent answer said as a reason, never
raised."""

from __future__ import annotations

import json
import socket

import pytest

from pytest_cluster.probes._lib import nccl_ras
from pytest_cluster.sim.nccl_ras import status_json
from tests.fake_ras import TEXT_DEAD, FakeRas

NODES = ("gpu-001", "gpu-002", "gpu-003", "gpu-004")


def mismatch_json() -> str:
    """Two ranks of a 2-rank communicator, one an AllGather behind (the documented JSON
    shape, our numbers)."""
    def rank(number: int, gathers: int) -> dict[str, object]:
        return {"rank": number, "host": "10.0.0.1", "pid": 100 + number, "cuda_dev": number,
                "nvml_dev": number, "status": {"init_state": 0, "async_error": 0},
                "collective_counts": {"AllGather": gathers, "AllReduce": 7}}
    return json.dumps({"nccl_version": "2.29.1", "communicators": [
        {"hash": "0x1", "size": 2, "ranks": [rank(0, 12), rank(1, 11)],
         "missing_ranks": []}]})


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_json_status_names_the_dead_ranks_after_the_protocols_handshake() -> None:
    with FakeRas(status_json(NODES, 8, {17}, "all_gather", 40)) as ras:
        report = nccl_ras.status(ras.addr, timeout_s=5)
    assert ras.commands == ["CLIENT PROTOCOL 2", "TIMEOUT 2", "SET FORMAT json",
                            "VERBOSE STATUS"]
    assert report["available"] and report["format"] == "json"
    assert [(r["rank"], r["host"], r["gpu"], r["size"]) for r in report["dead"]] == [
        (17, "gpu-003", "1", 32)]
    assert report["missing"] == [] and report["mismatched"] == []


def test_the_address_comes_from_NCCL_RAS_ADDR(monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeRas(status_json(NODES, 8, {3}, "all_reduce", 1)) as ras:
        monkeypatch.setenv("NCCL_RAS_ADDR", ras.addr)
        report = nccl_ras.hang_status("nccl", timeout_s=5)
    assert [r["rank"] for r in report["dead"]] == [3] and report["addr"] == ras.addr


def test_json_counts_that_differ_are_a_mismatch() -> None:
    with FakeRas(mismatch_json()) as ras:
        report = nccl_ras.status(ras.addr, timeout_s=5)
    assert report["mismatched"] == [{"collective": "AllGather", "size": 2, "groups": [
        {"count": 11, "ranks_count": 1, "ranks": [1]},
        {"count": 12, "ranks_count": 1, "ranks": [0]}]}]


def test_a_server_without_json_is_read_in_text() -> None:
    """NCCL before 2.28.7 answers SET FORMAT with an error: the text report is read; the
    rank of a dead process is dead, the other missing one missing, the AllGather behind
    named with its count."""
    with FakeRas(knows_json=False) as ras:
        report = nccl_ras.status(ras.addr, timeout_s=5)
    assert report["format"] == "text" and report["nccl"] == "2.26.2+cuda12.4"
    assert [(r["rank"], r["host"], r["pid"]) for r in report["dead"]] == [
        (17, "172.16.64.213", 3487984)]
    assert [r["rank"] for r in report["missing"]] == [18]
    assert report["dead_processes"] == [{"host": "172.16.64.213", "pid": 3487984,
                                         "gpus": "1"}]
    assert report["mismatched"] == [{"collective": "AllGather", "size": None, "groups": [
        {"count": 6650, "ranks_count": 29, "ranks": []},
        {"count": 6649, "ranks_count": 1, "ranks": [18]}]}]


def test_the_older_missing_rank_line_is_read() -> None:
    text = "Errors\n======\n\n#0-0 (cf264af53edbe986) INCOMPLETE\n  Missing communicator " \
           "data from 1 rank\n  The missing rank: 21\n"
    assert [r["rank"] for r in nccl_ras.parse_text(text)["missing"]] == [21]


@pytest.mark.parametrize(("server", "said"), [
    (dict(hello="HTTP/1.1 400 Bad Request"), "not NCCL's RAS"),
    (dict(silent=True), "no answer within"),
    (dict(json_text='{"communicators": [{"size": NaN, "ranks": []}]}'), "does not parse"),
    (dict(json_text='{"communicators": 3}'), "no list of communicators"),
    (dict(json_text='{"communicators": [{"ranks": [{"rank": "x"}]}]}'), "no rank number"),
    (dict(json_text='{"communicators": [' * 5000), "does not parse"),
    (dict(json_text=" \n"), "without a status"),
    (dict(json_text="{}", extra=b"x" * (nccl_ras.MAX_BYTES + 10)), "over"),
])
def test_a_hostile_answer_is_a_reason_never_a_traceback(server: dict[str, object],
                                                         said: str) -> None:
    with FakeRas(**server) as ras:  # type: ignore[arg-type]
        report = nccl_ras.status(ras.addr, timeout_s=1)
    assert report["available"] is False and said in report["reason"], report


def test_nothing_listening_says_why_rAS_is_not_available() -> None:
    report = nccl_ras.status(f"127.0.0.1:{free_port()}", timeout_s=1)
    assert report["available"] is False
    assert "nothing answers at 127.0.0.1:" in report["reason"]
    assert "NCCL older than 2.24" in report["reason"]


def test_disabled_by_NCCL_RAS_ENABLE_and_gloo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NCCL_RAS_ENABLE", "0")
    assert "NCCL_RAS_ENABLE=0" in nccl_ras.status(timeout_s=1)["reason"]
    assert nccl_ras.hang_status("gloo") == {"available": False,
                                            "reason": "the job ran over gloo, not NCCL"}


@pytest.mark.parametrize(("value", "expected"), [
    ("localhost:28028", ("localhost", 28028)), ("[::1]:12345", ("::1", 12345)),
    ("10.0.0.1:1", ("10.0.0.1", 1))])
def test_addresses_as_NCCL_takes_them(value: str, expected: tuple[str, int]) -> None:
    assert nccl_ras.address(value) == expected


@pytest.mark.parametrize("value", ["localhost", "host:99999", "a b:1", ":12"])
def test_an_address_that_is_not_one_is_a_reason(value: str) -> None:
    report = nccl_ras.status(value, timeout_s=1)
    assert report["available"] is False and "NCCL_RAS_ADDR" in report["reason"]


def test_the_text_of_a_huge_job_is_kept_bounded() -> None:
    lines = "\n".join(f"  Process {p} on node 10.0.0.{p % 250} managing GPU 0"
                      for p in range(500))
    report = nccl_ras.parse_text(f"DEAD\n{lines}\n")
    assert len(report["dead_processes"]) == nccl_ras.MAX_KEPT and report["truncated"]


def test_the_fake_text_is_the_shape_the_reader_knows() -> None:
    """The fixture's every rank line is one the reader takes (no silent drift)."""
    ranks = [line for line in TEXT_DEAD.splitlines() if line.strip().startswith("Rank ")]
    assert ranks and all(nccl_ras._RANK.match(line.strip()) for line in ranks)
