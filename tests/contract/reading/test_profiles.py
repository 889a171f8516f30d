"""Shipped profiles (`extends: NAME`): each loads and cites every value it supplies, the
spec's values override them key by key with their own lines, an unknown name is a usage
error at the `extends` line, and docs/spec.md lists exactly the shipped files."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from yaml.nodes import MappingNode

from pytest_cluster.cli import CHECK_INVALID, main
from pytest_cluster.contract import parse_spec
from pytest_cluster.contract.model import Clause, Rule, Spec
from pytest_cluster.contract.reading import profiles
from pytest_cluster.contract.reading.compose import compose
from pytest_cluster.errors import SpecError

ROOT = Path(__file__).resolve().parents[3]
CLUSTER = """\
cluster:
  name: t
  nodes: gpu-001
  launcher: sim
sim:
  gpu_model: H100-SXM-80GB
  gpus_per_node: 8
"""


def _promises(spec: Spec) -> list[Clause | Rule]:
    found: list[Clause | Rule] = []
    for name in profiles.SECTIONS:
        record = spec.section(name)
        found += list(getattr(record, "clauses", ()))
        found += list(getattr(record, "busbw", ()))
    return found


def _family(key: str) -> str:
    """A clause's path in the spec: its instance in brackets is a key of its map
    ('interconnect.busbw[intra_node]' is written at interconnect.busbw.intra_node)."""
    return re.sub(r"\[([^]]*)\]", r".\1", key)


@pytest.mark.parametrize("name", profiles.names())
def test_every_shipped_profile_loads_and_cites_each_value_it_supplies(name: str) -> None:
    profile = profiles.load(name)
    supplied = dict(profiles.leaves(profile.root))
    assert supplied and profile.about
    for path in supplied:
        citation = profile.citation(path)
        assert citation is not None, f"{name}: {path} cites no source"
        assert citation.url.startswith("https://") and citation.says
    for path, _ in profile.sources:  # no citation of a value the profile does not hold
        assert any(key == path or key.startswith(f"{path}.") for key in supplied), path
    spec = parse_spec(f"extends: {name}\n{CLUSTER}", "t.yaml")
    assert spec.extends == name and not spec.warnings
    from_profile = [p for p in _promises(spec) if _family(p.key) in supplied]
    assert {_family(p.key) for p in from_profile} == {
        key for key in supplied if key in {_family(p.key) for p in _promises(spec)}}
    for promise in from_profile:  # each bound says its profile's citation, at no spec line
        assert promise.source == f"profile {name}: {profile.citation(_family(promise.key))}"
        assert promise.line == 0


def test_the_spec_overrides_a_profile_key_by_key_and_keeps_its_lines() -> None:
    spec = parse_spec("extends: azure-nd-h100-v5\n" + CLUSTER + "gpus:\n"
                      "  p2p: \">= 300 GB/s\"\ninterconnect:\n  payloads: [4 GiB]\n", "t.yaml")
    assert spec.gpus is not None and spec.interconnect is not None
    p2p, h2d = spec.gpus.clause("p2p"), spec.gpus.clause("h2d")
    assert p2p is not None and h2d is not None
    assert (p2p.requirement.text, p2p.line, p2p.source) == (">= 300 GB/s", 10, "")
    assert h2d.requirement.text == ">= 48 GB/s" and h2d.line == 0
    assert h2d.source.startswith("profile azure-nd-h100-v5: https://github.com/Azure/")
    # a map in both is merged: the spec's payloads, the profile's busbw beside them
    assert spec.interconnect.payloads == (4 * 2**30,)
    (busbw,) = spec.interconnect.busbw  # one node: inside it, the profile's figure
    assert (busbw.key, busbw.requirement.text) == ("interconnect.busbw[intra_node]",
                                                   ">= 460 GB/s")
    assert "460" in busbw.source


SEVERAL = CLUSTER.replace("gpu-001", "gpu-[001-004]")


def test_a_spec_of_several_nodes_writes_its_own_busbw_across_nodes() -> None:
    """A profile's busbw is one node's figure (Azure's all_reduce on one node's GPUs): a
    spec whose jobs cross nodes says what they must reach, at the spec's own line."""
    with pytest.raises(SpecError) as caught:
        parse_spec("extends: azure-nd-h100-v5\n" + SEVERAL, "t.yaml")
    said = str(caught.value)
    assert said.startswith("t.yaml:1: interconnect.busbw.inter_node: missing: the busbw "
                           "promised across nodes")
    assert "profile azure-nd-h100-v5 promises busbw inside one node only (one node's " \
           "figure, never the network's)" in said
    assert 'write it under interconnect, e.g. busbw: {inter_node: ">= 320 GB/s"}' in said
    with pytest.raises(SpecError) as caught:  # at the spec's interconnect, where it goes
        parse_spec("extends: azure-nd-h100-v5\n" + SEVERAL + "interconnect:\n"
                   "  payloads: [4 GiB]\n", "t.yaml")
    assert str(caught.value).startswith("t.yaml:10: interconnect.busbw.inter_node: missing: ")
    spec = parse_spec("extends: azure-nd-h100-v5\n" + SEVERAL + "interconnect:\n"
                      "  busbw: {inter_node: \">= 300 GB/s\"}\n", "t.yaml")
    assert spec.interconnect is not None
    profile = profiles.load("azure-nd-h100-v5")
    cited = f"profile azure-nd-h100-v5: {profile.citation('interconnect.busbw.intra_node')}"
    assert [(c.key, c.requirement.text, c.line, c.source) for c in spec.interconnect.busbw] == [
        ("interconnect.busbw[intra_node]", ">= 460 GB/s", 0, cited),
        ("interconnect.busbw[inter_node]", ">= 300 GB/s", 10, ""),
        ("interconnect.busbw[node_network]", ">= 300 GB/s", 10, "")]


@pytest.mark.parametrize("name", profiles.names())
def test_a_profile_alone_serves_a_spec_with_no_job_across_nodes(name: str) -> None:
    """One node, or several with no node count to test and no slow-node search: every
    busbw case is inside one node, the profile's own figure."""
    for text in (CLUSTER, SEVERAL + "interconnect:\n  node_counts: [8]\n"
                 "  node_network: false\n"):
        spec = parse_spec(f"extends: {name}\n{text}", "t.yaml")
        assert spec.interconnect is not None and spec.interconnect.node_counts == ()
        assert [c.key for c in spec.interconnect.busbw] == ["interconnect.busbw[intra_node]"]


def test_an_error_in_a_value_the_spec_wrote_keeps_its_file_and_line() -> None:
    with pytest.raises(SpecError) as caught:
        parse_spec("extends: h100-sxm-8x400g-ib\n" + CLUSTER + "gpus:\n  h2d: fast\n",
                   "t.yaml")
    assert str(caught.value).startswith("t.yaml:10: gpus.h2d: ")


def test_the_spec_merge_keys_stay_its_own() -> None:
    spec = parse_spec("extends: h100-sxm-8x400g-ib\n" + CLUSTER
                      + "gpus:\n  <<: {p2p: \">= 100 GB/s\"}\n", "t.yaml")
    assert spec.gpus is not None
    p2p = spec.gpus.clause("p2p")
    assert p2p is not None and p2p.requirement.text == ">= 100 GB/s" and not p2p.source


@pytest.mark.parametrize("written", ["azure-nd-h100v5", "./mine.yaml", "/etc/passwd"])
def test_an_unknown_profile_is_an_error_at_the_extends_line_naming_the_known_ones(
        written: str) -> None:
    with pytest.raises(SpecError) as caught:
        parse_spec(CLUSTER + f"extends: {written}\n", "t.yaml")
    said = str(caught.value)
    assert said.startswith("t.yaml:8: extends: ")
    assert "never a file: " + ", ".join(profiles.names()) in said
    if written == "azure-nd-h100v5":
        assert "unknown profile 'azure-nd-h100v5'; did you mean 'azure-nd-h100-v5'?" in said


@pytest.mark.parametrize(("written", "got"), [("[a, b]", "a list"), ("{a: 1}", "a map"),
                                             ("null", "nothing"), ("", "nothing")])
def test_extends_takes_a_single_profile_name(written: str, got: str) -> None:
    with pytest.raises(SpecError) as caught:
        parse_spec(CLUSTER + f"extends: {written}\n", "t.yaml")
    assert str(caught.value) == (
        f"t.yaml:8: extends: expected a single profile name (a spec extends one profile: "
        f"{', '.join(profiles.names())}), got {got}")


def test_check_refuses_an_unknown_profile_and_names_a_valid_one(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "trial.yaml"
    spec.write_text("extends: h100-sxm-8x400g\n" + CLUSTER)
    assert main(["check", str(spec)]) == CHECK_INVALID == 4
    assert f"{spec}:1: extends: unknown profile" in capsys.readouterr().out
    spec.write_text("extends: h100-sxm-8x400g-ib\n" + CLUSTER)
    assert main(["check", str(spec)]) == 0
    assert capsys.readouterr().out.rstrip().endswith("extends profile h100-sxm-8x400g-ib)")


def test_pytest_refuses_an_unknown_profile_as_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", trial="extends: nope\n" + CLUSTER)
    result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "trial.yaml:1: extends: unknown profile 'nope'" in result.stderr.str()


def test_a_bad_profile_is_refused_naming_its_own_file(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(profiles, "folder", lambda: tmp_path)
    (tmp_path / "bad-cited.yaml").write_text("sources:\n  gpus.h2d: {url: http://x}\n")
    (tmp_path / "bad-section.yaml").write_text("cluster: {name: x}\n")
    (tmp_path / "bad-value.yaml").write_text("about: x\ngpus:\n  h2d: fast\n")
    for name in ("bad-cited", "bad-section"):
        with pytest.raises(SpecError, match=re.escape(str(tmp_path / f"{name}.yaml"))):
            profiles.load(name)
    with pytest.raises(SpecError) as caught:  # a value is validated as the spec's
        parse_spec("extends: bad-value\n" + CLUSTER, "t.yaml")
    assert f"{tmp_path / 'bad-value.yaml'}:3: gpus.h2d: " in str(caught.value)


def test_merged_merges_maps_and_lets_anything_else_of_the_spec_replace() -> None:
    base = compose("a: {x: 1, y: [1, 2]}\nb: 2\n", "p.yaml")
    own = compose("a: {y: [3]}\nc: 3\n", "s.yaml")
    assert isinstance(base, MappingNode) and isinstance(own, MappingNode)
    assert profiles.leaves(profiles.merged(base, own)) == [
        ("a.y", "[3]"), ("a.x", "1"), ("c", "3"), ("b", "2")]


def test_the_docs_list_every_shipped_profile() -> None:
    text = (ROOT / "docs" / "spec.md").read_text(encoding="utf-8")
    region = text.split("<!-- generated: profiles -->", 1)[1].split("<!-- end generated", 1)[0]
    listed = re.findall(r"^- `([^`]+)`:", region, re.M)
    assert listed == list(profiles.names()) == sorted(
        p.stem for p in (ROOT / "pytest_cluster" / "contract" / "profiles").glob("*.yaml"))
