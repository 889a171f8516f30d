"""An example pytest-cluster extension, installed as a package of its own: a `bmc:` section
of the spec with one clause (`fans: ">= 6"`, read by the `bmc` probe of this package) and a
launcher, `here`, that runs the probes on this machine. The package's metadata names
EXTENSION in the entry point group `pytest_cluster.extensions` (pyproject.toml); nothing of
pytest-cluster changes. This module imports only pytest_cluster's public records."""

from __future__ import annotations

from pathlib import Path

from pytest_cluster import (
    Actor,
    Declaration,
    Dim,
    Extension,
    ExtensionSection,
    Fault,
    LauncherKind,
    Reads,
    Value,
)

EXTENSION = Extension(
    name="bmc",
    clauses=(Declaration("bmc", "fans", Value.QUANTITY, Dim.COUNT,
                         reads=Reads("bmc", "sensors", "fans", method="the BMC's fan sensors"),
                         fault=Fault("PC-BMC-FANS", "replace the failed fan (the BMC's sensor "
                                     "list names it)", Actor.PROVIDER_HARDWARE)),),
    sections=(ExtensionSection("bmc", probes=("bmc",)),),
    launchers=(LauncherKind("here", "pcx_bmc.launcher:HereLauncher", python=None,
                            one_host=True),),
    probes={"bmc": Path(__file__).with_name("bmc_probe.py")},
    sim={"bmc": lambda sim, links, node, args: {"sensors": {"fans": 8, "method": "simulated"}}},
)
