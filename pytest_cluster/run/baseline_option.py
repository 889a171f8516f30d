"""--cluster-baseline and its companions (--cluster-baseline-key, --cluster-baseline-accept)
read at configure time: the baseline verified and loaded, or a usage error before any test
runs (a soak's directory is no baseline: the error points at its last round)."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pytest_cluster.errors import head
from pytest_cluster.evidence.baseline import accepted as baseline
from pytest_cluster.evidence.baseline import replacements
from pytest_cluster.run.stash import SPEC_KEY
from pytest_cluster.soak import rounds as soak

if TYPE_CHECKING:
    from pytest_cluster.evidence.baseline.accepted import Baseline


def not_a_soak(where: Path) -> None:
    """A soak's directory is no baseline (its results are the rounds', and its own): a
    usage error pointing at its last round, the run it most likely means."""
    with contextlib.suppress(OSError):
        if stat.S_ISREG(os.lstat(where / soak.SOAK_FILE).st_mode):
            numbers = soak.round_numbers(where)
            last = (f"; its last round is {where / soak.ROUNDS_DIR / soak.round_name(numbers[-1])}"
                    if numbers else "; it holds no round")
            raise pytest.UsageError(
                f"--cluster-baseline={head(str(where))}: is a soak's directory (it holds "
                f"{soak.SOAK_FILE}): a baseline is one run's evidence; compare with one of "
                f"its rounds (--cluster-baseline=SOAK/{soak.ROUNDS_DIR}/round-NNNN){last}")


def load_baseline(config: pytest.Config) -> Baseline | None:
    """The baseline --cluster-baseline names, verified now: one that cannot serve is a
    usage error before any test runs."""
    where = config.getoption("cluster_baseline")
    key = config.getoption("cluster_baseline_key")
    if where == "":
        raise pytest.UsageError("--cluster-baseline= is empty: expected a run's evidence "
                                "directory (one that passes pytest-cluster verify)")
    if key == "":
        raise pytest.UsageError("--cluster-baseline-key= is empty: expected a public key "
                                "file (PEM or OpenSSH) the baseline must be signed by")
    accept = config.getoption("cluster_baseline_accept")
    if where is None:
        for given, option in ((key, "--cluster-baseline-key"),
                              (accept, replacements.OPTION)):
            if given is not None:
                raise pytest.UsageError(f"{option} needs --cluster-baseline=DIR")
        return None
    not_a_soak(Path(where))
    try:
        accepted = replacements.parse(accept or [])
    except replacements.AcceptError as exc:
        raise pytest.UsageError(f"{replacements.OPTION}: {exc}") from None
    try:
        loaded = baseline.load(Path(where), Path(key) if key else None,
                               baseline.limits(config.stash[SPEC_KEY]))
    except baseline.BaselineError as exc:
        raise pytest.UsageError(f"--cluster-baseline={where}: {exc}") from None
    return dataclasses.replace(loaded, accept=accepted)
