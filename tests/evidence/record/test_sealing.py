"""sealing.py: the end of a run's evidence: the signers the options name, loaded before
any test runs; what the manifest says of the run; the seal and the terminal's last word
on it."""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_cluster import __version__
from pytest_cluster.contract import parse_spec
from pytest_cluster.evidence.bundle.keys import Ed25519FileSigner
from pytest_cluster.evidence.bundle.manifest import MANIFEST, digest
from pytest_cluster.evidence.record import sealing
from pytest_cluster.evidence.record.sealing import (
    Sealed,
    predicate,
    seal_run,
    sealed_line,
    signers,
    source_commit,
)
from pytest_cluster.units import utc
from tests.evidence.bundle.test_bundle import PREDICATE, ed25519_key

ROOT = Path(__file__).resolve().parents[3]
SPEC = "cluster: {name: c1, nodes: n1}\nhost: {cpu_cores: 8}\n"


def config(**options: Any) -> Any:
    """A pytest.Config as far as sealing reads it: its options and how it was invoked."""
    values = {"cluster_sign_key": None, "cluster_ssh_sign_key": None, **options}
    return SimpleNamespace(getoption=values.__getitem__, invocation_params=SimpleNamespace(
        args=("--cluster=t.yaml", "-x"), dir=Path("/work")))


def test_no_key_named_is_no_signer() -> None:
    assert signers(config()) == ()


@pytest.mark.parametrize(("option", "what"), [
    ("cluster_sign_key", "--cluster-sign-key=: expected the path of an Ed25519 private key "
                         "file"),
    ("cluster_ssh_sign_key", "--cluster-ssh-sign-key=: expected the path of an OpenSSH key "
                             "file"),
])
def test_an_empty_key_option_is_a_usage_error(option: str, what: str) -> None:
    with pytest.raises(pytest.UsageError) as caught:
        signers(config(**{option: " "}))
    assert str(caught.value) == (f"{what}, got an empty value (an unset variable?); leave "
                                 "the option out to run unsigned")


def test_a_key_that_cannot_sign_is_a_usage_error_before_any_test(tmp_path: Path) -> None:
    with pytest.raises(pytest.UsageError, match=rf"^{tmp_path / 'none.pem'}: cannot read "
                                                r"the signing key: "):
        signers(config(cluster_sign_key=str(tmp_path / "none.pem")))
    private, _, _ = ed25519_key(tmp_path, "k")
    (signer,) = signers(config(cluster_sign_key=str(private)))
    assert signer.keyid == Ed25519FileSigner.load(private).keyid


def test_the_predicate_says_what_run_made_the_files() -> None:
    spec = parse_spec(SPEC, "t.yaml")
    said = predicate(config(), spec, 1795395060.0, 1795395120.0, ["/elsewhere/junit.xml"],
                     ["the HTML report: disk full"])
    assert said["cluster"] == "c1"
    assert said["spec"] == {"file": "t.yaml", "sha256": spec.sha256, "text": SPEC}
    assert said["command"] == {"args": ["pytest", "--cluster=t.yaml", "-x"], "dir": "/work"}
    assert (said["tool"]["name"], said["tool"]["version"]) == ("pytest-cluster", __version__)
    assert (said["started_at"], said["ended_at"]) == (utc(1795395060.0), utc(1795395120.0))
    assert said["controller"] == socket.gethostname()
    assert said["not_covered"] == ["/elsewhere/junit.xml"]
    assert said["failures"] == ["the HTML report: disk full"]
    assert "failures" not in predicate(config(), spec, 0.0, 0.0, [])


def test_the_source_commit_is_the_checkouts_head_or_none_when_installed(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    found = source_commit()
    if (ROOT / ".git").exists() and Path(sealing.__file__).resolve().is_relative_to(ROOT):
        head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"],
                              capture_output=True, text=True, check=True, timeout=10)
        assert found is not None and found["commit"] == head.stdout.strip()
    monkeypatch.setattr(sealing, "_SOURCE", tmp_path)
    assert source_commit() is None


def test_the_seal_names_its_signers_and_its_own_hash(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (run / "results.jsonl").write_text("{}\n")
    private, _, _ = ed25519_key(tmp_path, "k")
    signer = Ed25519FileSigner.load(private)
    sealed = seal_run(run, PREDICATE, (signer,))
    assert sealed == Sealed(run / MANIFEST, digest(run / MANIFEST), (signer.keyid,), ())


def test_the_last_line_says_where_the_manifest_is_and_how_to_check_it() -> None:
    signed = Sealed(Path("/r/run/manifest.intoto.json"), "ab" * 32, ("ed25519 SHA256:a",
                                                                     "sshsig SHA256:b"))
    assert sealed_line(signed) == (
        f"manifest: /r/run/manifest.intoto.json sha256 {'ab' * 32}, signed by ed25519 "
        "SHA256:a, sshsig SHA256:b; check it: pytest-cluster verify /r/run --key PUBKEY")
    unsigned = Sealed(signed.path, "ab" * 32, (), ("k.pem: agent refused",))
    assert sealed_line(unsigned, ("the HTML report: disk full",)).splitlines() == [
        f"manifest: /r/run/manifest.intoto.json sha256 {'ab' * 32}, UNSIGNED; check it: "
        "pytest-cluster verify /r/run",
        "SIGNING FAILED, that signature is missing: k.pem: agent refused",
        "EVIDENCE INCOMPLETE (recorded in the manifest): the HTML report: disk full"]
