"""What a clause of the contract is, as one record: `Declaration` (its section and key, the
kind of value written, its unit and comparison, the probe field it reads: `Reads`), and the
levels a check runs at, and what its failure means to the people who fix it: `Fault` (a
stable code, the action to take, who takes it: `Actor`). The table of every clause is
contract/clauses.py; an installed extension declares its own with these records
(contract/extensions.py)."""

from __future__ import annotations

import enum
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_cluster.contract.model import Spec
    from pytest_cluster.units import Dim


#: How heavy a check is, as a marker to select with -m (README: each level's duration).
SANITY = "sanity"  # no load: counts, models, NVML health, versions, reachability; seconds
ACCEPTANCE = "acceptance"  # the full suite: benchmarks under load (the default)
STRESS = "stress"  # long sustained load; opt-in: run only when -m names it
LEVELS = (SANITY, ACCEPTANCE, STRESS)


class Value(enum.Enum):
    """What a key of the spec holds."""

    QUANTITY = "quantity"  # a comparison and a quantity of `dim`: '>= 10 GB/s'
    SHARE = "share"  # a share of a total ('>= 95%') or a quantity of `dim`
    RULE = "rule"  # a health rule, on unless `false`; with `dim`, a number is a count
    FLAG = "flag"  # true or false switches a promise (same_software, shared)
    VERSIONS = "versions"  # a map of `members` to version bounds
    MEMBERS = "members"  # a map of `members` to quantities of `dim` (matmul dtypes)
    NAME = "name"  # a name the section's parser knows (a GPU model)
    IMPLIED = "implied"  # not written: promised with its section (or when `when` says)
    SETTING = "setting"  # how clauses are measured (io_size); not a clause


class Actor(str, enum.Enum):
    """Who acts on a failure: the provider's hardware team (the node: its parts, firmware
    and image), its network team (NICs, cables, transceivers, switches), the storage team,
    the buyer (the contract's spec asks what cannot be, or changed), or the tool itself
    (its own fault or this machine's: no node's)."""

    PROVIDER_HARDWARE = "provider-hardware"
    PROVIDER_NETWORK = "provider-network"
    STORAGE = "storage"
    BUYER_SPEC = "buyer-spec"
    TOOL = "tool"


#: A fault code: `PC-` and upper-case words joined by '-' ('PC-GPU-ROWREMAP').
CODE = re.compile(r"PC(-[A-Z0-9]+)+")


@dataclass(frozen=True)
class Fault:
    """What a failure means to whoever is paged: a stable `code` (`PC-GPU-ROWREMAP`: what
    `sinfo -R` groups drained nodes by; it never changes its meaning,
    tests/contract/fault_codes.txt), the `action` a technician takes ('reset the GPU;
    RMA it if a remap failed') and who takes it (`actor`). ValueError for a code not of
    the form `PC-WORD(-WORD)*`, an empty action or an actor that is not an Actor."""

    code: str
    action: str
    actor: Actor

    def __post_init__(self) -> None:
        if not isinstance(self.code, str) or not CODE.fullmatch(self.code):
            raise ValueError(f"fault code {self.code!r}: expected PC- and upper-case words "
                             "joined by '-', e.g. 'PC-GPU-ROWREMAP'")
        if not isinstance(self.action, str) or not self.action.strip():
            raise ValueError(f"fault {self.code}: its action is empty (say what a "
                             "technician does)")
        if not isinstance(self.actor, Actor):
            raise ValueError(f"fault {self.code}: its actor {self.actor!r} is not an Actor "
                             f"({', '.join(a.value for a in Actor)})")


def hardware(code: str, action: str) -> Fault:
    """A fault the provider's hardware team acts on (the node: parts, firmware, image)."""
    return Fault(code, action, Actor.PROVIDER_HARDWARE)


def network(code: str, action: str) -> Fault:
    """A fault the provider's network team acts on (NICs, cables, switches)."""
    return Fault(code, action, Actor.PROVIDER_NETWORK)


def storage(code: str, action: str) -> Fault:
    """A fault the storage team acts on."""
    return Fault(code, action, Actor.STORAGE)


@dataclass(frozen=True)
class Reads:
    """Which probe measures a clause, where in its payload the number is, and how it was
    measured. With a `field`, the clause's test is made from this: the number compared
    with the clause (`table`); without, a test of its own reads `part`."""

    probe: str  # e.g. "host"
    part: str = ""  # the section of the payload, e.g. "cpu"
    field: str = ""  # the number in that section, e.g. "cores"
    method: str | None = None  # how it is measured, when the probe does not say
    method_field: str = "method"  # where in `part` the probe says how it measured

    @property
    def table(self) -> bool:
        return bool(self.field)


@dataclass(frozen=True)
class Declaration:
    """One clause (or setting) of a section, as the contract spells it."""

    section: str
    key: str
    value: Value
    dim: Dim | None = None
    op: str = ">="  # the comparison of a bare number ('cpu_cores: 112' means >= 112)
    default: str | None = None  # the requirement when the spec leaves it out ('<= 85 C')
    text: str = ""  # what a rule (or a flag, or an implied clause) requires
    on: tuple[object, ...] = (True,)  # the YAML values that keep a rule on
    members: tuple[str, ...] = ()  # of a family (VERSIONS, MEMBERS, FLAG per member)
    expected: str = ""  # SHARE: both forms in words, for the error
    reads: Reads | None = None  # the probe that measures it
    needs_nodes: int = 1  # checked only on a cluster of this many nodes or more
    when: Callable[[Spec], bool] | None = None  # promised when; None: when written
    level: str = ACCEPTANCE  # SANITY: checked without loading anything
    #: the level the spec's value puts it at, where that depends on the value (gpus.dcgm_diag:
    #: r1 and r2 acceptance, r3 and r4 stress); None: `level`. `level` is then the lowest
    level_when: Callable[[Spec], str] | None = None
    last: bool = False  # its cases run after every other case (what the run did to a node)
    #: the key of the section's map that holds it ('checkpoint': storage[].checkpoint.write);
    #: '' for a key of the section itself
    within: str = ""
    #: a NIC's or network link's rate, which the world states in bits (400 Gb/s NDR): one
    #: faster than any NIC is warned of as bytes written for bits (clause_parsers.slips)
    link: bool = False
    #: what its failure means to whoever fixes it: its code, action and actor. Every clause
    #: declares one (a setting none); a family's members share it (`host.software.torch`
    #: is PC-HOST-SOFTWARE, the member named in the failure's clause)
    fault: Fault | None = None

    def __post_init__(self) -> None:
        if self.is_clause and not isinstance(self.fault, Fault):
            raise ValueError(f"clause {self.id}: declare its fault, fault=Fault(code, "
                             "action, actor) (docs/faults.md)")
        if not self.is_clause and self.fault is not None:
            raise ValueError(f"setting {self.id}: a setting is no clause and fails nothing: "
                             "it has no fault")

    def level_in(self, spec: Spec | None) -> str:
        """Its level in `spec` (level_when's, where the value decides it; else `level`)."""
        if spec is None or self.level_when is None:
            return self.level
        return self.level_when(spec)

    @property
    def id(self) -> str:
        """The family's name, e.g. 'storage.write' (the `clause` marker)."""
        return f"{self.section}.{self.key}"

    def name(self, where: str | None = None, member: str | None = None) -> str:
        """An instance's name: 'storage[/data].write', 'host.software.torch'."""
        base = self.id if where is None else f"{self.section}[{where}].{self.key}"
        return base if member is None else f"{base}.{member}"

    @property
    def is_clause(self) -> bool:
        return self.value is not Value.SETTING

    @property
    def written(self) -> bool:
        """Whether it is a key of the spec (an implied clause is not)."""
        return self.value is not Value.IMPLIED

    @property
    def written_as(self) -> str:
        """Its key in the map that holds it ('write' of storage[].checkpoint)."""
        return self.key[len(self.within) + 1:] if self.within else self.key

    @property
    def table(self) -> bool:
        """Whether its test is made from this declaration (a probe field compared)."""
        return self.reads is not None and self.reads.table

    @property
    def test(self) -> str:
        """The name of the test made from this declaration (when `table`)."""
        return f"{TEST_PREFIX.get(self.section, f'test_{self.section}_')}{self.key}"


#: How the acceptance suite names a section's table-made tests (kept as users know them:
#: `test_cpu_cores[node01]`, `test_storage_write[node01-/data]`, `test_gpu_h2d[...]`); any
#: other section's are `test_<section>_<key>`.
TEST_PREFIX = {"host": "test_", "storage": "test_storage_", "gpus": "test_gpu_"}
