"""The manifest of a run directory: an in-toto Statement v1
(github.com/in-toto/attestation/blob/main/spec/v1/statement.md) whose subjects are every
file of the run with its SHA-256 and size, and whose predicate says what run made them (the
spec's text and hash, the command line, the tool's version, start and end in UTC, the
controller). It is the payload of a DSSE
envelope, signed by each signer given, written last, as `manifest.intoto.json`.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_cluster.errors import BundleError
from pytest_cluster.evidence.bundle.dsse import IN_TOTO, Envelope

if TYPE_CHECKING:
    from pytest_cluster.evidence.bundle.keys import Signer

MANIFEST = "manifest.intoto.json"
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://github.com/pytest-cluster/pytest-cluster/evidence/v1"
_CHUNK = 1 << 20


def sha256_file(path: Path) -> tuple[str, int]:
    """(hex SHA-256, size in bytes) of a file, read in chunks."""
    digest, size = hashlib.sha256(), 0
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size


def evidence_files(run_dir: Path) -> Iterator[str]:
    """Every regular file under `run_dir` but the manifest, as sorted POSIX paths relative
    to it. Links are not followed (a link in a run directory is not evidence)."""
    found = []
    for folder, dirs, files in os.walk(run_dir):
        dirs.sort()
        base = Path(folder)
        for name in files:
            path = base / name
            if path.is_symlink() or not path.is_file():
                continue
            relative = path.relative_to(run_dir).as_posix()
            if relative != MANIFEST:
                found.append(relative)
    yield from sorted(found)


def subjects(run_dir: Path) -> list[dict[str, Any]]:
    listed = []
    for name in evidence_files(run_dir):
        digest, size = sha256_file(run_dir / name)
        listed.append({"name": name, "digest": {"sha256": digest},
                       "annotations": {"size": size}})
    return listed


def statement(run_dir: Path, predicate: dict[str, Any]) -> dict[str, Any]:
    return {"_type": STATEMENT_TYPE, "subject": subjects(run_dir),
            "predicateType": PREDICATE_TYPE, "predicate": predicate}


def seal(run_dir: Path, predicate: dict[str, Any],
         signers: Sequence[Signer]) -> tuple[Envelope, tuple[str, ...]]:
    """Write `run_dir`/manifest.intoto.json over what `run_dir` holds now: (the envelope,
    why each signer that failed did). A failed signer leaves its signature out, never the
    manifest."""
    payload = json.dumps(statement(run_dir, predicate), indent=1, sort_keys=True,
                         allow_nan=False).encode()
    signed = Envelope(IN_TOTO, payload).signed_bytes()
    signatures, failed = [], []
    for signer in signers:
        try:
            signatures.append(signer.sign(signed))
        except BundleError as exc:
            failed.append(str(exc))
    envelope = Envelope(IN_TOTO, payload, tuple(signatures))
    target = run_dir / MANIFEST
    partial = target.with_name(f".{MANIFEST}.tmp")
    partial.write_text(json.dumps(envelope.to_json(), indent=1, allow_nan=False) + "\n",
                       encoding="utf-8")
    os.replace(partial, target)
    return envelope, tuple(failed)


def digest(path: Path) -> str:
    """The manifest file's own SHA-256: what to write down, or quote, to pin the run."""
    return sha256_file(path)[0]
