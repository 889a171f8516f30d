"""Golden-config drift (host.golden), per node: its driver, CUDA, NCCL, kernel, GPUs'
VBIOS (and InfoROM), NIC ports' firmware and every GPU's and NIC's PCIe link, field by
field against the golden configuration: the cluster's strict majority, a golden node, or
a file of golden values. A node that differs is named with each field, its value and the
golden one; host.same_software and fabric.same_firmware say only that the nodes differ,
naming the nodes of each version (measure/golden.py reads the fields)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_cluster.evidence.baseline.golden_file import GoldenFileError, load, path_of
from pytest_cluster.evidence.verdict.blame import GOLDEN_FILE, NO_GOLDEN
from pytest_cluster.measure import golden
from pytest_cluster.run.contract_tests import checks

if TYPE_CHECKING:
    from pytest_cluster.contract.model import Rule, Spec
    from pytest_cluster.evidence.record.check import Evidence
    from pytest_cluster.launchers.result import ProbeResult
    from pytest_cluster.measure.cluster import Cluster

METHOD = ("host probe (kernel, driver, CUDA, NCCL), NVML (VBIOS, InfoROM, PCIe maximum; "
          "current under the GPU load of gpus.pcie), NIC probe (sysfs fw_ver, PCIe link)")


def _references(evidence: Evidence, rule: Rule, spec: Spec, cluster: Cluster,
                reading: golden.Reading, node: str) -> dict[golden.Field, golden.Reference]:
    """The golden values this node is compared with, or fail saying why there are none."""
    chosen = spec.host.golden
    assert chosen is not None
    if chosen.file is not None:
        path = path_of(spec, chosen.file)
        try:
            values = cluster.cache.kept(("golden", "file"),
                                        lambda: load(path, chosen.file or ""))
        except GoldenFileError as exc:  # the spec's file, no node's fault: none blamed
            evidence.cannot_measure(rule, f"the golden file cannot be read: {exc}",
                                    kind=GOLDEN_FILE)
        return values.reference(reading.configs.get(node))
    if chosen.node is not None:
        config = reading.configs.get(chosen.node)
        if config is None:
            why = reading.unanswered.get(chosen.node, "not in this run")
            evidence.cannot_measure(rule, f"the golden node {chosen.node} did not answer, "
                                    f"so there is nothing to compare with: {why}",
                                    kind=NO_GOLDEN)
        return golden.of_node(config, chosen.node)
    return cluster.cache.kept(("golden", "majority"), lambda: golden.majority(reading.configs))


@checks("host.golden")
def test_golden_config(cluster_spec: Spec, cluster: Cluster, node: str,
                       host_result: ProbeResult, evidence: Evidence) -> None:
    """Every field of the node the same as the golden one; a field the node could not
    read is said (never a pass of it), and one without a golden value is not compared
    (the golden node could not read it). With no golden value to decide by (no strict
    majority, the golden node silent, the golden file unreadable) the node is NOT CHECKED,
    no node blamed and the cluster not failed (error kinds no_golden, golden_file)."""
    rule = cluster_spec.host.rule("golden")
    assert rule is not None, "host.golden is not in the contract"
    evidence.require(host_result, rule)  # an unreachable node fails once, as unreachable
    reading = golden.read(cluster)
    for result in reading.results:
        evidence.saw(result)
    references = _references(evidence, rule, cluster_spec, cluster, reading, node)
    drift = golden.compare(node, reading.configs[node], references)
    raw = {"golden": rule.text, "fields": drift.table, "left_out": list(reading.left_out)}
    said = [*(f"could not read {text}" for text in drift.unread),
            *(f"undecided {text}" for text in drift.undecided),
            *(f"not compared: {text}" for text in drift.not_compared[:8]),
            *(f"not compared on any node: {text}" for text in reading.left_out)]
    total = drift.same + len(drift.differ)
    measured = (f"{len(drift.differ)} of {total} field(s) differ" if drift.differ
                else f"{drift.same} field(s) the same as the golden")
    if not drift.differ and drift.unread:
        evidence.cannot_measure(rule, "; ".join(drift.unread[:8]), raw=raw)
    if not drift.differ and drift.undecided:
        evidence.cannot_measure(rule, "no golden value, no node singled out: "
                                + "; ".join(drift.undecided[:8]), raw=raw, kind=NO_GOLDEN)
    evidence.check_rule(rule, not drift.differ,
                        "; ".join([measured, *said[:12]]), result=host_result,
                        problem="; ".join([*drift.differ[:12], *said[:len(drift.unread)
                                                                     + len(drift.undecided)]]),
                        method=METHOD, raw=raw)
