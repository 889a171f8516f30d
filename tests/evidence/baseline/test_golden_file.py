"""A file of golden values for host.golden (pytest_cluster/evidence/baseline/golden_file.py):
a YAML's values hold for every GPU and port of a node; an inventory.json's are its nodes'
majority; a file that is not one says why."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_cluster.evidence.baseline.golden_file import GoldenFileError, inventory_config, load
from pytest_cluster.measure.golden import GPU, HOST, NIC, Config, Field, Unread


def test_a_yaml_value_holds_for_every_gpu_and_port_the_node_has(tmp_path: Path) -> None:
    path = tmp_path / "golden.yaml"
    path.write_text("driver: 550.54.15\ngpu: {vbios: A, pcie_max: Gen5 x16}\n"
                    "nic: {firmware: '28.39.1002'}\n", encoding="utf-8")
    node = Config({Field(HOST, "", "driver"): "550.54.15", Field(HOST, "", "kernel"): "6.8",
                   Field(GPU, "GPU 0", "vbios"): "A", Field(GPU, "GPU 7", "pcie max"): "x",
                   Field(NIC, "mlx5_3/1", "firmware"): "1"})
    golden = load(path, "golden.yaml").reference(node)
    assert {str(name): ref.value for name, ref in golden.items()} == {
        "driver": "550.54.15", "GPU 0 vbios": "A", "GPU 7 pcie max": "Gen5 x16",
        "mlx5_3/1 firmware": "28.39.1002"}  # the kernel: not in the file, not compared
    assert {ref.source for ref in golden.values()} == {"golden file golden.yaml"}


@pytest.mark.parametrize(("text", "said"), [
    ("vbios: A\n", "vbios (line 1): expected one of driver, cuda, nccl, kernel, gpu, nic"),
    ("gpu: {bios: A}\n", "gpu.bios: expected one of vbios, inforom, pcie_max"),
    ("- driver\n", "expected a map of golden values"),
    ("driver: {a: 1}\n", "driver (line 1): expected a version")])
def test_a_yaml_that_is_not_one_says_why(tmp_path: Path, text: str, said: str) -> None:
    path = tmp_path / "g.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(GoldenFileError, match=r"^g\.yaml: ") as caught:
        load(path, "g.yaml")
    assert said in str(caught.value)


def test_a_missing_file_says_so(tmp_path: Path) -> None:
    with pytest.raises(GoldenFileError, match=r"^none\.json: cannot be read: No such file"):
        load(tmp_path / "none.json", "none.json")


def test_an_inventory_record_gives_versions_vbios_and_firmware_and_what_it_could_not_read(
        ) -> None:
    config = inventory_config({
        "kernel": "5.15", "software": {"driver": "550", "nccl": {"unreadable": "no torch"}},
        "gpus": [{"index": 0, "vbios": "A"}],
        "infiniband": [{"name": "mlx5_0", "firmware": "28.39", "ports": [{"port": "1"}]}]})
    assert {str(k): v for k, v in config.values.items()} == {
        "driver": "550", "nccl": Unread("no torch"), "kernel": "5.15", "GPU 0 vbios": "A",
        "mlx5_0/1 firmware": "28.39"}  # cuda: not recorded, not compared


SPEC = ("cluster: {name: gfile, nodes: 'n[1-2]', launcher: sim}\n"
        "gpus: {count: 2}\n"
        "host:\n  golden: GOLDEN\n"
        "sim: {gpus_per_node: 2}\n")


@pytest.mark.parametrize(("golden", "text", "said"), [
    ("missing.yaml", None, "missing.yaml"),
    ("../../etc/passwd.yaml", None, "passwd.yaml"),
    ("bad.yaml", "driver: 550.90.07\nbogus_key: 1\n", "bogus_key"),
    ("bad.yaml", "driver: [1, 2]\ngpu: 5\n", "driver"),
])
def test_check_reads_the_golden_file_and_names_its_problem_at_the_spec_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], golden: str, text: str | None,
        said: str) -> None:
    """`pytest-cluster check` opens the golden file as a run would (a new user's missing,
    traversing and bad-keyed files all came back valid): an error at host.golden's line
    naming the file's problem, exit 4 (a usage error before any test runs)."""
    from pytest_cluster.cli import main

    spec = tmp_path / "s.yaml"
    spec.write_text(SPEC.replace("GOLDEN", golden))
    if text is not None:
        (tmp_path / golden).write_text(text)
    assert main(["check", str(spec)]) == 4
    out = capsys.readouterr().out
    assert f"{spec}:4: host.golden: the golden file cannot be read: " in out
    assert said in out.split("host.golden:", 1)[1]


def test_check_passes_a_good_golden_file(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    from pytest_cluster.cli import main

    spec = tmp_path / "s.yaml"
    spec.write_text(SPEC.replace("GOLDEN", "good.yaml"))
    (tmp_path / "good.yaml").write_text("driver: 550.90.07\ngpu: {vbios: 96.00.74.00.0F}\n")
    assert main(["check", str(spec)]) == 0
    assert f"{spec}: valid:" in capsys.readouterr().out


def test_a_golden_value_with_control_characters_is_kept_escaped(tmp_path: Path) -> None:
    path = tmp_path / "g.yaml"
    path.write_text('gpu: {vbios: "96\\e[2J\\u202e"}\n')
    values = load(path, "g.yaml")
    assert values.kinds is not None
    assert values.kinds[(GPU, "vbios")] == "96\\x1b[2J\\u202e"
