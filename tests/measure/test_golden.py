"""Golden-config drift's fields and golden values (pytest_cluster/measure/golden.py): what a
node's probes give as fields, the strict majority (none where no value has more than
half), a golden node's values, and the comparison that names the field, the node's value
and the golden one."""

from __future__ import annotations

from typing import Any

from pytest_cluster.measure.golden import (
    ABSENT,
    GPU,
    HOST,
    NIC,
    Config,
    Field,
    Unread,
    compare,
    gpu_fields,
    host_fields,
    majority,
    nic_fields,
    of_node,
)

VBIOS = Field(GPU, "GPU 3", "vbios")


def _gpu(index: int, vbios: Any = "96.00.74.00.0F", **pcie: Any) -> dict[str, Any]:
    return {"index": index, "uuid": f"GPU-{index}", "vbios": vbios,
            "pcie": {"gen": 1, "max_gen": 5, "width": 16, "max_width": 16, **pcie}}


def _config(**values: str | Unread) -> Config:
    return Config({Field(GPU, "GPU 3", name): value for name, value in values.items()})


def test_the_host_probe_gives_each_version_and_one_not_found_is_not_installed() -> None:
    config = Config()
    host_fields(config, {"versions": {"kernel": "5.15", "driver": "550.54.15", "cuda": "12.4",
                                      "nccl": None}})
    assert {str(k): v for k, v in config.values.items()} == {
        "driver": "550.54.15", "cuda": "12.4", "nccl": "not installed", "kernel": "5.15"}


def test_a_gpu_gives_its_vbios_and_maximum_link_and_its_current_one_only_under_load() -> None:
    idle = Config()
    gpu_fields(idle, {"gpus": [_gpu(0)]}, None)
    assert {str(k): v for k, v in idle.values.items()} == {
        "GPU 0 vbios": "96.00.74.00.0F", "GPU 0 pcie max": "Gen5 x16"}
    loaded = Config()
    perf = {"gpus": [{"index": 0, "uuid": "GPU-0",
                      "load": {"pcie_gen_max": 4, "pcie_width_max": 16}}]}
    gpu_fields(loaded, {"gpus": [_gpu(0)]}, perf)
    assert loaded.values[Field(GPU, "GPU 0", "pcie under load")] == "Gen4 x16"
    failed = Config()
    gpu_fields(failed, {"gpus": [_gpu(0)]}, "torch is not installed")
    assert failed.values[Field(GPU, "GPU 0", "pcie under load")] == \
        Unread("torch is not installed")


def test_what_nvml_could_not_read_is_unread_never_a_value() -> None:
    config = Config()
    gpu_fields(config, {"gpus": [_gpu(0, {"error": "nvmlDeviceGetVbiosVersion: Not "
                                                    "Supported"}, max_gen={"error": "x"})]},
               None)
    assert config.values[Field(GPU, "GPU 0", "vbios")] == \
        Unread("nvmlDeviceGetVbiosVersion: Not Supported")
    assert isinstance(config.values[Field(GPU, "GPU 0", "pcie max")], Unread)
    none = Config()
    gpu_fields(none, {"error": "NVML not available"}, None)
    assert none.unread == {GPU: "NVML not available"}


def _port(name: str, **more: Any) -> dict[str, Any]:
    return {"name": name, "device": name.partition("/")[0], "kind": "rdma", "active": True,
            "firmware": "28.39.1002", "counters": {}, **more}


def test_a_nic_port_gives_its_firmware_and_its_pcie_link_only_where_the_probe_reads_it() -> None:
    link = {"gen": 4, "max_gen": 5, "width": 16, "max_width": 16, "speed": "16.0 GT/s PCIe",
            "max_speed": "32.0 GT/s PCIe"}
    config = Config()
    said = nic_fields(config, {"ports": [_port("mlx5_0/1", pcie=link), _port("mlx5_1/1"),
                                         _port("mlx5_2/1", pcie=None)]}, None)
    assert said
    assert {str(k): v for k, v in config.values.items()} == {
        "mlx5_0/1 firmware": "28.39.1002", "mlx5_0/1 pcie": "Gen4 x16",
        "mlx5_0/1 pcie max": "Gen5 x16", "mlx5_1/1 firmware": "28.39.1002",
        "mlx5_2/1 firmware": "28.39.1002"}
    older = Config()
    assert not nic_fields(older, {"ports": [_port("mlx5_0/1")]}, None)
    assert Field(NIC, "mlx5_0/1", "firmware") in older.values


def test_the_strict_majority_is_golden_and_the_odd_node_is_named_with_both_values() -> None:
    configs = {f"n{i}": _config(vbios="96.00.74.00.0F") for i in range(1, 6)}
    configs["n4"] = _config(vbios="96.00.89.00.01")
    golden = majority(configs)
    assert golden[VBIOS].value == "96.00.74.00.0F"
    assert golden[VBIOS].source == "majority 4 of 5"
    drift = compare("n4", configs["n4"], golden)
    assert drift.differ == ["n4 GPU 3 vbios 96.00.89.00.01, golden 96.00.74.00.0F "
                            "(majority 4 of 5)"]
    assert compare("n1", configs["n1"], golden).differ == []
    assert compare("n1", configs["n1"], golden).same == 1


def test_without_a_strict_majority_no_node_is_singled_out_and_each_value_is_said() -> None:
    configs = {"n1": _config(vbios="A"), "n2": _config(vbios="A"),
               "n3": _config(vbios="B"), "n4": _config(vbios="B")}
    golden = majority(configs)
    assert golden[VBIOS].value is None and golden[VBIOS].undecided
    for node, config in configs.items():
        drift = compare(node, config, golden)
        assert drift.differ == []
        assert drift.undecided == ["GPU 3 vbios: no strict majority: A on n1,n2; B on "
                                   "n3,n4"]


def test_the_majority_is_of_the_nodes_that_read_the_field() -> None:
    configs = {"n1": _config(vbios="A"), "n2": _config(vbios="A"),
               "n3": _config(vbios=Unread("Not Supported"))}
    golden = majority(configs)
    assert (golden[VBIOS].value, golden[VBIOS].source) == ("A", "majority 2 of 2")
    drift = compare("n3", configs["n3"], golden)
    assert (drift.differ, drift.unread) == ([], ["GPU 3 vbios: unreadable (Not Supported)"])


def test_a_field_the_golden_node_could_not_read_is_not_compared_and_said() -> None:
    golden = of_node(_config(vbios=Unread("Not Supported")), "n1")
    drift = compare("n2", _config(vbios="A"), golden)
    assert (drift.differ, drift.same) == ([], 0)
    assert drift.not_compared == ["GPU 3 vbios: n1 could not read it: Not Supported"]


def test_a_gpu_the_golden_has_and_the_node_lacks_differs_unless_its_gpus_were_unread() -> None:
    golden = of_node(_config(vbios="A"), "n1")
    assert compare("n2", Config(), golden).differ == [
        f"n2 GPU 3 vbios {ABSENT}, golden A (golden node n1)"]
    unread = Config(unread={GPU: "NVML not available"})
    drift = compare("n2", unread, golden)
    assert (drift.differ, drift.unread) == ([], ["GPU 3 vbios: unreadable (NVML not "
                                                 "available)"])


def test_the_host_fields_come_first_then_gpus_by_index() -> None:
    config = Config({Field(GPU, "GPU 10", "vbios"): "A", Field(GPU, "GPU 2", "vbios"): "A",
                     Field(HOST, "", "driver"): "1"})
    drift = compare("n1", config, of_node(config, "n1"))
    assert list(drift.table) == ["driver", "GPU 2 vbios", "GPU 10 vbios"]
