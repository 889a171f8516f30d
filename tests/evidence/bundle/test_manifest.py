"""manifest.py: the in-toto Statement of a run directory (every regular file with its
SHA-256 and size, links and the manifest itself left out), sealed in a DSSE envelope."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from pytest_cluster.errors import BundleError
from pytest_cluster.evidence.bundle.dsse import Envelope, Signature
from pytest_cluster.evidence.bundle.manifest import (
    MANIFEST,
    PREDICATE_TYPE,
    digest,
    evidence_files,
    seal,
    sha256_file,
)
from tests.evidence.bundle.test_bundle import PREDICATE, statement_of


def test_the_manifest_lists_every_file_with_its_hash_and_size(run_dir: Path) -> None:
    seal(run_dir, PREDICATE, [])
    statement = statement_of(run_dir)
    assert statement["_type"] == "https://in-toto.io/Statement/v1"
    assert statement["predicateType"] == PREDICATE_TYPE
    assert statement["predicate"] == PREDICATE
    assert [(s["name"], s["annotations"]["size"]) for s in statement["subject"]] == [
        ("junit.xml", 38), ("probes/gpu-1.json", 3), ("probes/gpu-1.lock", 0),
        ("results.jsonl", 32)]
    assert statement["subject"][0]["digest"] == {
        "sha256": hashlib.sha256((run_dir / "junit.xml").read_bytes()).hexdigest()}
    assert not list(run_dir.glob(".*.tmp"))


def test_links_and_the_manifest_itself_are_no_evidence(run_dir: Path, tmp_path: Path) -> None:
    (tmp_path / "outside.json").write_text("{}")
    (run_dir / "probes" / "link.json").symlink_to(tmp_path / "outside.json")
    (run_dir / "linked").symlink_to(run_dir / "probes")
    (run_dir / MANIFEST).write_text("{}")
    assert list(evidence_files(run_dir)) == [
        "junit.xml", "probes/gpu-1.json", "probes/gpu-1.lock", "results.jsonl"]


def test_the_hash_and_size_of_a_file_and_of_the_manifest(run_dir: Path) -> None:
    data = (run_dir / "results.jsonl").read_bytes()
    assert sha256_file(run_dir / "results.jsonl") == (hashlib.sha256(data).hexdigest(),
                                                      len(data))
    seal(run_dir, PREDICATE, [])
    assert digest(run_dir / MANIFEST) == hashlib.sha256(
        (run_dir / MANIFEST).read_bytes()).hexdigest()


class _Signer:
    keyid = "test k"

    def sign(self, data: bytes) -> Signature:
        return Signature(self.keyid, hashlib.sha256(data).digest())


class _Failing:
    keyid = "test broken"

    def sign(self, data: bytes) -> Signature:
        raise BundleError("broken: no key")


def test_each_signer_signs_the_encoding_and_a_failed_one_is_left_out(run_dir: Path) -> None:
    envelope, failed = seal(run_dir, PREDICATE, [_Failing(), _Signer()])
    assert failed == ("broken: no key",)
    assert envelope.signatures == (
        Signature("test k", hashlib.sha256(envelope.signed_bytes()).digest()),)
    written = Envelope.from_json(json.loads((run_dir / MANIFEST).read_text()), "m")
    assert written == envelope
