"""keys.py: signing keys and public keys read as bounded regular files, what cannot sign
or check named, fingerprints as ssh-keygen prints them, a signature checked by its kind."""

from __future__ import annotations

import base64
import os
import shutil
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from pytest_cluster.errors import BundleError
from pytest_cluster.evidence.bundle import keys
from pytest_cluster.evidence.bundle.keys import (
    Ed25519FileSigner,
    PublicKey,
    SshKeygenSigner,
    fingerprint,
    sshsig_key,
)
from tests.evidence.bundle.test_bundle import ed25519_key


def test_signing_keys_that_cannot_sign_are_named(tmp_path: Path) -> None:
    from cryptography.hazmat.primitives.asymmetric import ec
    other = tmp_path / "ec.pem"
    other.write_bytes(ec.generate_private_key(ec.SECP256R1()).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    with pytest.raises(BundleError, match="expected an Ed25519 private key"):
        Ed25519FileSigner.load(other)
    with pytest.raises(BundleError, match="cannot read the signing key"):
        Ed25519FileSigner.load(tmp_path / "missing.pem")
    locked = tmp_path / "locked.pem"
    locked.write_bytes(Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"secret")))
    with pytest.raises(BundleError, match="PYTEST_CLUSTER_SIGN_PASSPHRASE"):
        Ed25519FileSigner.load(locked)


@pytest.mark.realcomponents
def test_ssh_keygen_failing_to_sign_is_named(tmp_path: Path) -> None:
    if shutil.which("ssh-keygen") is None:
        pytest.skip("needs OpenSSH's ssh-keygen")
    with pytest.raises(BundleError, match="ssh-keygen -Y sign failed"):
        SshKeygenSigner(tmp_path / "no-such-key").sign(b"data")


def test_a_fingerprint_is_the_unpadded_base64_of_the_sha256() -> None:
    assert fingerprint(b"") == "SHA256:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU"


def test_a_key_file_that_is_no_regular_file_or_too_large_is_not_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fifo = tmp_path / "key.pub"
    os.mkfifo(fifo)  # opened without waiting for a writer
    with pytest.raises(BundleError) as caught:
        PublicKey.load(fifo)
    assert str(caught.value) == (f"{fifo}: cannot read the public key: not a regular file "
                                 "(expected a key file)")
    _, public, _ = ed25519_key(tmp_path, "k")
    monkeypatch.setattr(keys, "KEY_FILE_MAX_BYTES", 10)
    size = public.stat().st_size
    with pytest.raises(BundleError) as caught:
        PublicKey.load(public)
    assert str(caught.value) == (f"{public}: cannot read the public key: {size} bytes "
                                 "(expected a key file of at most 10 bytes)")


def test_the_pem_and_the_openssh_form_of_a_public_key_are_one_key(tmp_path: Path) -> None:
    private, public, openssh = ed25519_key(tmp_path, "k")
    signer = Ed25519FileSigner.load(private)
    pem, line = PublicKey.load(public), PublicKey.load(openssh)
    assert pem.fingerprint == line.fingerprint
    assert signer.keyid == f"ed25519 {pem.fingerprint}"
    assert pem.openssh == openssh.read_bytes().split(b" me@host")[0]


def test_a_signature_is_checked_by_the_key_and_the_kind_its_keyid_names(tmp_path: Path) -> None:
    private, public, _ = ed25519_key(tmp_path, "k")
    signer, key = Ed25519FileSigner.load(private), PublicKey.load(public)
    signature = signer.sign(b"data")
    assert key.check(signature.keyid, signature.sig, b"data") is None
    assert key.check(signature.keyid, signature.sig, b"other") == (
        "does not match the manifest (the manifest or the signature changed)")
    assert key.check("ed25519 SHA256:else", signature.sig, b"data") == (
        "made by another key (ed25519 SHA256:else)")
    assert key.check("", signature.sig, b"data") == "made by another key (no keyid)"
    assert key.check(f"rsa {key.fingerprint}", signature.sig, b"data") == (
        "unknown kind of signature 'rsa'")


@pytest.mark.parametrize("text", [b"", b"not a key\n", b"ssh-ed25519 !!!! me\n"])
def test_what_is_no_public_key_is_named(tmp_path: Path, text: bytes) -> None:
    path = tmp_path / "bad.pub"
    path.write_bytes(text)
    with pytest.raises(BundleError) as caught:
        PublicKey.load(path)
    assert str(caught.value).startswith(
        f"{path}: not a public key (expected a PEM public key or an OpenSSH .pub line): ")


def _armored(blob: bytes) -> bytes:
    return (b"-----BEGIN SSH SIGNATURE-----\n" + base64.b64encode(blob)
            + b"\n-----END SSH SIGNATURE-----\n")


def test_the_signers_key_is_read_from_an_sshsig_signature() -> None:
    key = b"ssh-ed25519 wire form"
    blob = b"SSHSIG" + (1).to_bytes(4, "big") + len(key).to_bytes(4, "big") + key + b"rest"
    assert sshsig_key(_armored(blob)) == key
    for armored, said in ((b"-----BEGIN-----\n!!!!\n", "its body is not base64"),
                          (_armored(b"NOTSIG" + bytes(8)), "no SSHSIG header"),
                          (_armored(b"SSHSIG" + bytes(4)), "no SSHSIG header"),
                          (_armored(blob[:14 + 3]), "cut short")):
        with pytest.raises(BundleError) as caught:
            sshsig_key(armored)
        assert str(caught.value) == f"not an SSH signature ({said})"


def test_an_ssh_key_ssh_keygen_cannot_read_is_named_before_the_run(tmp_path: Path) -> None:
    if shutil.which("ssh-keygen") is None:
        pytest.skip("needs OpenSSH's ssh-keygen")
    path = tmp_path / "id"
    path.write_text("not a key\n")
    with pytest.raises(BundleError, match=r"not an OpenSSH key ssh-keygen can read: "):
        SshKeygenSigner.load(path)
