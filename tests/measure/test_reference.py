"""Published reference figures beside measured ones: the packaged table, the lookup by
NVML name and by NIC rate, the words and ratio a case records; they never decide."""

from __future__ import annotations

import json

import pytest

from pytest_cluster.contract.sections.gpu_models import MODELS
from pytest_cluster.measure.reference import (
    GPU_FIGURES,
    for_busbw,
    for_checkpoint,
    for_gpu,
    properties,
)


@pytest.mark.parametrize("model", ["H100-SXM-80GB", "H100-PCIe-80GB", "H200-SXM-141GB",
                                   "B200-SXM-180GB"])
def test_the_table_covers_the_models_the_field_buys(model: str) -> None:
    figures = {r.figure: r for r in GPU_FIGURES[model]}
    assert {"matmul.bf16", "matmul.fp8", "memory_bandwidth"} <= set(figures)
    assert model in MODELS  # found by its NVML name
    for reference in figures.values():
        assert reference.source and reference.what and reference.value > 0
    if MODELS[model].nvlinks:
        assert {"all_reduce.nvls", "all_reduce.ring"} <= set(figures)


def test_a_gpu_figure_is_found_by_its_nvml_name_and_worded_with_its_ratio() -> None:
    (bf16,) = for_gpu("gpus.matmul.bf16", "NVIDIA H100 80GB HBM3")
    assert bf16.text(620e12) == "78 % of the 794.5 TFLOPS measured by mamf-finder on H100 SXM"
    assert bf16.ratio(620e12) == pytest.approx(0.7804, abs=1e-4)
    assert for_gpu("gpus.matmul.bf16", "NVIDIA H100 PCIe")[0].value == 756e12
    assert for_gpu("gpus.matmul.tf32", "NVIDIA H100 80GB HBM3") == ()  # none published
    assert for_gpu("gpus.matmul.bf16", "NVIDIA GeForce RTX 4090") == ()
    assert for_gpu("gpus.matmul.bf16", None) == ()


def test_busbw_figures_by_gpu_model_inside_a_node_and_by_nic_between_nodes() -> None:
    nvls, ring = for_busbw("intra_node", "all_reduce", "nccl", "H200-SXM-141GB", None, 0)
    assert (nvls.value, ring.value) == (475e9, 367e9)
    (ndr,) = for_busbw("inter_node", "all_reduce", "nccl", None, 400e9, 8)
    assert ndr.value == 8 * 47e9 and "8 x NDR" in ndr.what
    (xdr,) = for_busbw("inter_node", "all_reduce", "nccl", None, 800e9, 8)
    assert "derived" in xdr.source
    assert for_busbw("inter_node", "all_reduce", "gloo", None, 400e9, 8) == ()
    assert for_busbw("inter_node", "all_gather", "nccl", None, 400e9, 8) == ()
    assert for_busbw("inter_node", "all_reduce", "nccl", None, 100e9, 1) == ()


def test_a_case_records_every_reference_and_the_first_ratio() -> None:
    found = properties(for_busbw("intra_node", "all_reduce", "nccl", "H100-SXM-80GB", None,
                                 0), 370e9)
    assert found["reference"] == ("77 % of the 480 GB/s busbw with NVLink SHARP on 8 x H100 "
                                  "SXM (nccl-tests); 100 % of the 370 GB/s ring busbw on 8 x "
                                  "H100 SXM (nccl-tests)")
    assert found["reference_ratio"] == pytest.approx(0.7708, abs=1e-4)
    assert "nccl-tests/issues/212" in str(found["reference_source"])
    assert properties((), 1.0) == {}


SPEC = """\
cluster: {name: ref, nodes: "n1", launcher: sim}
gpus:
  count: 8
  matmul: {bf16: ">= 900 TFLOPS", tf32: ">= 100 TFLOPS"}
  h2d: ">= 40 GB/s"
sim:
  gpus_per_node: 8
"""


def test_references_inform_and_the_clause_decides(pytester: pytest.Pytester) -> None:
    (pytester.path / "trial.yaml").write_text(SPEC)
    result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    lines = [json.loads(line) for line in
             (pytester.path / "reports" / "latest" / "results.jsonl").read_text().splitlines()]
    bf16 = [r for r in lines if r.get("spec_key") == "gpus.matmul.bf16"]
    assert len(bf16) == 8 and all(r["outcome"] == "failed" for r in bf16)
    assert all(r["reference"].endswith("of the 794.5 TFLOPS measured by mamf-finder on "
                                       "H100 SXM") and 0.97 < r["reference_ratio"] < 1.03
               for r in bf16)
    assert not [r for r in lines if r.get("spec_key") == "gpus.matmul.tf32"
                and "reference" in r]
    junit = (pytester.path / "reports" / "latest" / "junit.xml").read_text()
    assert '<property name="reference_ratio" value="' in junit
    report = (pytester.path / "reports" / "latest" / "report.html").read_text()
    # passed: the reference named once above the clause's rows, each row its ratio
    assert ("Reference (informs, never decides): 52 GB/s Azure NHC expects on H100 SXM "
            "(PCIe Gen5 x16)") in report
    assert "of the 794.5 TFLOPS measured by mamf-finder" in report  # a failed case's row


def test_a_checkpoints_references_count_as_its_bound_does() -> None:
    per_gpu = for_checkpoint("read", "gpu", 4, 8, "H100-SXM-80GB", 100 * 2**40)
    assert [r.value for r in per_gpu] == [2e9, 125e6 * 100 / 32, 1000e6 * 100 / 32]
    whole = for_checkpoint("read", "", 4, 8, "H100-SXM-80GB", None)
    assert [r.value for r in whole] == [2e9 * 32]  # no size known: no per-TiB figure
    assert whole[0].text(32e9) == ("50 % of the 64 GB/s for the cluster at CoreWeave AI "
                                   "Object Storage's 2 GB/s per GPU (H100)")
    assert [r.value for r in for_checkpoint("write", "node", 4, 8, None, None)] == []
    b300 = for_checkpoint("read", "gpu", 2, 8, "B300-SXM-288GB", None)
    assert b300[0].value == 7e9 and "B300" in b300[0].what
