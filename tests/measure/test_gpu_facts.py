"""measure/gpu_facts.py: reading the GPU probes' payloads - a GPU's NVML entry, its torch
entry joined by UUID, its XID events, its GPU-to-GPU copies - when the node's answer is
the other party's: an entry that misses a field or gives a text where a number goes is
no GPU's, no event of this GPU's and no copy of its, never another GPU's reading."""

from __future__ import annotations

import pytest

from pytest_cluster.measure import gpu_facts
from pytest_cluster.measure.gpu_facts import (
    CRITICAL_XIDS,
    Xid,
    bare_uuid,
    nvml_gpu,
    p2p_for,
    perf_gpu,
    xids_for,
)

NVML = {"gpus": [{"index": 0, "uuid": "GPU-AAA", "pci_bus_id": "00000000:18:00.0"},
                 {"index": 1, "uuid": "GPU-bbb", "pci_bus_id": "00000000:2A:00.0"}],
        "xid": {"events": [{"gpu": 1, "xid": 79}, {"gpu": 0, "xid": 31}], "window_s": 2,
                "kernel_log": {"events": [{"pci": "0000:2a:00", "xid": 48}],
                               "source": "dmesg (since boot)"}}}


def test_reading_payloads() -> None:
    first = nvml_gpu(NVML, 1)
    assert first is not None
    assert nvml_gpu(NVML, 2) is None
    found, unreadable = xids_for(NVML, first)
    assert [(x.xid, x.source, x.critical) for x in found] == [
        (79, "NVML events (2 s)", True), (48, "dmesg (since boot)", True)]
    assert unreadable == []
    zero = nvml_gpu(NVML, 0)
    assert zero is not None
    assert [x.critical for x in xids_for(NVML, zero)[0]] == [False]
    # torch lists GPUs in another order (CUDA_VISIBLE_DEVICES): joined by UUID
    perf = {"gpus": [{"index": 0, "uuid": "bbb"}, {"index": 1, "uuid": "aaa"}]}
    assert perf_gpu(perf, first, 1) == {"index": 0, "uuid": "bbb"}
    assert perf_gpu({"gpus": [{"index": 1}]}, first, 1) == {"index": 1}
    pairs = {"p2p": {"pairs": [{"src": 0, "dst": 1, "bytes_per_s": 100.0},
                               {"src": 1, "dst": 0, "bytes_per_s": 300.0},
                               {"src": 0, "dst": 2, "bytes_per_s": 400.0},
                               {"src": 1, "dst": 2, "bytes_per_s": 50.0}]}}
    copies = p2p_for(pairs, 0)
    assert copies is not None
    assert (copies.median_bytes_per_s, copies.slowest_peer, copies.pairs) == (300.0, 1, 3)
    assert p2p_for(pairs, 5) is None


def test_unreadable_xid_sources_are_named() -> None:
    payload = {"xid": {"error": "cannot listen for XID events: Not Supported",
                       "kernel_log": {"error": "cannot read the kernel log: denied"}}}
    found, unreadable = xids_for(payload, {"index": 0, "pci_bus_id": "0:1:0.0"})
    assert found == []
    assert unreadable == ["NVML events: cannot listen for XID events: Not Supported",
                          "kernel log: cannot read the kernel log: denied"]


def test_an_xid_nvml_cannot_place_counts_against_every_gpu() -> None:
    payload = {"xid": {"events": [{"gpu": None, "xid": 79}], "window_s": 2}}
    for index in (0, 1):
        found, _ = xids_for(payload, {"index": index, "pci_bus_id": "0:1:0.0"})
        assert [(x.xid, x.source) for x in found] == [
            (79, "NVML events (2 s, GPU not identified)")]


@pytest.mark.parametrize("gpus", [{"0": {"index": 0}}, ["gpu0", 7], [{"index": True}]])
def test_a_gpu_list_that_is_no_list_of_entries_names_no_gpu(gpus: object) -> None:
    """A probe's `gpus` given as a map, entries that are no records, or an index of true
    (== 1 in Python): a traceback (AttributeError) or GPU 1's entry; now no GPU's, and
    its tests say the node has no such GPU."""
    assert gpu_facts.nvml_gpu({"gpus": gpus}, 1) is None
    assert gpu_facts.perf_gpu({"gpus": gpus}, None, 1) is None


def test_an_entry_without_an_integer_index_is_no_gpus() -> None:
    """An index missing, a text, a float or true: skipped, and the GPU's own entry after
    them is the one found."""
    mine = {"index": 1, "uuid": "GPU-A"}
    entries = [{"uuid": "GPU-X"}, {"index": "1"}, {"index": 1.0}, {"index": True}, mine]
    assert nvml_gpu({"gpus": entries}, 1) == mine
    assert nvml_gpu({"gpus": entries[:-1]}, 1) is None
    assert nvml_gpu({"gpus": "GPU 1"}, 1) is None and nvml_gpu({}, 1) is None


def test_a_torch_entry_is_joined_by_uuid_and_never_by_index_past_another_uuid() -> None:
    """torch's entry of another UUID at this GPU's index is another GPU (a reordered
    CUDA_VISIBLE_DEVICES), whatever its index; one without a UUID (or beside an NVML
    entry without one) is joined by index; a UUID given as a number matches no UUID."""
    nvml = {"index": 1, "uuid": "GPU-Aa"}
    assert perf_gpu({"gpus": [{"index": 1, "uuid": "zz"}]}, nvml, 1) is None
    assert perf_gpu({"gpus": [{"index": 1, "uuid": "zz"}, {"index": 0, "uuid": "aA"}]},
                    nvml, 1) == {"index": 0, "uuid": "aA"}
    assert perf_gpu({"gpus": [{"index": 1, "uuid": 7}]}, nvml, 1) is None
    assert perf_gpu({"gpus": [{"index": "1"}, {"index": 1}]}, nvml, 1) == {"index": 1}
    # NVML named no UUID: the perf probe's entry at this index is this GPU's
    assert perf_gpu({"gpus": [{"index": 1, "uuid": "zz"}]}, None, 1) == {"index": 1, "uuid": "zz"}


def test_uuids_compare_without_nvmls_prefix_and_case() -> None:
    assert bare_uuid("GPU-1A2B") == bare_uuid("1a2b") == "1a2b"
    assert bare_uuid(None) == bare_uuid("") == ""


@pytest.mark.parametrize("event", [{"gpu": "0", "xid": 79}, {"gpu": 1, "xid": 79},
                                   {"gpu": [0], "xid": 79}])
def test_an_xid_event_of_another_or_no_readable_gpu_is_not_this_ones(
        event: dict[str, object]) -> None:
    """An event's GPU given as a text or a list is not GPU 0 (nor 'not identified': only
    NVML's null says that)."""
    payload = {"xid": {"events": [event], "window_s": 2}}
    assert xids_for(payload, {"index": 0, "pci_bus_id": "0:1:0.0"}) == ([], [])


def test_a_kernel_log_event_is_this_gpus_by_its_bus_alone() -> None:
    """The kernel log names a GPU by its PCI bus, in its own spelling; an event without
    one, or with another bus, is not this GPU's."""
    log = {"events": [{"pci": "0000:2a:00", "xid": 48}, {"xid": 79}, {"pci": "0:2b:00", "xid": 13}],
           "source": "dmesg"}
    found, unreadable = xids_for({"xid": {"kernel_log": log}},
                                 {"index": 1, "pci_bus_id": "00000000:2A:00.0"})
    assert found == [Xid(48, "dmesg")] and unreadable == []


@pytest.mark.parametrize("xid", ["broken", ["events"], {"kernel_log": "dmesg"},
                                 {"kernel_log": {"events": []}}])
def test_an_xid_section_that_is_no_section_finds_nothing(xid: object) -> None:
    assert xids_for({"xid": xid}, {"index": 0, "pci_bus_id": "0:1:0.0"}) == ([], [])


@pytest.mark.parametrize("event", [{"gpu": 0}, {"gpu": 0, "xid": "lots"}])
def test_an_xid_event_without_a_number_is_no_reading(event: dict[str, object]) -> None:
    """An event of this GPU whose XID is missing or no number: raised (KeyError,
    ValueError), never an XID of its own making."""
    with pytest.raises((KeyError, ValueError)):
        xids_for({"xid": {"events": [event]}}, {"index": 0, "pci_bus_id": "0:1:0.0"})


def test_a_copy_is_gpu_indexs_only_where_it_names_the_index_as_a_number() -> None:
    pairs = {"p2p": {"pairs": [{"src": "0", "dst": 1, "bytes_per_s": 100.0},
                               {"src": 2, "dst": 1, "bytes_per_s": 200.0}]}}
    assert p2p_for(pairs, 0) is None
    copies = p2p_for(pairs, 1)
    assert copies is not None and (copies.pairs, copies.slowest_peer) == (2, 0)
    assert p2p_for({"p2p": "none"}, 0) is None and p2p_for({}, 0) is None


@pytest.mark.parametrize("pair", [{"src": 0, "dst": 1},
                                  {"src": 0, "dst": 1, "bytes_per_s": "fast"},
                                  {"dst": 0, "bytes_per_s": 1.0}])
def test_a_copy_without_its_rate_or_partner_is_no_reading(pair: dict[str, object]) -> None:
    """A pair of this GPU's whose rate is missing or no number, or whose other end is
    missing: raised (KeyError, ValueError), never a median of its own making."""
    with pytest.raises((KeyError, ValueError)):
        p2p_for({"p2p": {"pairs": [pair]}}, 0)


def test_an_xid_is_critical_as_the_health_checks_list_says() -> None:
    assert all(Xid(xid, "s").critical for xid in CRITICAL_XIDS)
    assert not any(Xid(xid, "s").critical for xid in range(200) if xid not in CRITICAL_XIDS)


def test_a_size_is_said_in_gib() -> None:
    assert gpu_facts.gib(80 * 2**30) == "80.0 GiB"
    assert gpu_facts.gib(1.5 * 2**30) == "1.5 GiB"
