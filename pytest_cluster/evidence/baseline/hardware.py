"""This run's nodes and machines against the baseline's: `baseline.nodes` (the same
nodes, missing and new ones named; those this run was not asked to check named apart)
and `baseline.hardware`, per node (the same machine, GPUs (a swapped GPU named with both
serials), NICs and HCAs (address or GUID, firmware, rate), block devices, driver). A part
whose identity (serial, MAC, GUID) changed to one --cluster-baseline-accept names is an
accepted replacement (replacements.py): said and recorded, its other fields compared."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pytest_cluster.evidence.baseline.accepted import Baseline, shown
from pytest_cluster.evidence.baseline.replacements import (
    KEY,
    OPTION,
    Accepted,
    Replacement,
    covering,
    nameable,
)
from pytest_cluster.evidence.record.derived_cases import Case
from pytest_cluster.measure.inventory_file import (
    HcaRecord,
    InventoryDocument,
    NodeRecord,
    is_unreadable,
)

if TYPE_CHECKING:
    from pytest_cluster.contract.model import ClusterSpec

MAX_NAMED = 20  # nodes named in a message; the rest are counted


@dataclass(frozen=True)
class Swapped:
    """A part whose identity changed, not accepted: the change in words, and its identity
    now (what --cluster-baseline-accept would name)."""

    said: str
    new: Any


Found = str | Swapped | Replacement  # a difference in words; a part replaced (accepted)


def _named(nodes: list[str]) -> str:
    """'n1, n2', the first MAX_NAMED of them and how many more."""
    more = f" and {len(nodes) - MAX_NAMED} more" if len(nodes) > MAX_NAMED else ""
    return ", ".join(shown(node) for node in nodes[:MAX_NAMED]) + more


def asked_nodes(cluster: ClusterSpec | None, checked: frozenset[str] | None) -> set[str] | None:
    """The spec's nodes this run was asked to check: `cluster.nodes` (--cluster-node, a
    SLURM prolog's this host, narrow them) of which the selection (`checked`: -k gpu-001)
    kept a check; None: every node (no spec given)."""
    if cluster is None:
        return None
    asked = set(cluster.nodes)
    return asked & checked if checked is not None else asked


def same_nodes(baseline: Baseline, now: InventoryDocument,
               cluster: ClusterSpec | None = None,
               checked: frozenset[str] | None = None) -> Case:
    """The nodes of this run against the baseline's. A run of some of the spec's nodes
    (`cluster.chosen_from`: --cluster-node, or this host alone in a SLURM prolog; or a
    selection that kept no check of some, `checked`) is compared on those alone: a
    baseline node of the spec it was not asked to check is not missing, only named as
    not checked by this run. A baseline node the spec no longer has is missing."""
    before, after = list(baseline.inventory["nodes"]), list(now["nodes"])
    asked = asked_nodes(cluster, checked)
    in_spec = set(cluster.chosen_from or cluster.nodes) if cluster is not None else set()
    left_out = [n for n in before if asked is not None and n in in_spec and n not in asked]
    kept, old, unasked = set(after), set(before), set(left_out)
    missing = [n for n in before if n not in kept and n not in unasked]
    new = [n for n in after if n not in old and (asked is None or n in asked)]
    parts = ([f"{len(missing)} missing since the baseline: {_named(missing)}"] if missing
             else []) + ([f"{len(new)} new: {_named(new)}"] if new else [])
    props: dict[str, Any] = {"measured": f"{len(after)} node(s), {len(before)} at baseline",
                             "requirement": "the nodes of the baseline"}
    if left_out:
        props["requirement"] = "the nodes of the baseline that this run checks"
        props["measured"] += f"; {len(left_out)} left out by the node selection: " \
                             f"{_named(left_out)}"
        props["not_checked"] = [shown(n) for n in left_out[:MAX_NAMED]]
    return Case("cluster", "baseline.nodes", "all", not parts,
                f"nodes differ from the baseline ({baseline.label}): " + "; ".join(parts)
                if parts else "", props=props)


def _differs(before: Any, after: Any) -> bool:
    """Whether a value readable at baseline changed (unreadable then: nothing to
    compare)."""
    return not (is_unreadable(before) or before in (None, "") or before == after)


def _changed(what: str, before: Any, after: Any) -> Iterator[str]:
    """'WHAT X at baseline, now Y' when a readable value changed (unreadable at baseline:
    nothing to compare)."""
    if _differs(before, after):
        yield f"{what} {shown(before)} at baseline, now {shown(after)}"


def _by(items: Any, key: str) -> dict[str, dict[str, Any]]:
    if not isinstance(items, list):
        return {}
    return {str(item.get(key)): item for item in items if isinstance(item, dict)}


def _listed(what: str, before: Any, after: Any, key: str, fields: tuple[str, ...],
            accept: Sequence[Accepted] = ()) -> Iterator[Found]:
    """Differences between two lists of devices matched by `key`; the first of `fields`
    is the device's identity (a MAC, a GUID, a serial): changed to one `accept`ed, the
    device is an accepted replacement."""
    if not isinstance(before, list):
        return
    if not isinstance(after, list):
        yield f"{what}s unreadable now ({shown(after)})"
        return
    old, new = _by(before, key), _by(after, key)
    for name, item in old.items():
        said = shown(name)
        if name not in new:
            yield f"{what} {said} missing (was {', '.join(shown(item.get(f)) for f in fields)})"
            continue
        identity, now = item.get(fields[0]), new[name].get(fields[0])
        taken = covering(accept, identity, now) if _differs(identity, now) else None
        if taken is not None:
            yield Replacement(f"{what} {said}", shown(identity), shown(now), taken.given)
        else:
            yield from (Swapped(change, now) for change in
                        _changed(f"{what} {said} {fields[0]}", identity, now))
        for each in fields[1:]:
            yield from _changed(f"{what} {said} {each}", item.get(each), new[name].get(each))
    for name in new:
        if name not in old:
            yield f"{what} {shown(name)} new"


def _gpus(before: Any, after: Any, accept: Sequence[Accepted]) -> Iterator[Found]:
    if not isinstance(before, list):
        return
    if not isinstance(after, list):
        yield f"GPUs unreadable now ({shown(after)})"
        return
    old, new = _by(before, "index"), _by(after, "index")
    for index, gpu in old.items():
        now = new.get(index)
        if now is None:
            yield f"gpu{shown(index)} missing (serial {shown(gpu.get('serial'))} at baseline)"
            continue
        serial, taken = gpu.get("serial"), None
        if serial != now.get("serial"):
            taken = covering(accept, serial, now.get("serial"))
        if taken is not None:  # another board, accepted: the same model in the same slot
            yield Replacement(f"gpu{shown(index)}", shown(serial), shown(now.get("serial")),
                              taken.given)
        elif serial != now.get("serial") or gpu.get("uuid") != now.get("uuid"):
            yield Swapped(f"gpu{shown(index)} swapped: serial {shown(serial)} "
                          f"({shown(gpu.get('uuid'))}{_model(gpu, now)}) at baseline, now "
                          f"serial {shown(now.get('serial'))} ({shown(now.get('uuid'))}"
                          f"{_model(now, gpu)})",
                          now.get("serial") if serial != now.get("serial") else None)
            continue
        # an accepted board is compared as the one it replaced, its model too
        fields = ("board_part", "vbios", "pci_bus_id") if taken is None else \
            ("name", "board_part", "vbios", "pci_bus_id")
        for each in fields:
            yield from _changed(f"gpu{shown(index)} {each}", gpu.get(each), now.get(each))
    for index, gpu in new.items():
        if index not in old:
            yield f"gpu{shown(index)} new (serial {shown(gpu.get('serial'))})"


def _model(gpu: dict[str, Any], other: dict[str, Any]) -> str:
    """', NVIDIA H100 PCIe' where the two GPUs' models differ, else nothing."""
    return f", {shown(gpu.get('name'))}" if gpu.get("name") != other.get("name") else ""


def _ports(hca: HcaRecord) -> str:
    return "; ".join(f"port {shown(p.get('port'))} {shown(p.get('rate'))}"
                     for p in hca.get("ports", []) if isinstance(p, dict))


def hardware_changes(before: NodeRecord, after: NodeRecord,
                     accept: Sequence[Accepted] = ()) -> list[str]:
    """What differs in one node's inventory from its baseline, in words (a replacement
    `accept`ed is no difference: node_changes)."""
    return node_changes(before, after, accept).changes


@dataclass(frozen=True)
class NodeChanges:
    """What differs in one node's inventory from its baseline (in words), the parts found
    replaced by one accepted (--cluster-baseline-accept), and the identities now of the
    parts replaced and not accepted, as that option would name them."""

    changes: list[str]
    replaced: list[Replacement]
    not_accepted: list[str]


def node_changes(before: NodeRecord, after: NodeRecord, accept: Sequence[Accepted] = ()
                 ) -> NodeChanges:
    """What differs in one node's inventory from its baseline (NodeChanges)."""
    if is_unreadable(after):
        return NodeChanges([f"no inventory this run: {after['unreadable']}"], [], [])
    if is_unreadable(before):
        return NodeChanges([], [], [])
    found: list[Found] = []
    old_dmi, new_dmi = before.get("dmi"), after.get("dmi")
    for key in ("product_serial", "product_uuid"):
        if isinstance(old_dmi, dict):
            found += _changed(f"system {key}", old_dmi.get(key),
                              new_dmi.get(key) if isinstance(new_dmi, dict) else new_dmi)
    found += _changed("machine id", before.get("machine_id"), after.get("machine_id"))
    found += _gpus(before.get("gpus"), after.get("gpus"), accept)
    found += _listed("NIC", before.get("interfaces"), after.get("interfaces"), "name",
                     ("address", "firmware", "rate_gbps", "link_layer"), accept)
    old_hcas = [{**h, "rate": _ports(h)} for h in before.get("infiniband") or []
                if isinstance(h, dict)] if isinstance(before.get("infiniband"), list) else None
    new_hcas = [{**h, "rate": _ports(h)} for h in after.get("infiniband") or []
                if isinstance(h, dict)] if isinstance(after.get("infiniband"), list) else \
        after.get("infiniband")
    found += _listed("HCA", old_hcas, new_hcas, "name", ("node_guid", "firmware", "rate"),
                     accept)
    old_fs, new_fs = _by(before.get("filesystems"), "path"), _by(after.get("filesystems"),
                                                                  "path")
    for path, fs in old_fs.items():
        if path in new_fs:
            found += _listed(f"disk under {path}", fs.get("block_devices"),
                             new_fs[path].get("block_devices"), "name", ("serial", "model"),
                             accept)
    found += _changed("driver", before.get("software", {}).get("driver"),
                      after.get("software", {}).get("driver"))
    return NodeChanges(
        [each.said if isinstance(each, Swapped) else each for each in found
         if not isinstance(each, Replacement)],
        [each for each in found if isinstance(each, Replacement)],
        [each.new for each in found if isinstance(each, Swapped) and nameable(each.new)])


def _how_to_accept(identities: list[str]) -> str:
    """What accepts the parts replaced on purpose (an RMA), where some were."""
    if not identities:
        return ""
    return (f"; parts replaced on purpose (an RMA) are accepted with "
            f"{OPTION}={','.join(identities[:MAX_NAMED])}")


def same_hardware(baseline: Baseline, now: InventoryDocument,
                  asked: set[str] | None = None) -> list[Case]:
    """Each node's machine against the baseline's: the nodes this run was `asked` to check
    (None: all); a node it was not is no case (it would judge a node nothing else did).
    A part replaced by one the baseline's `accept` names is said, not failed."""
    cases = []
    for node, before in baseline.inventory["nodes"].items():
        after = now["nodes"].get(node)
        if after is None or (asked is not None and node not in asked):
            continue  # named by same_nodes
        found = node_changes(before, after, baseline.accept)
        changes, replaced = found.changes, found.replaced
        gpus = before.get("gpus") if isinstance(before, dict) else None
        measured = "as at baseline" if not changes else f"{len(changes)} change(s)"
        more = len(changes) - MAX_NAMED
        changes = changes[:MAX_NAMED] + ([f"and {more} more change(s)"] if more > 0 else [])
        accepted = "".join(f"; {each.said}" for each in replaced)
        listed = {KEY: [each.to_json() for each in replaced]} if replaced else {}
        cases.append(Case(node, "baseline.hardware", node, not changes,
                          f"{node}: " + "; ".join(changes) + f" ({baseline.label})" + accepted
                          + _how_to_accept(found.not_accepted) if changes else "",
                          props={"measured": measured + accepted, "changes": changes,
                                 "requirement": "the machine, GPUs, NICs, disks and driver "
                                                "of the baseline",
                                 "gpus_at_baseline": len(gpus) if isinstance(gpus, list)
                                 else None, **listed}))
    return cases
