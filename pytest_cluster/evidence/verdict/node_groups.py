"""What nodes reported, grouped by value: a summary a person reads in one line and
evidence whose size follows the number of different answers, not the number of nodes.

A cluster-wide "the same on every node" check at 1,024 nodes names its nodes as hostlists
(`gpu-[0001-0127,0129-1024]`), never a list of a thousand names in every record.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pytest_cluster.hostlist import compress_hostlist

#: Nodes named one by one up to this many; more as a hostlist.
LISTED = 4
#: A summary names at most this many values; the evidence keeps them all.
SHOWN_VALUES = 6
#: A group of nodes longer than this in a summary is counted instead.
SHOWN_CHARS = 80


def nodes_text(nodes: Sequence[str]) -> str:
    """`a, b`; `gpu-[001-063]`; or, where even the hostlist is long (nodes scattered
    over the cluster), `500 nodes (gpu-001, gpu-003, ...)`."""
    if len(nodes) <= LISTED:
        return ", ".join(nodes)
    listed = compress_hostlist(nodes)
    if len(listed) <= SHOWN_CHARS:
        return listed
    return f"{len(nodes)} nodes ({', '.join(nodes[:2])}, ...)"


def summary(groups: Mapping[str, Sequence[str]]) -> str:
    """'2.4.0 on all 64 node(s)', or each value with its nodes: '2.4.0 on n[00-62]; 2.3.1
    on n63'; at most SHOWN_VALUES values, the others counted."""
    if len(groups) == 1:
        (value, nodes), = groups.items()
        return (f"{value} on all {len(nodes)} node(s)" if len(nodes) > LISTED
                else f"{value} on {nodes_text(nodes)}")
    parts = [f"{value} on {nodes_text(nodes)}"
             for value, nodes in list(groups.items())[:SHOWN_VALUES]]
    if len(groups) > SHOWN_VALUES:
        parts.append(f"and {len(groups) - SHOWN_VALUES} more values")
    return "; ".join(parts)


def odd_ones(groups: Mapping[str, Sequence[str]]) -> list[str]:
    """The nodes outside the one largest group: those a "the same on every node" check
    names as the culprits (the odd firmware, the other driver). None when no group is
    larger than every other (two halves: no majority to judge by)."""
    if len(groups) < 2:
        return []
    sizes = sorted((len(nodes) for nodes in groups.values()), reverse=True)
    if sizes[0] == sizes[1]:
        return []
    largest = max(groups.values(), key=len)
    return [node for nodes in groups.values() if nodes is not largest for node in nodes]


def evidence(groups: Mapping[str, Sequence[str]],
             unanswered: Mapping[str, str]) -> dict[str, dict[str, str]]:
    """The raw evidence: each value with its nodes as a hostlist, and each reason a node
    did not answer with the nodes it stands for (the node's own name taken out of it,
    so that a hundred dead nodes are one entry)."""
    reasons: dict[str, list[str]] = {}
    for node, why in unanswered.items():
        reasons.setdefault(why.removeprefix(f"{node}: "), []).append(node)
    return {"values": {value: compress_hostlist(nodes) for value, nodes in groups.items()},
            "unanswered": {why: compress_hostlist(nodes) for why, nodes in reasons.items()}}
