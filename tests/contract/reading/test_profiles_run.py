"""A run of a spec that extends a profile, on the simulator: every view says where each
bound the profile supplied came from, and a bound the spec wrote says nothing."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pytest_cluster.contract.reading import profiles
from pytest_cluster.evidence.record.lines import ResultLine
from tests.oracle import disagreements, read_views

SPEC = """\
extends: h100-sxm-8x400g-ib
cluster:
  name: t
  nodes: gpu-[001-002]
  launcher: sim
gpus:
  p2p: ">= 300 GB/s"
interconnect:
  busbw: {inter_node: ">= 300 GB/s"}
sim:
  gpu_model: H100-SXM-80GB
  gpus_per_node: 8
"""


@pytest.mark.slow
def test_a_run_shows_each_bound_from_its_profile_in_every_view(
        pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", trial=SPEC)
    result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider",
                                "--cluster-reports=reports")
    run = (pytester.path / "reports" / "latest").resolve()
    views = read_views(run, result.stdout.str())
    assert disagreements(views) == []
    profile = profiles.load("h100-sxm-8x400g-ib")
    lines = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    assert lines[0]["extends"] == "h100-sxm-8x400g-ib"
    # verdict.json and the report's header name the profile too (the oracle: the same one)
    assert views.verdict["extends"] == views.extends == "h100-sxm-8x400g-ib"
    assert 'extends profile <span class="extends">h100-sxm-8x400g-ib</span>' in views.report
    said = {r["spec_key"]: r.get("bound_source") for r in views.results if "requirement" in r}
    assert said["gpus.p2p"] is None  # the spec's own bound
    assert said["gpus.h2d"] == f"profile h100-sxm-8x400g-ib: {profile.citation('gpus.h2d')}"
    # the simulator's NVLink ring reaches ~370 GB/s: the profile's 460 fails, saying whence
    busbw = next(r for r in views.results
                 if r["spec_key"] == "interconnect.busbw[intra_node]" and r["node"] == "gpu-001")
    source = f"profile h100-sxm-8x400g-ib: {profile.citation('interconnect.busbw.intra_node')}"
    assert busbw["outcome"] == "failed" and busbw["bound_source"] == source
    assert busbw["message"].endswith(f"; 460 GB/s from {source}")
    assert views.sources["interconnect.busbw[intra_node]"] == source
    # the profile's busbw is one node's figure: across nodes the spec's own bound judges
    across = [r for r in views.results if r["spec_key"] in (
        "interconnect.busbw[inter_node]", "interconnect.busbw[node_network]")]
    assert across and {(r.get("bound_source"), r["required"], r["outcome"])
                        for r in across} == {(None, 300.0, "passed")}
    assert "interconnect.busbw[inter_node]" not in views.sources
    assert "gpus.p2p" not in views.sources and "gpus.p2p" in views.clauses
    # the oracle names a view that names another profile, or none
    views.verdict["extends"] = "a100-sxm-8x200g-ib"
    assert disagreements(views) == [
        "verdict.json: extends 'a100-sxm-8x200g-ib', results.jsonl 'h100-sxm-8x400g-ib'"]
    del views.verdict["extends"]
    # the oracle names a clause table that shows another source
    views.sources["gpus.h2d"] = "profile elsewhere"
    assert any("gpus.h2d's bound from 'profile elsewhere'" in d for d in disagreements(views))


ONE_NODE = """\
extends: {profile}
cluster: {{name: t, nodes: gpu-001, launcher: sim}}
interconnect: {{busbw: {{intra_node: ">= 300 GB/s"}}}}
sim: {{gpu_model: {model}{sim}}}
"""


def _run(pytester: pytest.Pytester, profile: str, model: str, sim: str = ""
         ) -> tuple[dict[str, Any], list[ResultLine], str]:
    pytester.makefile(".yaml", trial=ONE_NODE.format(profile=profile, model=model, sim=sim))
    result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider",
                                "--cluster-reports=reports")
    run = (pytester.path / "reports" / "latest").resolve()
    views = read_views(run, result.stdout.str())
    assert disagreements(views) == []
    return json.loads((run / "verdict.json").read_text()), views.results, views.terminal


@pytest.mark.parametrize(("profile", "model"), [("h200-sxm-8x400g-ib", "H100-SXM-80GB"),
                                                ("azure-nd-h200-v5", "H100-SXM-80GB"),
                                                ("h100-sxm-8x400g-ib", "A100-SXM4-80GB")])
def test_a_profile_promises_its_gpu_model_and_another_part_is_rejected_for_it(
        pytester: pytest.Pytester, profile: str, model: str) -> None:
    verdict, results, _ = _run(pytester, profile, model, ", nic_prefix: mlx5_ib"
                            if profile.startswith("azure") else "")
    cited = f"profile {profile}: {profiles.load(profile).citation('gpus.model')}"
    said = [r for r in results if r["spec_key"] == "gpus.model"]
    assert said and {(r["outcome"], r.get("bound_source")) for r in said} == {
        ("failed", cited)}
    (node,) = verdict["nodes"]
    assert (node["verdict"], node["code"]) == ("REJECTED", "PC-GPU-MODEL")
    assert "another GPU model than ordered" in node["action"]


def test_an_azure_profile_runs_on_the_sim_naming_its_devices_as_azure_does(
        pytester: pytest.Pytester) -> None:
    verdict, results, terminal = _run(pytester, "azure-nd-h100-v5", "H100-SXM-80GB",
                            ", nic_prefix: mlx5_ib")
    (node,) = verdict["nodes"]
    assert node["verdict"] == "ACCEPTED", node
    ports = [r for r in results if str(r["spec_key"]).startswith("fabric.")]
    assert ports and all(r["outcome"] == "passed" for r in ports)
    assert [r["measured"] for r in results if r["spec_key"] == "fabric.ports"] == [8]
    # its deliberate fabric.pcie: false is said as off, never as not in the contract
    assert "fabric.pcie (off: pcie: false in profile azure-nd-h100-v5)" in terminal
    probes = (pytester.path / "reports" / "latest" / "probes").rglob("*")
    assert any("mlx5_ib7" in p.read_text() for p in probes if p.is_file())
