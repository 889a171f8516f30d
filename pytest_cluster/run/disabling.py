"""The kill switch in a run (contract/disable_file.py reads the file): `--cluster-disable=FILE`
(or PYTEST_CLUSTER_DISABLE; the option wins) read at configure, before anything is made (a
bad file is a usage error, exit 4); each case of a clause in force is skipped, saying
"disabled: <reason>, until <date>" (its result line and JUnit properties carry
`disabled`, the clause, and `disabled_until`), so that it is never passed; an expired
entry is ignored, and said.

The controller decides which entries are in force, once; pytest-xdist workers are handed
them (workerinput), so that every process skips the same cases."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest

from pytest_cluster import internals
from pytest_cluster.contract import disable_file
from pytest_cluster.contract.disable_file import Disabled
from pytest_cluster.errors import SpecError, head
from pytest_cluster.evidence.record.plan import CASE_KEY
from pytest_cluster.evidence.sinks.results import DISABLED

if TYPE_CHECKING:
    from pytest_cluster.evidence.record.lines import DisabledEntry

#: What the run disables, in `config.stash` (absent without --cluster).
DISABLED_KEY = pytest.StashKey["Disabling"]()
#: The result line's (and JUnit property's) key of a disabled case's `until` (DISABLED:
#: the clause turned off; its message says why).
UNTIL = "disabled_until"
_WORKER_KEY = "cluster_disabled"


@dataclass(frozen=True)
class Disabling:
    """The entries of a run's disable file in force, and those expired (ignored)."""

    file: str = ""
    in_force: tuple[Disabled, ...] = ()
    expired: tuple[Disabled, ...] = ()

    def of(self, clause: str) -> Disabled | None:
        return next((entry for entry in self.in_force if entry.clause == clause), None)

    def warnings(self) -> list[str]:
        """One line per expired entry, as the terminal says it."""
        return [f"disable file {self.file}:{entry.line}: {entry.clause}'s entry expired "
                f"(until {entry.until}): ignored, the clause runs ({entry.reason})"
                for entry in self.expired]


def pytest_addoption(parser: pytest.Parser) -> None:
    """In configure's group (this plugin is registered first: its title said here too)."""
    parser.getgroup("cluster", "pytest-cluster: contract acceptance tests").addoption(
        "--cluster-disable", metavar="FILE", default=None,
        help="turn clauses off fleet-wide: a YAML file of `disabled:` entries (clause, "
             "reason, until); their cases are skipped as 'disabled: <reason>, until "
             "<date>', never passed; an expired entry is ignored and said (default: "
             f"${disable_file.ENV})")


def configure(config: pytest.Config) -> None:
    """The run's disable file read (the controller) or taken from the controller (a
    worker); a usage error for a file that is not valid, before anything runs."""
    handed = internals.worker_input(config)
    if handed is not None:
        config.stash[DISABLED_KEY] = Disabling(in_force=tuple(
            Disabled(*row) for row in handed.get(_WORKER_KEY, [])))
        return
    given = config.getoption("cluster_disable")
    where = "--cluster-disable"
    if given is None:
        given, where = os.environ.get(disable_file.ENV), disable_file.ENV
    if given is None:
        config.stash[DISABLED_KEY] = Disabling()
        return
    if not given.strip():
        raise pytest.UsageError(f"{where}=: expected the path of a disable file (YAML), got "
                                "an empty value (an unset variable?)")
    try:
        read = disable_file.load(given)
    except SpecError as exc:
        raise pytest.UsageError(f"{where}: {exc}") from None
    now = time.time()
    config.stash[DISABLED_KEY] = Disabling(head(given, 200), read.in_force(now),
                                           read.expired(now))


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    found = node.config.stash.get(DISABLED_KEY, None)
    if found is not None:
        node.workerinput[_WORKER_KEY] = [[e.clause, e.reason, e.until] for e in found.in_force]


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Each contract case of a clause in force skipped, saying why and until when."""
    found = config.stash.get(DISABLED_KEY, None)
    if found is None or not found.in_force:
        return
    for item in items:
        marker = item.get_closest_marker("clause")
        entry = (found.of(str(marker.args[0])) if marker is not None and marker.args
                 and CASE_KEY in item.stash else None)
        if entry is not None:
            item.add_marker(pytest.mark.skip(reason=entry.said))
            item.user_properties += [(DISABLED, entry.clause), (UNTIL, entry.until),
                                     *_place(item)]


def _place(item: pytest.Item) -> list[tuple[str, object]]:
    """What a case is about (its node, filesystem, GPU), as a case that ran records it: a
    skipped one's JUnit testcase says it too."""
    callspec = getattr(item, "callspec", None)
    params = callspec.params if callspec is not None else {}
    node, fs, gpu = params.get("node"), params.get("filesystem"), params.get("gpu")
    found = [("node", node if isinstance(node, str) else None),
             ("filesystem", getattr(fs, "path", None)),
             ("gpu", gpu if isinstance(gpu, int) and not isinstance(gpu, bool) else None)]
    return [(key, value) for key, value in found if value is not None]


def entries(config: pytest.Config, cases: Mapping[str, int]) -> tuple[
        list[DisabledEntry], list[DisabledEntry]]:
    """The run's entries in force (with how many of its cases each skipped: `cases`, per
    clause) and those expired, as the end record and verdict.json list them."""
    found = config.stash.get(DISABLED_KEY, None) or Disabling()
    return ([{"clause": e.clause, "reason": e.reason, "until": e.until,
              "cases": cases.get(e.clause, 0)} for e in found.in_force],
            [{"clause": e.clause, "reason": e.reason, "until": e.until}
             for e in found.expired])
