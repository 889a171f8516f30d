"""A run directory checked against its manifest: every file's hash and size again, every
changed, missing or added file named, and the signature checked with a public key."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from pytest_cluster.bundle.dsse import IN_TOTO, Envelope
from pytest_cluster.bundle.keys import PublicKey
from pytest_cluster.bundle.manifest import (
    MANIFEST,
    PREDICATE_TYPE,
    STATEMENT_TYPE,
    evidence_files,
    sha256_file,
)
from pytest_cluster.errors import BundleError

_SHOWN = 50  # files named per kind of difference; the rest are counted


@dataclass(frozen=True)
class Subject:
    name: str
    sha256: str
    size: int | None


@dataclass(frozen=True)
class Manifest:
    path: Path
    envelope: Envelope
    subjects: tuple[Subject, ...]
    predicate: dict[str, Any]

    @classmethod
    def read(cls, run_dir: Path) -> Manifest:
        """The manifest of `run_dir`; BundleError naming the file and what is wrong."""
        path = run_dir / MANIFEST
        if not run_dir.is_dir():
            raise BundleError(f"{run_dir}: not a directory (expected a run's evidence "
                              f"directory, e.g. reports/latest)")
        try:
            data = json.loads(path.read_bytes())
        except FileNotFoundError:
            raise BundleError(f"{path}: no manifest: this directory was not sealed by "
                              f"pytest-cluster (runs write one at their end)") from None
        except (OSError, ValueError) as exc:
            raise BundleError(f"{path}: cannot read the manifest: {exc}") from None
        where = str(path)
        envelope = Envelope.from_json(data, where)
        if envelope.payload_type != IN_TOTO:
            raise BundleError(f"{where}: payloadType {envelope.payload_type!r}; expected "
                              f"{IN_TOTO!r}")
        statement = envelope.statement(where)
        if statement.get("_type") != STATEMENT_TYPE or \
                statement.get("predicateType") != PREDICATE_TYPE:
            raise BundleError(f"{where}: not a pytest-cluster evidence statement (expected "
                              f"_type {STATEMENT_TYPE} and predicateType {PREDICATE_TYPE})")
        predicate = statement.get("predicate")
        return cls(path, envelope, _subjects(statement.get("subject"), where),
                   predicate if isinstance(predicate, dict) else {})


def _subjects(listed: object, where: str) -> tuple[Subject, ...]:
    if not isinstance(listed, list):
        raise BundleError(f"{where}: subject: expected a list of files")
    found = []
    for index, each in enumerate(listed):
        name = each.get("name") if isinstance(each, dict) else None
        digest = each.get("digest") if isinstance(each, dict) else None
        sha = digest.get("sha256") if isinstance(digest, dict) else None
        if not isinstance(name, str) or not isinstance(sha, str):
            raise BundleError(f"{where}: subject[{index}]: expected a name and a sha256 "
                              f"digest")
        parts = PurePosixPath(name).parts
        if not parts or name.startswith("/") or ".." in parts or "\\" in name:
            raise BundleError(f"{where}: subject[{index}]: {name!r} is not a path inside "
                              f"the run directory")
        annotations = each.get("annotations")
        size = annotations.get("size") if isinstance(annotations, dict) else None
        found.append(Subject(name, sha, size if isinstance(size, int) else None))
    return tuple(found)


@dataclass(frozen=True)
class Verdict:
    run_dir: Path
    manifest_sha256: str
    checked: int
    changed: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    added: tuple[str, ...] = ()
    signed_by: tuple[str, ...] = ()
    key: str | None = None  # the fingerprint checked against, if a key was given
    signature_problem: str | None = None
    predicate: dict[str, Any] = field(default_factory=dict)

    @property
    def files_hold(self) -> bool:
        return not (self.changed or self.missing or self.added)

    @property
    def ok(self) -> bool:
        """Every file as listed, and (with a key) signed by that key."""
        return self.files_hold and (self.key is None or self.signature_problem is None)

    def lines(self) -> list[str]:
        out = [f"manifest: {self.run_dir / MANIFEST} (sha256 {self.manifest_sha256})"]
        run = self.predicate
        if run:
            out.append(f"run: {run.get('cluster', '?')}, {run.get('started_at', '?')} to "
                       f"{run.get('ended_at', '?')} on {run.get('controller', '?')}, "
                       f"spec {run.get('spec', {}).get('sha256', '?')}")
        for kind, names in (("CHANGED", self.changed), ("MISSING", self.missing),
                            ("ADDED", self.added)):
            out += [f"{kind}: {name}" for name in names[:_SHOWN]]
            if len(names) > _SHOWN:
                out.append(f"{kind}: ... and {len(names) - _SHOWN} more")
        listed = self.checked
        out.append(f"files: {listed - len(self.changed) - len(self.missing)} of {listed} "
                   f"as listed" + ("" if self.files_hold else
                                   f"; {len(self.changed)} changed, {len(self.missing)} "
                                   f"missing, {len(self.added)} added"))
        out.append(self._signature_line())
        out.append("VERIFIED" if self.ok else "NOT VERIFIED")
        return out

    def _signature_line(self) -> str:
        if not self.signed_by:
            return ("signature: UNSIGNED - anyone could have rewritten the files and the "
                    "manifest together" + (f"; expected a signature by {self.key}"
                                           if self.key else ""))
        by = ", ".join(self.signed_by)
        if self.key is None:
            return f"signature: by {by}; NOT CHECKED (give --key PUBKEY to check it)"
        if self.signature_problem is None:
            return f"signature: valid, by {self.key}"
        return f"signature: INVALID for {self.key}: {self.signature_problem}"


def verify(run_dir: Path, key: PublicKey | None = None) -> Verdict:
    manifest = Manifest.read(run_dir)
    listed = {s.name: s for s in manifest.subjects}
    changed, missing = [], []
    for name, subject in listed.items():
        path = run_dir / name
        if path.is_symlink() or not path.is_file():
            missing.append(name)
            continue
        sha, size = sha256_file(path)
        if sha != subject.sha256:
            was = f"{subject.size} bytes" if subject.size is not None else "listed"
            changed.append(f"{name} (sha256 {sha}, {size} bytes; {was} with sha256 "
                           f"{subject.sha256})")
    added = [name for name in evidence_files(run_dir) if name not in listed]
    envelope = manifest.envelope
    problem = None
    if key is not None:
        problem = _signature_problem(envelope, key)
    return Verdict(run_dir, sha256_file(manifest.path)[0], len(listed), tuple(changed),
                   tuple(missing), tuple(added), tuple(s.keyid for s in envelope.signatures),
                   key.fingerprint if key is not None else None, problem, manifest.predicate)


def _signature_problem(envelope: Envelope, key: PublicKey) -> str | None:
    """None if a signature of the envelope is `key`'s and valid; else why not."""
    if not envelope.signatures:
        return "the manifest is unsigned"
    mine = [s for s in envelope.signatures if key.matches(s.keyid)]
    if not mine:
        return (f"not signed by this key (signed by: "
                f"{', '.join(s.keyid for s in envelope.signatures)})")
    problems = [key.check(s.keyid, s.sig, envelope.signed_bytes()) for s in mine]
    return None if None in problems else "; ".join(p for p in problems if p)
