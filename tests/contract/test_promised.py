"""contract/promised.py: whether the contract promises what one test case checks, and under
which name."""

from __future__ import annotations

from pytest_cluster.contract import parse_spec
from pytest_cluster.contract.clauses import CLAUSES
from pytest_cluster.contract.promised import (
    ACROSS,
    OFF,
    TOO_FEW_NODES,
    Promised,
    absent,
    across,
    promised,
)


def test_what_a_case_checks_and_whether_it_is_promised() -> None:
    spec = parse_spec("cluster: {name: x, nodes: a}\nhost: {cpu_cores: 8}\n"
                      "storage:\n  - {path: /d, write: 1 GB/s}\ngpus: {count: 8, pcie: false}\n",
                      "t.yaml")
    fs = spec.storage[0]
    cases = {
        ("host.cpu_cores", None): ("host.cpu_cores", True, ""),
        ("host.memory", None): ("host.memory", False, ""),
        ("storage.write", fs): ("storage[/d].write", True, ""),
        ("storage.read", fs): ("storage[/d].read", False, ""),
        ("gpus.pcie", None): ("gpus.pcie", False, "off: pcie: false"),  # turned off
        ("gpus.uniform", None): ("gpus.uniform", True, ""),
        ("gpus.same_driver", None): ("gpus.same_driver", False, "needs 2+ nodes"),
        ("interconnect.busbw[intra_node]", None): ("interconnect", False, ""),
        ("mine.anything", None): ("mine.anything", True, ""),  # not declared: always
    }
    for (name, filesystem), expected in cases.items():
        found = promised(spec, name, {"filesystem": filesystem} if filesystem else {})
        assert (found.name, found.promised, found.why) == expected, name
    assert promised(spec, "host.same_software", {"package": "torch"}).not_in_contract == (
        "host.same_software (needs 2+ nodes)")
    # the busbw promise is written once (interconnect.busbw); each scope is an instance of it
    # under the name its evidence carries
    two = parse_spec("cluster: {name: x, nodes: 'n[1-2]'}\ninterconnect:\n  busbw: '>= 1 GB/s'\n"
                     "  payloads: [1 MiB]\n  ranks_per_node: 1\n", "t.yaml")
    assert [(p.name, p.promised) for p in (
        promised(two, f"interconnect.busbw[{scope}]", {})
        for scope in ("intra_node", "inter_node", "node_network"))] == [
        ("interconnect.busbw[intra_node]", False), ("interconnect.busbw[inter_node]", True),
        ("interconnect.busbw[node_network]", True)]



def test_what_is_not_in_contract_says_why_only_where_there_is_a_why() -> None:
    assert Promised("gpus", False).not_in_contract == "gpus"
    assert Promised("gpus.same_driver", False, "needs 2+ nodes",
                    TOO_FEW_NODES).not_in_contract == "gpus.same_driver (needs 2+ nodes)"
    assert across(1, 4) == f"{ACROSS}: this run covers 1 of 4 nodes (--cluster-node)"


def test_a_section_left_out_or_an_empty_list_is_absent() -> None:
    spec = parse_spec("cluster: {name: x, nodes: a}\nhost: {cpu_cores: 8}\n", "t.yaml")
    sections = {d.section for d in CLAUSES}
    assert {name for name in sections if not absent(spec, name)} == {
        "host", "baseline", "soak"}  # and those that are their defaults when left out
    assert spec.storage == () and absent(spec, "storage")  # an empty list is absent too


def test_a_version_and_a_dtype_are_named_by_their_member() -> None:
    spec = parse_spec("cluster: {name: x, nodes: a}\nhost: {software: {torch: 2.4}}\n"
                      "gpus: {count: 8, matmul: {bf16: '>= 500 TFLOPS'}}\n", "t.yaml")
    (torch,) = spec.host.software
    assert promised(spec, "host.software", {"software": torch}) == Promised(
        "host.software.torch", True)
    assert promised(spec, "host.software", {}) == Promised("host.software", False)
    assert promised(spec, "gpus.matmul", {"dtype": "bf16"}) == Promised("gpus.matmul.bf16",
                                                                        True)
    assert promised(spec, "gpus.matmul", {"dtype": "fp8"}) == Promised("gpus.matmul.fp8",
                                                                       False)


def test_clause_count_counts_each_clause_the_spec_holds() -> None:
    from pytest_cluster.contract import parse_spec
    from pytest_cluster.contract.promised import clause_count

    base = "cluster:\n  name: x\n  nodes: [n1]\nhost:\n  cpu_cores: 8\n"
    assert clause_count(parse_spec(base, "a.yaml")) == 1
    assert clause_count(parse_spec(base + "  memory: 1 GiB\n", "b.yaml")) == 2


def test_a_rule_turned_off_on_purpose_says_it_is_off_and_where() -> None:
    base = "cluster: {name: t, nodes: n1, launcher: sim}\nsim: {}\n"
    own = parse_spec(base + "fabric: {ports: 8, pcie: false}\n", "t.yaml")
    assert own.off == (("fabric.pcie", "pcie: false"),)
    assert promised(own, "fabric.pcie", {}) == Promised("fabric.pcie", False,
                                                        "off: pcie: false", OFF)
    assert promised(own, "fabric.pcie", {}).not_in_contract == "fabric.pcie (off: pcie: false)"
    azure = parse_spec("extends: azure-nd-h100-v5\n" + base, "t.yaml")
    assert promised(azure, "fabric.pcie", {}).why == \
        "off: pcie: false in profile azure-nd-h100-v5"
    # a rule left on, or a section left out, is not 'off'
    on = parse_spec(base + "fabric: {ports: 8}\n", "t.yaml")
    assert on.off == () and promised(on, "fabric.pcie", {}).promised
    assert promised(parse_spec(base + "gpus: {count: 8}\n", "t.yaml"), "fabric.pcie",
                    {}) == Promised("fabric", False)
