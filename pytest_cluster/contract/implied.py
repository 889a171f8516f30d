"""When the contract promises a clause that is not written in the spec (`Value.IMPLIED`, or
one written only with its section): each a predicate of the spec, named by contract/clauses.py
(`Declaration.when`); and the level of a clause whose value decides it
(`Declaration.level_when`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_cluster.contract.declaration import ACCEPTANCE, STRESS

if TYPE_CHECKING:
    from pytest_cluster.contract.model import Spec


def several(spec: Spec) -> bool:
    return len(spec.cluster.nodes) > 1


def intra(spec: Spec) -> bool:
    return spec.interconnect is not None and spec.interconnect.ranks_per_node > 1


def inter(spec: Spec) -> bool:
    return spec.interconnect is not None and bool(spec.interconnect.node_counts)


def stress_loop(spec: Spec) -> bool:
    ic = spec.interconnect
    return ic is not None and (ic.ranks_per_node > 1 or several(spec))


def transport(spec: Spec) -> bool:
    return inter(spec) and spec.interconnect is not None \
        and spec.interconnect.transport is not None


def training(spec: Spec) -> bool:
    return spec.training is not None


def latency(spec: Spec) -> bool:
    return spec.interconnect is not None and spec.interconnect.latency is not None


def colocation(spec: Spec) -> bool:
    return spec.interconnect is not None and spec.interconnect.colocation is not None


def search(spec: Spec) -> bool:
    return spec.interconnect is not None and spec.interconnect.node_network and several(spec)


#: DCGM's diagnostic levels that run at the stress level (-m stress) from this one: r3
#: (about 15-30 min) and r4 (an hour or more); r1 (seconds) and r2 (~2 min) at acceptance.
DCGM_STRESS_FROM = 3


def dcgm_level(spec: Spec) -> str:
    """gpus.dcgm_diag's level in `spec`: stress for r3 and r4, else acceptance."""
    level = spec.gpus.dcgm_level if spec.gpus is not None else None
    return STRESS if level is not None and level >= DCGM_STRESS_FROM else ACCEPTANCE


def golden(spec: Spec) -> bool:
    """host.golden is written, and the run can judge it: against a file on any run,
    against the cluster (its majority, a node of it) only on a run of the whole cluster."""
    golden = spec.host.golden
    return golden is not None and (golden.file is not None or spec.whole is None)
