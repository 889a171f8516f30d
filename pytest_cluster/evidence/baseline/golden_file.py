"""A file of golden values for host.golden: an inventory.json a run wrote (its nodes'
strict majority per field; one node's: its values), or a small YAML of expected values,
each read through the bounded readers (read_inventory; the spec's read_text and compose):

    driver: 550.54.15          # the host probe's versions: driver, cuda, nccl, kernel
    cuda: "12.4"
    gpu: {vbios: 96.00.74.00.0F, pcie_max: Gen5 x16, pcie_under_load: Gen5 x16}
    nic: {firmware: 28.39.1002, pcie: Gen5 x16, pcie_max: Gen5 x16}

A key of `gpu` holds for every GPU of a node, one of `nic` for every counted port. A
field the file does not give is not compared (an inventory has no PCIe link).

The file is read once as the spec is (check_spec: `pytest-cluster check` and a run, before
any test): one that cannot be read or is not one is a usage error at host.golden's line."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from yaml.nodes import MappingNode, Node, ScalarNode

from pytest_cluster.contract.reading.compose import compose, read_text
from pytest_cluster.errors import ClusterError, SpecError, head, printable
from pytest_cluster.evidence.baseline.files import read_inventory
from pytest_cluster.measure.golden import (
    GPU,
    HOST,
    NIC,
    SOFTWARE,
    Config,
    Field,
    Reference,
    Unread,
    majority,
)
from pytest_cluster.measure.inventory_file import is_unreadable

if TYPE_CHECKING:
    from pytest_cluster.contract.model import Spec

#: The most bytes of a YAML of golden values.
MAX_YAML = 64 * 2**10
#: What a YAML of golden values may say: the host's, each GPU's and each NIC port's.
KEYS = {HOST: SOFTWARE, GPU: ("vbios", "inforom", "pcie_max", "pcie_under_load"),
        NIC: ("firmware", "pcie", "pcie_max")}


class GoldenFileError(ClusterError):
    """The file of golden values cannot be read or is not one."""


@dataclass(frozen=True)
class GoldenValues:
    """The golden values a file gives: per field (an inventory's), or per kind of field
    (a YAML's: `gpu.vbios` for every GPU)."""

    source: str
    fields: Mapping[Field, Reference] | None = None
    kinds: Mapping[tuple[str, str], str] | None = None

    def reference(self, config: Config | None) -> dict[Field, Reference]:
        """The golden values of the fields `config` has (one it lacks is not compared)."""
        have = config.values if config is not None else {}
        if self.fields is not None:
            return {name: ref for name, ref in self.fields.items() if name in have}
        kinds = self.kinds or {}
        return {name: Reference(kinds[(name.group, name.what)], self.source)
                for name in have if (name.group, name.what) in kinds}


def path_of(spec: Spec, file: str) -> Path:
    """The golden file `file` as host.golden writes it: relative to the spec's folder."""
    path = Path(file)
    return path if path.is_absolute() else Path(spec.file).parent / path


def check_spec(spec: Spec) -> None:
    """The spec's golden file (host.golden), read and validated as a run would before any
    test runs: a SpecError at host.golden's line saying what is wrong with it (missing,
    not a regular file, too big, a key it may not have); nothing where there is none."""
    chosen = spec.host.golden
    if chosen is None or chosen.file is None:
        return
    try:
        load(path_of(spec, chosen.file), chosen.file)
    except GoldenFileError as exc:
        rule = spec.host.rule("golden")
        raise SpecError(f"the golden file cannot be read: {exc}", file=spec.file,
                        line=rule.line if rule is not None else None,
                        path="host.golden") from None


def load(path: Path, shown: str) -> GoldenValues:
    """The golden values of the file at `path` (`shown`: as the spec writes it)."""
    try:
        if path.suffix.lower() == ".json":
            return _inventory(path, shown)
        return _yaml(path, shown)
    except ClusterError as exc:
        said = printable(head(str(exc), 400))
        named = said.startswith((f"{path.name}:", f"{path}:"))
        raise GoldenFileError(said if named else f"{shown}: {said}") from None


def _inventory(path: Path, shown: str) -> GoldenValues:
    document = read_inventory(path)
    configs = {node: inventory_config(record) for node, record in document["nodes"].items()}
    found = majority(configs)
    source = f"golden file {shown}"
    return GoldenValues(source, {name: Reference(ref.value, f"{source}, {ref.source}",
                                                 ref.why, ref.undecided)
                                 for name, ref in found.items()})


def _value(value: object) -> str | Unread:
    if is_unreadable(value):
        return Unread(str(value["unreadable"]))
    return printable(str(value)[:200]) if isinstance(value, (str, int, float)) and str(value) \
        else Unread("not recorded")


def inventory_config(record: Mapping[str, Any]) -> Config:
    """A node's fields as inventory.json recorded them: its versions, its GPUs' VBIOS,
    its HCAs' ports' and interfaces' firmware."""
    config = Config()
    listed = record.get("software")
    software: Mapping[str, Any] = listed if isinstance(listed, dict) else {}
    for name in SOFTWARE:  # one the record lacks (its run read no versions): not compared
        held: Mapping[str, Any] = record if name == "kernel" else software
        if name in held:
            found = held[name]
            config.values[Field(HOST, "", name)] = "not installed" if found is None \
                else _value(found)
    gpus = record.get("gpus")
    for gpu in gpus if isinstance(gpus, list) else ():
        if isinstance(gpu, dict) and isinstance(gpu.get("index"), int):
            config.values[Field(GPU, f"GPU {gpu['index']}", "vbios")] = _value(gpu.get("vbios"))
    hcas = record.get("infiniband")
    for hca in hcas if isinstance(hcas, list) else ():
        for port in hca.get("ports", []) if isinstance(hca, dict) else ():
            if isinstance(port, dict):
                where = f"{hca.get('name')}/{port.get('port')}"
                config.values[Field(NIC, where, "firmware")] = _value(hca.get("firmware"))
    interfaces = record.get("interfaces")
    for item in interfaces if isinstance(interfaces, list) else ():
        if isinstance(item, dict) and "firmware" in item:
            config.values[Field(NIC, str(item.get("name")), "firmware")] = \
                _value(item.get("firmware"))
    return config


def _yaml(path: Path, shown: str) -> GoldenValues:
    root = compose(read_text(path, MAX_YAML, "golden file"), str(path))
    if not isinstance(root, MappingNode):
        raise GoldenFileError("expected a map of golden values (driver, cuda, nccl, "
                              "kernel, gpu, nic)")
    kinds: dict[tuple[str, str], str] = {}
    for key, node in _items(root):
        if key in KEYS[HOST]:
            kinds[(HOST, key)] = _scalar(node, key)
        elif key in (GPU, NIC) and isinstance(node, MappingNode):
            for inner, value in _items(node):
                if inner not in KEYS[key]:
                    raise GoldenFileError(f"{key}.{head(inner, 40)}: expected one of "
                                          f"{', '.join(KEYS[key])}")
                kinds[(key, inner.replace("_", " "))] = _scalar(value, f"{key}.{inner}")
        else:
            raise GoldenFileError(f"{head(key, 40)} (line {node.start_mark.line + 1}): "
                                  f"expected one of {', '.join((*KEYS[HOST], GPU, NIC))}"
                                  f"{' (a map)' if key in (GPU, NIC) else ''}")
    return GoldenValues(f"golden file {shown}", kinds=kinds)


def _items(node: MappingNode) -> list[tuple[str, Node]]:
    return [(str(key.value), value) for key, value in node.value]


def _scalar(node: Node, where: str) -> str:
    if not isinstance(node, ScalarNode) or not str(node.value).strip():
        raise GoldenFileError(f"{where} (line {node.start_mark.line + 1}): expected a "
                              "version or a link like 'Gen5 x16'")
    return printable(str(node.value).strip()[:200])
