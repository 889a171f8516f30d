"""contract/sections/host.py: the `host:` section, its clauses and the software versions
promised."""

from __future__ import annotations

from pytest_cluster.contract.clauses import SOFTWARE
from pytest_cluster.contract.model import HostSpec
from pytest_cluster.contract.reading.compose import compose
from pytest_cluster.contract.reading.located_errors import Ctx
from pytest_cluster.contract.sections.host import parse_host
from pytest_cluster.contract.sections.host_records import Golden


def parsed(text: str | None) -> tuple[HostSpec, list[str]]:
    ctx = Ctx("t.yaml")
    host = parse_host(ctx, None if text is None else compose(text, "t.yaml"))
    return host, [str(error) for error in ctx.errors]


def test_a_spec_without_host_promises_nothing_but_the_same_software() -> None:
    assert parsed(None) == (HostSpec(), [])
    assert HostSpec().same_software and HostSpec().clauses == ()


def test_each_version_is_read_as_written_and_named_by_its_package() -> None:
    host, errors = parsed("{cpu_cores: 8,\n software: {torch: 2.10, cuda: '>= 12.4'},\n"
                          " same_software: false}")
    assert errors == []
    assert [(v.key, v.line, v.name, v.requirement.text) for v in host.software] == [
        ("host.software.torch", 2, "torch", ">= 2.10"),  # 2.10, never the float 2.1
        ("host.software.cuda", 2, "cuda", ">= 12.4")]
    assert host.software[0].requirement.version == (2, 10)
    assert not host.same_software
    cores = host.clause("cpu_cores")
    assert cores is not None and cores.requirement.text == ">= 8"


def test_the_versions_keep_the_declared_order_not_the_written_one() -> None:
    host, _ = parsed("{software: {" + ", ".join(f"{name}: 1" for name in reversed(SOFTWARE))
                     + "}}")
    assert tuple(v.name for v in host.software) == SOFTWARE


def test_an_unknown_package_is_named_with_the_closest_known() -> None:
    host, errors = parsed("{software: {torhc: 1}}")
    assert host.software == ()
    assert errors == [f"t.yaml:1: host.software.torhc: unknown key; did you mean 'torch'? "
                      f"(known keys: {', '.join(SOFTWARE)})"]


NODES = ("gpu-001", "gpu-002", "gpu-003")


def golden(text: str) -> tuple[HostSpec, list[str]]:
    ctx = Ctx("t.yaml")
    host = parse_host(ctx, compose(text, "t.yaml"), NODES)
    return host, [str(error) for error in ctx.errors]


def test_golden_is_the_majority_a_node_of_the_cluster_or_a_file_and_a_rule_at_its_line() -> None:
    for written, chosen in (("majority", Golden()), ("true", Golden()),
                            ("GPU-002", Golden(node="gpu-002")),
                            ("golden/h100.yaml", Golden(file="golden/h100.yaml")),
                            ("runs/inventory.json", Golden(file="runs/inventory.json"))):
        host, errors = golden(f"{{cpu_cores: 8,\n golden: {written}}}")
        assert (host.golden, errors) == (chosen, [])
        rule = host.rule("golden")
        assert rule is not None and (rule.key, rule.line) == ("host.golden", 2)
        assert rule.text.endswith(f"({chosen.said})")
    assert golden("{cpu_cores: 8}")[0].golden is None


def test_a_golden_node_not_in_the_cluster_is_an_error_at_its_line() -> None:
    host, errors = golden("{cpu_cores: 8,\n golden: gpu-009}")
    assert host.golden is None and host.rule("golden") is None
    assert errors == ["t.yaml:2: host.golden: expected majority (the nodes' strict "
                      "majority), a node of the cluster (gpu-[001-003]) or a file of golden "
                      "values (an inventory.json a run wrote, or a .yaml), got 'gpu-009'"]


def test_a_golden_file_named_with_control_characters_is_an_error_at_its_line() -> None:
    """A name shown in every view: an ESC, a NUL or a bidi override in it is refused at
    spec time, echoed escaped (a new user's h.yaml)."""
    for written in ('"n1\\u202e\\e[2J.yaml"', '"gold\\x00en.yaml"'):
        host, errors = golden(f"{{cpu_cores: 8,\n golden: {written}}}")
        assert host.golden is None and len(errors) == 1
        assert errors[0].startswith("t.yaml:2: host.golden: a golden file's name may not "
                                    "hold control characters")
        assert errors[0].isprintable()


def test_golden_says_only_the_fields_it_compares() -> None:
    """Without a gpus section no GPU field is read, without fabric no NIC port's: the
    requirement names neither (it claimed VBIOS, firmware and PCIe links on any spec)."""
    def text(sections: frozenset[str]) -> str:
        ctx = Ctx("t.yaml")
        host = parse_host(ctx, compose("{golden: majority}", "t.yaml"), NODES, sections)
        rule = host.rule("golden")
        assert rule is not None and not ctx.errors
        return rule.text
    bare = text(frozenset({"host"}))
    assert "driver" in bare and not {"VBIOS", "GPU", "firmware", "PCIe"} & set(
        bare.replace("'", " ").split())
    gpus = text(frozenset({"host", "gpus"}))
    assert "VBIOS" in gpus and "NIC" not in gpus
    both = text(frozenset({"host", "gpus", "fabric"}))
    assert "VBIOS" in both and "NIC ports' firmware" in both
