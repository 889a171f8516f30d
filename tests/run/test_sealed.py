"""The run's directory sealed, last (pytest_cluster/run/sealed.py): the run's closing line
then the manifest's, UNSIGNED without a key and naming its signer with one; the sinks told
where it is; a manifest that cannot be written said on stderr, never a traceback."""

from __future__ import annotations

import errno
import hashlib
from pathlib import Path
from typing import Any

import pytest

from pytest_cluster.evidence.bundle.keys import Ed25519FileSigner
from pytest_cluster.evidence.bundle.manifest import MANIFEST
from tests.evidence.bundle.test_bundle import ed25519_key

SPEC = """\
cluster: {name: sealed, nodes: "n[1-2]", launcher: sim}
host:
  cpu_cores: ">= 1"
sim:
  gpus_per_node: 8
"""


def _run(pytester: pytest.Pytester, *args: str, plugins: tuple[Any, ...] = ()
         ) -> tuple[pytest.RunResult, Path]:
    """SPEC run with `args`; its result and its run's directory."""
    (pytester.path / "trial.yaml").write_text(SPEC)
    result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider", *args,
                                plugins=list(plugins))
    return result, (pytester.path / "reports" / "latest").resolve()


def _shown(pytester: pytest.Pytester, path: Path) -> Path:
    """`path` as the run says it: under the directory pytest ran in, relative to it (as
    --cluster-reports=reports was given)."""
    return path.relative_to(pytester.path.resolve())


def _last_two(result: pytest.RunResult) -> list[str]:
    lines = [line for line in result.stdout.lines if line.strip()]
    return lines[-2:]


def test_without_a_key_the_run_ends_with_its_closing_line_and_an_unsigned_manifest(
        pytester: pytest.Pytester) -> None:
    result, run_dir = _run(pytester)
    assert result.ret == pytest.ExitCode.OK
    sha256 = hashlib.sha256((run_dir / MANIFEST).read_bytes()).hexdigest()
    shown = _shown(pytester, run_dir)
    closing, sealed = _last_two(result)
    assert closing.startswith("pytest-cluster: ACCEPTED at level ")
    assert closing.endswith("; which and why: the pytest-cluster section above, verdict.json")
    assert sealed == (f"manifest: {shown / MANIFEST} sha256 {sha256}, UNSIGNED; check it: "
                      f"pytest-cluster verify {shown}")


def test_with_a_key_the_manifest_line_names_its_signer_and_asks_for_the_key(
        pytester: pytest.Pytester, tmp_path: Path) -> None:
    private, _, _ = ed25519_key(tmp_path, "k")
    result, run_dir = _run(pytester, f"--cluster-sign-key={private}")
    assert result.ret == pytest.ExitCode.OK
    sha256 = hashlib.sha256((run_dir / MANIFEST).read_bytes()).hexdigest()
    shown = _shown(pytester, run_dir)
    keyid = Ed25519FileSigner.load(private).keyid
    assert _last_two(result)[1] == (f"manifest: {shown / MANIFEST} sha256 {sha256}, signed "
                                    f"by {keyid}; check it: pytest-cluster verify {shown} "
                                    "--key PUBKEY")


class SealedSink:
    """A sink of the run's evidence that notes where the sealed run is."""

    def __init__(self) -> None:
        self.told: list[tuple[Path, Path]] = []

    @pytest.hookimpl
    def pytest_cluster_evidence_sealed(self, config: pytest.Config, run_dir: Path,
                                       manifest: Path) -> None:
        assert manifest.is_file()  # written before the sinks are told
        self.told.append((run_dir, manifest))


def test_the_sinks_are_told_once_where_the_sealed_run_and_its_manifest_are(
        pytester: pytest.Pytester) -> None:
    sink = SealedSink()
    _, run_dir = _run(pytester, plugins=(sink,))
    assert sink.told == [(run_dir, run_dir / MANIFEST)]
    assert all(path.is_absolute() for path in sink.told[0])


def test_without_a_terminal_the_lines_go_to_stderr(pytester: pytest.Pytester) -> None:
    result, run_dir = _run(pytester, "-p", "no:terminal")
    closing, sealed = result.stderr.lines[-2:]
    assert closing.startswith("pytest-cluster: ACCEPTED at level ")
    assert sealed.startswith(f"manifest: {_shown(pytester, run_dir) / MANIFEST} sha256 ")
    assert "manifest: " not in result.stdout.str()


def test_a_manifest_that_cannot_be_written_is_said_on_stderr_and_no_sink_is_told(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    def full_disk(run_dir: Path, facts: object, signers: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("pytest_cluster.run.sealed.seal_run", full_disk)
    sink = SealedSink()
    result, run_dir = _run(pytester, plugins=(sink,))
    assert (f"pytest-cluster: NOT SEALED: the manifest of {_shown(pytester, run_dir)} "
            "cannot be written: "
            "No space left on device") in result.stderr.str()
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    assert not (run_dir / MANIFEST).exists() and sink.told == []
