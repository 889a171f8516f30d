"""The validated contract spec as frozen, typed records. Nothing else reads raw YAML."""

from __future__ import annotations

from dataclasses import dataclass, field

from pytest_cluster.requirement import Requirement, VersionRequirement


@dataclass(frozen=True)
class Clause:
    """One promise of the contract: where it is written and what it requires."""

    key: str  # e.g. "storage[/data].write"
    line: int
    requirement: Requirement


@dataclass(frozen=True)
class VersionClause:
    key: str  # e.g. "host.software.torch"
    line: int
    name: str  # e.g. "torch"
    requirement: VersionRequirement


@dataclass(frozen=True)
class ClusterSpec:
    name: str
    nodes: tuple[str, ...]
    launcher: str
    python: str
    probe_timeout_s: float
    parallel: int


@dataclass(frozen=True)
class HostSpec:
    cpu_cores: Clause | None = None
    cpu_threads: Clause | None = None
    memory: Clause | None = None
    software: tuple[VersionClause, ...] = ()
    same_software: bool = True


@dataclass(frozen=True)
class StorageSpec:
    path: str
    index: int
    shared: bool
    python: str
    io_size_bytes: int
    metadata_files: int
    import_repeats: int
    cold_cache: bool
    capacity: Clause | None = None
    free: Clause | None = None
    write: Clause | None = None
    read: Clause | None = None
    metadata: Clause | None = None
    import_torch: Clause | None = None

    def clause(self, name: str) -> Clause | None:
        value = getattr(self, name)
        assert value is None or isinstance(value, Clause), name
        return value


@dataclass(frozen=True)
class Spec:
    file: str
    sha256: str
    cluster: ClusterSpec
    host: HostSpec = field(default_factory=HostSpec)
    storage: tuple[StorageSpec, ...] = ()

    def host_clause(self, name: str) -> Clause | None:
        value = getattr(self.host, name)
        assert value is None or isinstance(value, Clause), name
        return value
