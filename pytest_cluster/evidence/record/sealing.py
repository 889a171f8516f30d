"""The end of a run's evidence: its manifest, over every file the run wrote, signed with
the keys the options name (--cluster-sign-key, --cluster-ssh-sign-key), checked before
any test runs. What the manifest says of the run (its predicate) is assembled here."""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_cluster import __version__
from pytest_cluster.errors import BundleError
from pytest_cluster.evidence.bundle.keys import Ed25519FileSigner, Signer, SshKeygenSigner
from pytest_cluster.evidence.bundle.manifest import MANIFEST, digest, seal
from pytest_cluster.units import utc

if TYPE_CHECKING:
    from pytest_cluster.contract.model import Spec
    from pytest_cluster.evidence.record.lines import Predicate, SourceCommit, Tool

_SOURCE = Path(__file__).resolve().parents[3]  # the checkout: pytest_cluster/evidence/record/..


def add_options(group: Any) -> None:
    group.addoption(
        "--cluster-sign-key", metavar="KEY", default=None,
        help="sign the run's manifest with this Ed25519 private key file (PEM or OpenSSH; "
             "an encrypted one takes PYTEST_CLUSTER_SIGN_PASSPHRASE)")
    group.addoption(
        "--cluster-ssh-sign-key", metavar="KEY", default=None,
        help="sign the run's manifest with ssh-keygen -Y sign and this OpenSSH key (a "
             "private key file, or a public one whose private key ssh-agent holds)")


def signers(config: pytest.Config) -> tuple[Signer, ...]:
    """The signers the options name, each loaded now: an unusable key is a usage error
    before any test runs, not a surprise at the end."""
    found: list[Signer] = []
    for option, what in (("--cluster-sign-key", "an Ed25519 private key file"),
                         ("--cluster-ssh-sign-key", "an OpenSSH key file")):
        value = config.getoption(option.lstrip("-").replace("-", "_"))
        if value is not None and not str(value).strip():
            raise pytest.UsageError(f"{option}=: expected the path of {what}, got an empty "
                                    "value (an unset variable?); leave the option out to "
                                    "run unsigned")
    try:
        if path := config.getoption("cluster_sign_key"):
            found.append(Ed25519FileSigner.load(Path(path)))
        if path := config.getoption("cluster_ssh_sign_key"):
            found.append(SshKeygenSigner.load(Path(path)))
    except BundleError as exc:
        raise pytest.UsageError(str(exc)) from None
    return tuple(found)


def source_commit() -> SourceCommit | None:
    """The commit this package runs from, when it runs from a git checkout (with whether
    tracked files differ from it); None when installed."""
    if not (_SOURCE / ".git").exists():
        return None
    try:
        head = subprocess.run(["git", "-C", str(_SOURCE), "rev-parse", "HEAD"],
                              capture_output=True, text=True, timeout=10, check=False)
        dirty = subprocess.run(["git", "-C", str(_SOURCE), "status", "--porcelain",
                                "--untracked-files=no"], capture_output=True, text=True,
                               timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if head.returncode != 0:
        return None
    return {"commit": head.stdout.strip(), "modified": bool(dirty.stdout.strip())}


@dataclass(frozen=True)
class Sealed:
    path: Path
    sha256: str
    signed_by: tuple[str, ...]
    failed: tuple[str, ...] = ()  # why each signer that failed did


def predicate(config: pytest.Config, spec: Spec, started: float, ended: float,
              outside: list[str], failures: list[str] | None = None) -> Predicate:
    """What the manifest says of the run that wrote the files; `failures`: what failed
    once the checks had run (the evidence is sealed all the same, and says so)."""
    params = config.invocation_params
    tool: Tool = {"name": "pytest-cluster", "version": __version__,
                  "pytest": pytest.__version__, "python": sys.version.split()[0]}
    commit = source_commit()
    if commit is not None:
        tool["source"] = commit
    said: Predicate = {"cluster": spec.cluster.name,
                       "spec": {"file": spec.file, "sha256": spec.sha256, "text": spec.text},
                       "command": {"args": ["pytest", *params.args], "dir": str(params.dir)},
                       "tool": tool, "started_at": utc(started), "ended_at": utc(ended),
                       "controller": socket.gethostname(), "not_covered": outside}
    if failures:
        said["failures"] = list(failures)
    return said


def seal_run(run_dir: Path, facts: Mapping[str, object], chosen: tuple[Signer, ...]) -> Sealed:
    envelope, failed = seal(run_dir, facts, chosen)
    path = run_dir / MANIFEST
    return Sealed(path, digest(path), tuple(s.keyid for s in envelope.signatures), failed)


def sealed_line(sealed: Sealed, failures: tuple[str, ...] = ()) -> str:
    """The terminal's last word on the evidence (and what failed late, recorded in the
    manifest)."""
    by = (f"signed by {', '.join(sealed.signed_by)}" if sealed.signed_by
          else "UNSIGNED")
    text = (f"manifest: {sealed.path} sha256 {sealed.sha256}, {by}; check it: "
            f"pytest-cluster verify {sealed.path.parent}"
            + (" --key PUBKEY" if sealed.signed_by else ""))
    text += "".join(f"\nSIGNING FAILED, that signature is missing: {why}"
                    for why in sealed.failed)
    text += "".join(f"\nEVIDENCE INCOMPLETE (recorded in the manifest): {why}"
                    for why in failures)
    return text
