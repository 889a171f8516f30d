"""Signing a manifest and checking a signature: an Ed25519 key file through the
`cryptography` library, or an OpenSSH key through `ssh-keygen -Y sign` (which can use
ssh-agent). No cryptography is written here.

A signature's keyid says how it was made and by which key: 'ed25519 SHA256:<fp>' or
'sshsig SHA256:<fp>', <fp> the key's OpenSSH fingerprint (what `ssh-keygen -l` prints), so
one public key file checks either kind.
"""

from __future__ import annotations

import base64
import hashlib
import os
import stat
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from pytest_cluster.errors import BundleError
from pytest_cluster.evidence.bundle.dsse import Signature

#: What an OpenSSH signature is for (ssh-keygen -Y ... -n): a signature made for something
#: else (a git commit, a file) does not pass as one of ours.
NAMESPACE = "pytest-cluster-evidence"
#: The passphrase of an encrypted Ed25519 key file, if it is encrypted.
PASSPHRASE_ENV = "PYTEST_CLUSTER_SIGN_PASSPHRASE"  # noqa: S105 - the name of a variable
RAW, SSHSIG = "ed25519", "sshsig"
_TIMEOUT_S = 120  # ssh-keygen may ask ssh-agent, which may ask the user to confirm


class Signer(Protocol):
    @property
    def keyid(self) -> str:
        """How it signs and with which key, as its signatures name it."""
        ...

    def sign(self, data: bytes) -> Signature: ...


def fingerprint(ssh_blob: bytes) -> str:
    """'SHA256:...' of a public key's OpenSSH wire form, as ssh-keygen -l prints it."""
    digest = base64.b64encode(hashlib.sha256(ssh_blob).digest()).decode("ascii")
    return "SHA256:" + digest.rstrip("=")


#: A key file is a few hundred bytes; an authorized_keys file a few KiB. Anything larger,
#: or anything that is not a regular file (/dev/zero, a FIFO), is not read.
KEY_FILE_MAX_BYTES = 1 << 20


def _read(path: Path, what: str) -> bytes:
    """The key file's bytes: a regular file of at most KEY_FILE_MAX_BYTES, read from the
    descriptor that was checked (no swap between the check and the read)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise BundleError(f"{path}: cannot read {what}: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise BundleError(f"{path}: cannot read {what}: not a regular file "
                              f"(expected a key file)")
        if info.st_size > KEY_FILE_MAX_BYTES:
            raise BundleError(f"{path}: cannot read {what}: {info.st_size} bytes (expected a "
                              f"key file of at most {KEY_FILE_MAX_BYTES} bytes)")
        with os.fdopen(os.dup(fd), "rb") as handle:
            data = handle.read(KEY_FILE_MAX_BYTES + 1)
    except OSError as exc:
        raise BundleError(f"{path}: cannot read {what}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if len(data) > KEY_FILE_MAX_BYTES:
        raise BundleError(f"{path}: cannot read {what}: it grew past {KEY_FILE_MAX_BYTES} "
                          f"bytes while being read")
    return data


def _blob(openssh_line: bytes) -> bytes:
    """The wire form of a public key from its 'ssh-ed25519 AAAA... comment' line."""
    return base64.b64decode(openssh_line.split()[1])


@dataclass(frozen=True)
class Ed25519FileSigner:
    """An Ed25519 private key file: PEM (PKCS#8, `openssl genpkey -algorithm ed25519`) or
    OpenSSH (`ssh-keygen -t ed25519`); encrypted ones take PYTEST_CLUSTER_SIGN_PASSPHRASE."""

    key: Ed25519PrivateKey
    keyid: str

    @classmethod
    def load(cls, path: Path) -> Ed25519FileSigner:
        data = _read(path, "the signing key")
        secret = os.environ.get(PASSPHRASE_ENV)
        password = secret.encode() if secret else None
        loader = (serialization.load_ssh_private_key if b"OPENSSH PRIVATE KEY" in data
                  else serialization.load_pem_private_key)
        try:
            key = loader(data, password=password)
        except (ValueError, TypeError, UnsupportedAlgorithm) as exc:
            hint = (f" (encrypted keys: set {PASSPHRASE_ENV}, or sign with the key in "
                    f"ssh-agent: --cluster-ssh-sign-key)" if "encrypt" in str(exc).lower()
                    or "password" in str(exc).lower() else "")
            raise BundleError(f"{path}: not a usable private key file: {exc}{hint}") from None
        if not isinstance(key, Ed25519PrivateKey):
            raise BundleError(f"{path}: a {type(key).__name__.removesuffix('PrivateKey')} "
                              f"key; expected an Ed25519 private key (for other kinds of "
                              f"key: --cluster-ssh-sign-key)")
        line = key.public_key().public_bytes(serialization.Encoding.OpenSSH,
                                             serialization.PublicFormat.OpenSSH)
        return cls(key, f"{RAW} {fingerprint(_blob(line))}")

    def sign(self, data: bytes) -> Signature:
        return Signature(self.keyid, self.key.sign(data))


@dataclass(frozen=True)
class SshKeygenSigner:
    """`ssh-keygen -Y sign -f KEY -n pytest-cluster-evidence`: KEY is a private key file,
    or a public key whose private key ssh-agent holds. The signature is ssh-keygen's
    armored SSHSIG text; the keyid is read from it."""

    path: Path
    keyid: str = ""

    @classmethod
    def load(cls, path: Path) -> SshKeygenSigner:
        """Checked before the run: the key is readable by ssh-keygen (`-l`: its
        fingerprint, which names it in the report before it signs)."""
        _read(path, "the signing key")  # a bounded regular file before ssh-keygen sees it
        try:
            done = subprocess.run(["ssh-keygen", "-l", "-f", str(path)], capture_output=True,
                                  text=True, timeout=_TIMEOUT_S, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise BundleError(f"{path}: ssh-keygen did not run: {exc}") from None
        fields = done.stdout.split()
        if done.returncode != 0 or len(fields) < 2 or not fields[1].startswith("SHA256:"):
            said = (done.stderr or done.stdout).strip()[-300:]
            raise BundleError(f"{path}: not an OpenSSH key ssh-keygen can read: {said}")
        return cls(path, f"{SSHSIG} {fields[1]}")

    def sign(self, data: bytes) -> Signature:
        try:
            done = subprocess.run(["ssh-keygen", "-q", "-Y", "sign", "-f", str(self.path),
                                   "-n", NAMESPACE], input=data, capture_output=True,
                                  timeout=_TIMEOUT_S, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise BundleError(f"{self.path}: ssh-keygen -Y sign did not run: {exc}") from None
        if done.returncode != 0 or b"BEGIN SSH SIGNATURE" not in done.stdout:
            said = done.stderr.decode("utf-8", "replace").strip()[-500:]
            raise BundleError(f"{self.path}: ssh-keygen -Y sign failed (exit "
                              f"{done.returncode}): {said}")
        return Signature(f"{SSHSIG} {fingerprint(sshsig_key(done.stdout))}", done.stdout)


def sshsig_key(armored: bytes) -> bytes:
    """The signer's public key (wire form) inside an armored SSHSIG signature
    (PROTOCOL.sshsig: "SSHSIG", uint32 version, string publickey, ...). BundleError if
    it is not one."""
    body = b"".join(line for line in armored.strip().splitlines()
                    if not line.startswith(b"-----"))
    try:
        blob = base64.b64decode(body, validate=True)
    except ValueError:
        raise BundleError("not an SSH signature (its body is not base64)") from None
    if not blob.startswith(b"SSHSIG") or len(blob) < 14:
        raise BundleError("not an SSH signature (no SSHSIG header)")
    size = int.from_bytes(blob[10:14], "big")
    if len(blob) < 14 + size:
        raise BundleError("not an SSH signature (cut short)")
    return blob[14:14 + size]


@dataclass(frozen=True)
class PublicKey:
    """A public key to check signatures with: a PEM public key, or an OpenSSH public key
    line (the .pub file, or a line of authorized_keys)."""

    path: Path
    openssh: bytes  # 'ssh-ed25519 AAAA...', what ssh-keygen's allowed_signers takes
    fingerprint: str

    @classmethod
    def load(cls, path: Path) -> PublicKey:
        data = _read(path, "the public key")
        try:
            key = (serialization.load_pem_public_key(data) if b"-----BEGIN" in data
                   else serialization.load_ssh_public_key(data.strip().splitlines()[0]
                                                          if data.strip() else b""))
        except (ValueError, IndexError, UnsupportedAlgorithm) as exc:
            raise BundleError(f"{path}: not a public key (expected a PEM public key or an "
                              f"OpenSSH .pub line): {exc}") from None
        line = key.public_bytes(serialization.Encoding.OpenSSH,
                                serialization.PublicFormat.OpenSSH)
        return cls(path, line, fingerprint(_blob(line)))

    def matches(self, keyid: str) -> bool:
        return keyid.split(" ", 1)[-1] == self.fingerprint

    def check(self, keyid: str, signature: bytes, data: bytes) -> str | None:
        """None when `signature` is this key's over `data`; else why not."""
        if not self.matches(keyid):
            return f"made by another key ({keyid or 'no keyid'})"
        kind = keyid.split(" ", 1)[0]
        if kind == RAW:
            key = serialization.load_ssh_public_key(self.openssh)
            if not isinstance(key, Ed25519PublicKey):
                return "an ed25519 signature, but this is not an Ed25519 key"
            try:
                key.verify(signature, data)
            except InvalidSignature:
                return "does not match the manifest (the manifest or the signature changed)"
            return None
        if kind == SSHSIG:
            return self._check_sshsig(signature, data)
        return f"unknown kind of signature {kind!r}"

    def _check_sshsig(self, signature: bytes, data: bytes) -> str | None:
        with tempfile.TemporaryDirectory(prefix="pytest-cluster-verify-") as scratch:
            allowed, sig = Path(scratch) / "allowed_signers", Path(scratch) / "manifest.sig"
            allowed.write_bytes(b'evidence namespaces="' + NAMESPACE.encode() + b'" '
                                + self.openssh + b"\n")
            sig.write_bytes(signature)
            try:
                done = subprocess.run(["ssh-keygen", "-Y", "verify", "-f", str(allowed),
                                       "-I", "evidence", "-n", NAMESPACE, "-s", str(sig)],
                                      input=data, capture_output=True, timeout=_TIMEOUT_S,
                                      check=False)
            except (OSError, subprocess.TimeoutExpired) as exc:
                return f"ssh-keygen -Y verify did not run: {exc}"
        if done.returncode == 0:
            return None
        said = (done.stdout + done.stderr).decode("utf-8", "replace").strip()
        return f"ssh-keygen -Y verify: {said.splitlines()[-1] if said else 'failed'}"
