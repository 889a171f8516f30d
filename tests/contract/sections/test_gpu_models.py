"""contract/sections/gpu_models.py: the GPU models a contract can name, their NVML names and
datasheet peaks."""

from __future__ import annotations

import pytest

from pytest_cluster.contract.sections.gpu_models import (
    MODELS,
    PEAK_TFLOPS,
    model_named,
    model_of_nvml_name,
)

GIB = 2**30


@pytest.mark.parametrize("key", sorted(MODELS))
def test_a_model_is_found_by_its_name_in_any_case_and_by_its_nvml_name(key: str) -> None:
    model = MODELS[key]
    assert model_named(key) is model
    assert model_named(key.lower()) is model and model_named(key.upper()) is model
    for nvml in model.nvml_names:
        assert model_named(nvml) is model and model_of_nvml_name(nvml) is model


def test_an_unknown_name_is_no_model_and_an_nvml_name_is_exact() -> None:
    assert model_named("H100") is None and model_of_nvml_name("H100-SXM-80GB") is None
    nvml = MODELS["H100-SXM-80GB"].nvml_names[0]
    assert model_of_nvml_name(nvml.lower()) is None


def test_each_nvml_name_is_one_models() -> None:
    names = [name for model in MODELS.values() for name in model.nvml_names]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("key", sorted(MODELS))
def test_a_models_figures_are_what_its_name_says(key: str) -> None:
    """The memory in its name (80GB is what NVML reports short of 80 GiB), what the simulator
    measures never above the datasheet's peak, and a peak for every model."""
    model = MODELS[key]
    named_gb = int(key.rsplit("-", 1)[1].removesuffix("GB"))
    assert 0.95 * named_gb * 1e9 <= model.memory_bytes <= 1.01 * named_gb * GIB
    assert model.bf16_tflops <= PEAK_TFLOPS[key]["bf16"]
    assert (model.nvlinks > 0) == (model.form_factor != "PCIe")


def test_a_peak_per_dtype_rises_with_narrower_types_and_fp8_only_from_hopper() -> None:
    assert set(PEAK_TFLOPS) == set(MODELS)
    for key, peaks in PEAK_TFLOPS.items():
        assert peaks["fp32"] < peaks["tf32"] < peaks["bf16"] == peaks["fp16"], key
        assert ("fp8" in peaks) == (not key.startswith("A100")), key
        if "fp8" in peaks:
            assert peaks["fp8"] == pytest.approx(2 * peaks["bf16"], rel=0.01), key
