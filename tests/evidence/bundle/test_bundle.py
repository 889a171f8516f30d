"""The evidence bundle end to end: a run sealed with Ed25519 and OpenSSH signatures, and
`pytest-cluster verify` on changed, missing, added files, wrong keys and no signature."""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from pytest_cluster.cli import main
from pytest_cluster.errors import BundleError
from pytest_cluster.evidence.bundle.dsse import Envelope, Signature
from pytest_cluster.evidence.bundle.keys import Ed25519FileSigner, PublicKey, SshKeygenSigner
from pytest_cluster.evidence.bundle.manifest import MANIFEST, seal
from pytest_cluster.evidence.bundle.verify import verify
from pytest_cluster.evidence.record.sealing import seal_run, sealed_line

PREDICATE = {"cluster": "c1", "started_at": "2026-11-23T10:00:00Z",
             "ended_at": "2026-11-23T10:05:00Z", "controller": "login1",
             "spec": {"sha256": "ab" * 32}}


def ed25519_key(tmp_path: Path, name: str) -> tuple[Path, Path, Path]:
    """(private PEM, public PEM, public OpenSSH) files of a new Ed25519 key."""
    key = Ed25519PrivateKey.generate()
    private, public, openssh = (tmp_path / f"{name}.pem", tmp_path / f"{name}.pub.pem",
                                tmp_path / f"{name}.pub")
    private.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                          serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))
    public.write_bytes(key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    openssh.write_bytes(key.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH) + b" me@host\n")
    return private, public, openssh


def statement_of(run_dir: Path) -> dict[str, Any]:
    envelope = Envelope.from_json(json.loads((run_dir / MANIFEST).read_text()), "m")
    return envelope.statement("m")


def test_an_untouched_signed_run_verifies(run_dir: Path, tmp_path: Path) -> None:
    private, public, openssh = ed25519_key(tmp_path, "k")
    seal(run_dir, PREDICATE, [Ed25519FileSigner.load(private)])
    for key in (public, openssh):  # either form of the public key checks it
        verdict = verify(run_dir, PublicKey.load(key))
        assert verdict.ok, verdict.lines()
        assert verdict.lines()[-2] == f"signature: valid, by {verdict.key}"
        assert verdict.lines()[-1] == f"VERIFIED: FILES MATCH, SIGNED BY {verdict.key}"
    assert main(["verify", str(run_dir), "--key", str(openssh)]) == 0


def test_one_byte_changed_in_junit_is_named(run_dir: Path, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    private, public, _ = ed25519_key(tmp_path, "k")
    seal(run_dir, PREDICATE, [Ed25519FileSigner.load(private)])
    junit = run_dir / "junit.xml"
    listed = hashlib.sha256(junit.read_bytes()).hexdigest()
    junit.write_bytes(junit.read_bytes().replace(b"<testsuite/>", b"<testsuitX/>"))
    found = hashlib.sha256(junit.read_bytes()).hexdigest()
    verdict = verify(run_dir, PublicKey.load(public))
    assert not verdict.ok and verdict.signature_problem is None  # the manifest is intact
    assert [c.name for c in verdict.changed] == ["junit.xml"]
    assert main(["verify", str(run_dir), "--key", str(public)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert f"CHANGED: junit.xml: listed sha256 {listed} found {found}" in out
    assert "files: 3 of 4 as listed; 1 changed, 0 missing, 0 added, 0 links or other " \
        "entries" in out
    assert out[-1] == f"FILES CHANGED, SIGNED BY {verdict.key}"  # not VERIFIED


def test_a_removed_file_and_an_added_file_are_named(run_dir: Path) -> None:
    seal(run_dir, PREDICATE, [])
    (run_dir / "probes" / "gpu-1.json").unlink()
    (run_dir / "probes" / "extra.json").write_text("{}")
    verdict = verify(run_dir)
    assert verdict.missing == ("probes/gpu-1.json",)
    assert verdict.added == ("probes/extra.json",)
    assert not verdict.ok
    lines = verdict.lines()
    assert "MISSING: probes/gpu-1.json" in lines and "ADDED: probes/extra.json" in lines


def test_a_wrong_key_fails(run_dir: Path, tmp_path: Path,
                           capsys: pytest.CaptureFixture[str]) -> None:
    private, _, _ = ed25519_key(tmp_path, "signer")
    _, other, _ = ed25519_key(tmp_path, "other")
    seal(run_dir, PREDICATE, [Ed25519FileSigner.load(private)])
    verdict = verify(run_dir, PublicKey.load(other))
    assert verdict.files_hold and not verdict.ok
    assert "not signed by this key (signed by: ed25519 SHA256:" in str(
        verdict.signature_problem)
    assert main(["verify", str(run_dir), "--key", str(other)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[-2].startswith("signature: INVALID for SHA256:")
    assert out[-1] == "FILES MATCH, SIGNATURE INVALID"


def test_a_manifest_rewritten_after_signing_fails(run_dir: Path, tmp_path: Path) -> None:
    """Files edited, and the manifest's hashes edited to match, the signature kept: the
    signature no longer holds."""
    private, public, _ = ed25519_key(tmp_path, "k")
    seal(run_dir, PREDICATE, [Ed25519FileSigner.load(private)])
    signed = json.loads((run_dir / MANIFEST).read_text())
    (run_dir / "junit.xml").write_text("<testsuites/>\n")
    seal(run_dir, PREDICATE, [])  # a forger's manifest, over the edited file
    forged = json.loads((run_dir / MANIFEST).read_text())
    forged["signatures"] = signed["signatures"]
    (run_dir / MANIFEST).write_text(json.dumps(forged))
    verdict = verify(run_dir, PublicKey.load(public))
    assert verdict.files_hold and not verdict.ok
    assert "does not match the manifest" in str(verdict.signature_problem)
    assert verdict.final_line() == "FILES MATCH, SIGNATURE INVALID"
    # without a key: the files match the forged manifest, and that is all it says
    assert verify(run_dir).final_line() == "FILES MATCH, SIGNATURE NOT CHECKED"


class _Refusing:
    keyid = "sshsig SHA256:refusing"

    def sign(self, data: bytes) -> Signature:
        raise BundleError("agent.pub: ssh-keygen -Y sign failed (exit 255): agent refused")


def test_a_signer_that_fails_leaves_its_signature_out_and_says_why(
        run_dir: Path, tmp_path: Path) -> None:
    private, public, _ = ed25519_key(tmp_path, "k")
    envelope, failed = seal(run_dir, PREDICATE, [_Refusing(), Ed25519FileSigner.load(private)])
    assert failed == ("agent.pub: ssh-keygen -Y sign failed (exit 255): agent refused",)
    assert len(envelope.signatures) == 1
    assert verify(run_dir, PublicKey.load(public)).ok  # the other signature holds
    sealed = seal_run(run_dir, PREDICATE, (_Refusing(),))
    assert sealed.signed_by == () and sealed.failed == failed
    assert sealed_line(sealed).splitlines() == [
        f"manifest: {run_dir / MANIFEST} sha256 {sealed.sha256}, UNSIGNED; check it: "
        f"pytest-cluster verify {run_dir}",
        f"SIGNING FAILED, that signature is missing: {failed[0]}"]


def test_an_unsigned_bundle_says_unsigned_and_fails_when_a_key_is_asked(
        run_dir: Path, tmp_path: Path) -> None:
    seal(run_dir, PREDICATE, [])
    plain = verify(run_dir)
    assert plain.ok and plain.signed_by == ()
    assert plain.lines()[-2].startswith("signature: UNSIGNED")
    assert plain.lines()[-1] == "FILES MATCH, UNSIGNED"
    _, public, _ = ed25519_key(tmp_path, "k")
    keyed = verify(run_dir, PublicKey.load(public))
    assert not keyed.ok
    assert keyed.lines()[-2].startswith("signature: UNSIGNED")
    assert "expected a signature by SHA256:" in keyed.lines()[-2]
    assert keyed.lines()[-1] == "FILES MATCH, UNSIGNED"


def test_a_signed_bundle_without_a_key_says_the_signature_was_not_checked(
        run_dir: Path, tmp_path: Path) -> None:
    private, _, _ = ed25519_key(tmp_path, "k")
    seal(run_dir, PREDICATE, [Ed25519FileSigner.load(private)])
    verdict = verify(run_dir)
    lines = verdict.lines()
    assert verdict.ok and not verdict.verified  # exit 0: nothing was asked of the signature
    assert "NOT CHECKED (give --key PUBKEY to check it)" in lines[-2]
    assert lines[-1] == "FILES MATCH, SIGNATURE NOT CHECKED"


def test_unreadable_bundles_and_keys_are_usage_errors(run_dir: Path, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    assert main(["verify", str(run_dir)]) == 2  # not sealed
    assert "no manifest" in capsys.readouterr().err
    assert main(["verify", str(tmp_path / "nowhere")]) == 2
    seal(run_dir, PREDICATE, [])
    manifest = run_dir / MANIFEST
    envelope = json.loads(manifest.read_text())
    statement = statement_of(run_dir)
    statement["subject"].append({"name": "../../etc/passwd", "digest": {"sha256": "0"}})
    envelope["payload"] = base64.b64encode(json.dumps(statement).encode()).decode()
    manifest.write_text(json.dumps(envelope))
    assert main(["verify", str(run_dir)]) == 2
    assert "'../../etc/passwd' is not a path inside the run directory" in \
        capsys.readouterr().err
    garbage = tmp_path / "garbage.pub"
    garbage.write_text("not a key\n")
    assert main(["verify", str(run_dir), "--key", str(garbage)]) == 2
    assert "not a public key" in capsys.readouterr().err


def ssh_key(tmp_path: Path, name: str) -> Path:
    path = tmp_path / name
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "me@host",
                    "-f", str(path)], check=True, timeout=30)
    return path


@pytest.mark.realcomponents
def test_openssh_signatures_through_ssh_keygen(run_dir: Path, tmp_path: Path) -> None:
    if shutil.which("ssh-keygen") is None:
        pytest.skip("needs OpenSSH's ssh-keygen")
    key, other = ssh_key(tmp_path, "id"), ssh_key(tmp_path, "other")
    signer = SshKeygenSigner(key)
    seal(run_dir, PREDICATE, [signer])
    done = subprocess.run(["ssh-keygen", "-lf", str(key) + ".pub"], capture_output=True,
                          text=True, check=True)
    verdict = verify(run_dir, PublicKey.load(Path(str(key) + ".pub")))
    assert verdict.ok, verdict.lines()
    assert verdict.signed_by == (f"sshsig {done.stdout.split()[1]}",)  # ssh-keygen -l's
    assert not verify(run_dir, PublicKey.load(Path(str(other) + ".pub"))).ok
    # both kinds at once: an Ed25519 key file and the user's OpenSSH key
    private, public, _ = ed25519_key(tmp_path, "k")
    seal(run_dir, PREDICATE, [Ed25519FileSigner.load(private), signer])
    assert verify(run_dir, PublicKey.load(public)).ok
    assert verify(run_dir, PublicKey.load(Path(str(key) + ".pub"))).ok
    # the OpenSSH private key file also signs as a plain Ed25519 key
    seal(run_dir, PREDICATE, [Ed25519FileSigner.load(key)])
    assert verify(run_dir, PublicKey.load(Path(str(key) + ".pub"))).ok
    # a changed file under an ssh signature
    seal(run_dir, PREDICATE, [signer])
    (run_dir / "results.jsonl").write_text("{}\n")
    assert verify(run_dir, PublicKey.load(Path(str(key) + ".pub"))).changed


SIM_SPEC = """\
cluster: {name: sealed, nodes: "n[1-2]", launcher: sim}
host:
  cpu_cores: ">= 1"
sim:
  gpus_per_node: 8
"""


def test_a_run_signed_with_a_key_file_verifies(pytester: pytest.Pytester,
                                               tmp_path: Path) -> None:
    private, public, _ = ed25519_key(tmp_path, "k")
    (pytester.path / "trial.yaml").write_text(SIM_SPEC)
    result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider",
                                f"--cluster-sign-key={private}")
    assert result.ret == pytest.ExitCode.OK
    signer = Ed25519FileSigner.load(private)
    result.stdout.fnmatch_lines([f"*manifest.intoto.json sha256 *, signed by {signer.keyid}; "
                                 "check it: pytest-cluster verify * --key PUBKEY"])
    run_dir = (pytester.path / "reports" / "latest").resolve()
    verdict = verify(run_dir, PublicKey.load(public))
    assert verdict.ok, verdict.lines()
    assert verdict.predicate["spec"]["text"] == SIM_SPEC
    assert verdict.predicate["cluster"] == "sealed"
    assert f"--cluster-sign-key={private}" in verdict.predicate["command"]["args"]
    assert {"report.html", "junit.xml", "results.jsonl", "verdict.json"} <= {
        p.name for p in run_dir.iterdir()}
    assert f"it is signed with {signer.keyid}" in (run_dir / "report.html").read_text()


def test_an_unusable_signing_key_is_a_usage_error_before_any_test(
        pytester: pytest.Pytester, tmp_path: Path) -> None:
    (pytester.path / "trial.yaml").write_text(SIM_SPEC)
    result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider",
                                f"--cluster-sign-key={tmp_path / 'missing.pem'}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*missing.pem: cannot read the signing key*"])
    assert not (pytester.path / "reports").exists()
