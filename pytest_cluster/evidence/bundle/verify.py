"""A run directory checked against its manifest: every file's hash and size again, every
changed, missing or added file named, every link or odd entry named (never followed), and
the signature checked with a public key. What the manifest says is bounded (its size,
nesting, subjects, signatures) and echoed cut short and printable: the directory may have
been made by the other side to fool or to crash the check."""

from __future__ import annotations

import hashlib
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_cluster.errors import BundleError
from pytest_cluster.evidence.bundle.bounds import load_json, shown
from pytest_cluster.evidence.bundle.dsse import IN_TOTO, Envelope
from pytest_cluster.evidence.bundle.manifest import MANIFEST, PREDICATE_TYPE, STATEMENT_TYPE
from pytest_cluster.evidence.bundle.tree import MAX_LEVELS, Hashed, Odd, Tree

if TYPE_CHECKING:
    from pytest_cluster.evidence.bundle.keys import PublicKey

#: The largest manifest read (ours: about 250 bytes a file).
MAX_MANIFEST_BYTES = 64 << 20
#: The most files a manifest may list, and signatures it may carry.
MAX_SUBJECTS = 200_000
#: The largest size a subject may list: a file's size fits a signed 64-bit off_t.
MAX_SIZE = 2**63 - 1
MAX_SIGNATURES = 16
#: The longest file name listed, in characters.
MAX_NAME = 4096
_SHOWN = 50  # entries named per kind of difference; the rest are counted
_SHA256 = re.compile(r"[0-9a-f]{64}")

#: A soak resumed moves its last session's evidence to SOAK/stops/stop-NN; what that
#: session's manifest lists under these names stays in SOAK (soak/rounds.py's KEPT).
SOAK_FILE = "soak.json"
SOAK_KEPT = (SOAK_FILE, "spec.yaml", "rounds", "logs", "stops")
_STOP = re.compile(r"stop-\d+")

#: The final line's words for the files and for the signature.
FILES_MATCH, FILES_CHANGED = "FILES MATCH", "FILES CHANGED"
SIGNED_BY, UNSIGNED = "SIGNED BY", "UNSIGNED"
NOT_CHECKED, INVALID = "SIGNATURE NOT CHECKED", "SIGNATURE INVALID"
#: Each kind of entry that does not match, as its lines start.
_ODD_LABEL = {"symlink": "SYMLINK", "unreadable": "UNREADABLE", "too deep": "TOO DEEP"}
KINDS = ("CHANGED", "MISSING", "ADDED", "SYMLINK", "NOT A FILE", "UNREADABLE", "TOO DEEP")


@dataclass(frozen=True)
class Subject:
    name: str
    sha256: str
    size: int


@dataclass(frozen=True)
class Manifest:
    path: Path
    envelope: Envelope
    subjects: tuple[Subject, ...]
    predicate: dict[str, Any]
    sha256: str  # of the manifest file itself, as read

    @classmethod
    def read(cls, tree: Tree) -> Manifest:
        """The manifest of the directory `tree`; BundleError naming the file and what is
        wrong with it."""
        path = tree.path / MANIFEST
        where = shown(str(path), 500)
        data = tree.read(MANIFEST, MAX_MANIFEST_BYTES)
        if data is None:
            raise BundleError(f"{where}: no manifest: this directory was not sealed by "
                              f"pytest-cluster (runs write one at their end)")
        if isinstance(data, Odd) and data.kind == "too large":
            raise BundleError(f"{where}: {data.detail}; expected a manifest as pytest-cluster "
                              f"writes it, at most {MAX_MANIFEST_BYTES:,} bytes (about 250 "
                              f"bytes a file)")
        if isinstance(data, Odd):
            raise BundleError(f"{where}: a {data.kind}, not a file"
                              + (f" (-> {shown(data.detail)}, not followed)"
                                 if data.kind == "symlink" else ""))
        outer = load_json(data, where)
        signatures = outer.get("signatures") if isinstance(outer, dict) else None
        if isinstance(signatures, list) and len(signatures) > MAX_SIGNATURES:
            raise BundleError(f"{where}: {len(signatures)} signatures; expected at most "
                              f"{MAX_SIGNATURES}")
        envelope = Envelope.from_json(outer, where)
        if envelope.payload_type != IN_TOTO:
            raise BundleError(f"{where}: payloadType '{shown(envelope.payload_type)}'; "
                              f"expected '{IN_TOTO}'")
        statement = load_json(envelope.payload, f"{where}: payload")
        if not isinstance(statement, dict):
            raise BundleError(f"{where}: payload: expected a JSON object")
        if statement.get("_type") != STATEMENT_TYPE or \
                statement.get("predicateType") != PREDICATE_TYPE:
            raise BundleError(f"{where}: not a pytest-cluster evidence statement (expected "
                              f"_type {STATEMENT_TYPE} and predicateType {PREDICATE_TYPE})")
        predicate = statement.get("predicate")
        return cls(path, envelope, _subjects(statement.get("subject"), where),
                   predicate if isinstance(predicate, dict) else {},
                   hashlib.sha256(data).hexdigest())


def _subjects(listed: object, where: str) -> tuple[Subject, ...]:
    if not isinstance(listed, list):
        raise BundleError(f"{where}: subject: expected a list of files")
    if len(listed) > MAX_SUBJECTS:
        raise BundleError(f"{where}: subject: {len(listed):,} files; expected at most "
                          f"{MAX_SUBJECTS:,}")
    found: dict[str, Subject] = {}
    for index, each in enumerate(listed):
        at = f"{where}: subject[{index}]"
        name = each.get("name") if isinstance(each, dict) else None
        digest = each.get("digest") if isinstance(each, dict) else None
        sha = digest.get("sha256") if isinstance(digest, dict) else None
        if not isinstance(name, str) or not isinstance(sha, str):
            raise BundleError(f"{at}: expected a name and a sha256 digest")
        if not _inside(name):
            raise BundleError(f"{at}: '{shown(name)}' is not a path inside the run "
                              f"directory (expected a relative POSIX path without '.', "
                              f"'..', '\\\\' or NUL, at most {MAX_NAME} characters)")
        if not _SHA256.fullmatch(sha):
            raise BundleError(f"{at}: sha256 '{shown(sha)}': expected 64 lowercase hex "
                              f"digits")
        annotations = each.get("annotations")
        size = annotations.get("size") if isinstance(annotations, dict) else None
        if not isinstance(size, int) or isinstance(size, bool) or not 0 <= size <= MAX_SIZE:
            raise BundleError(f"{at}: annotations.size: expected a whole number of bytes "
                              f"from 0 to {MAX_SIZE} (every file is listed with its size)")
        if name in found:
            raise BundleError(f"{at}: '{shown(name)}' is listed twice")
        found[name] = Subject(name, sha, size)
    return tuple(found.values())


def _inside(name: str) -> bool:
    """A relative POSIX path that names one file inside the directory, one way."""
    if not 0 < len(name) <= MAX_NAME or "\x00" in name or "\\" in name:
        return False
    parts = name.split("/")
    if len(parts) > MAX_LEVELS + 1 or any(p in ("", ".", "..") for p in parts):
        return False
    try:
        return all(len(os.fsencode(p)) <= 255 for p in parts)
    except UnicodeEncodeError:
        return False


@dataclass(frozen=True)
class Changed:
    name: str
    listed: str  # sha256 in the manifest
    found: str  # sha256 of the file now
    listed_size: int  # bytes
    found_size: int  # bytes

    def line(self) -> str:
        sizes = ("" if self.listed_size == self.found_size else
                 f"; listed {self.listed_size} bytes, found {self.found_size} bytes")
        return (f"CHANGED: {shown(self.name)}: listed sha256 {self.listed} found "
                f"{self.found}{sizes}")


def odd_line(odd: Odd) -> str:
    name = shown(odd.name)
    if odd.kind == "symlink":
        return f"SYMLINK: {name} -> {shown(odd.detail)} (not followed)"
    label = _ODD_LABEL.get(odd.kind)
    if label is None:
        return f"NOT A FILE: {name} (a {odd.kind})"
    return f"{label}: {name} ({shown(odd.detail)})"


@dataclass(frozen=True)
class Verification:
    run_dir: Path
    manifest_sha256: str
    checked: int
    changed: tuple[Changed, ...] = ()
    missing: tuple[str, ...] = ()
    added: tuple[str, ...] = ()
    odd: tuple[Odd, ...] = ()  # links, fifos, directories where files are listed, ...
    signed_by: tuple[str, ...] = ()  # the keyids as the manifest names them (unchecked)
    key: str | None = None  # the fingerprint checked against, if a key was given
    signature_problem: str | None = None
    predicate: dict[str, Any] = field(default_factory=dict)
    soak: Path | None = None  # the soak this is a stopped session of, checked through it

    @property
    def files_hold(self) -> bool:
        return not (self.changed or self.missing or self.added or self.odd)

    @property
    def ok(self) -> bool:
        """Every file as listed, and (with a key) signed by that key: exit 0."""
        return self.files_hold and (self.key is None or self.signature_problem is None)

    @property
    def verified(self) -> bool:
        """Every file as listed, and signed by the key given."""
        return self.ok and self.key is not None

    @property
    def signature(self) -> str:
        """The signature in two or three words: SIGNED BY the key given, UNSIGNED,
        SIGNATURE NOT CHECKED (signed, no key given), SIGNATURE INVALID."""
        if not self.signed_by:
            return UNSIGNED
        if self.key is None:
            return NOT_CHECKED
        return INVALID if self.signature_problem else f"{SIGNED_BY} {self.key}"

    def final_line(self) -> str:
        """Both facts apart; VERIFIED only for matching files signed by the key given."""
        facts = f"{FILES_MATCH if self.files_hold else FILES_CHANGED}, {self.signature}"
        return f"VERIFIED: {facts}" if self.verified else facts

    def problems(self) -> list[str]:
        """The lines that say what does not hold."""
        return [line for line in self.lines()
                if line.startswith((*KINDS, "entries:", "files:", "signature:"))]

    def lines(self) -> list[str]:
        out = [f"manifest: {shown(str(self.run_dir / MANIFEST), 500)} (sha256 "
               f"{self.manifest_sha256})"]
        if self.soak is not None:
            soak = shown(str(self.soak), 500)
            out.append(f"soak: this is a stopped session of the soak {soak}: the "
                       f"{', '.join(SOAK_KEPT)} it lists stayed there when the soak was "
                       f"resumed and are checked there; the soak's own manifest covers "
                       f"this directory too (pytest-cluster verify {soak})")
        run = self.predicate
        if run:
            spec = run.get("spec")
            out.append(f"run: {_field(run, 'cluster')}, {_field(run, 'started_at')} to "
                       f"{_field(run, 'ended_at')} on {_field(run, 'controller')}, spec "
                       f"{_field(spec if isinstance(spec, dict) else {}, 'sha256')}")
            out += _failure_lines(run.get("failures"))
        kinds: list[tuple[str, list[str]]] = [
            ("CHANGED", [c.line() for c in self.changed]),
            ("MISSING", [f"MISSING: {shown(n)}" for n in self.missing]),
            ("ADDED", [f"ADDED: {shown(n)}" for n in self.added]),
            ("ODD", [odd_line(o) for o in self.odd])]
        for kind, found in kinds:
            out += found[:_SHOWN]
            if len(found) > _SHOWN:
                label = "entries" if kind == "ODD" else kind
                out.append(f"{label}: ... and {len(found) - _SHOWN} more")
        listed = self.checked
        out.append(f"files: {listed - len(self.changed) - len(self.missing)} of {listed} "
                   f"as listed" + ("" if self.files_hold else
                                   f"; {len(self.changed)} changed, {len(self.missing)} "
                                   f"missing, {len(self.added)} added, {len(self.odd)} "
                                   f"links or other entries"))
        out.append(self._signature_line())
        out.append(self.final_line())
        return out

    def _signature_line(self) -> str:
        if not self.signed_by:
            return ("signature: UNSIGNED - anyone could have rewritten the files and the "
                    "manifest together" + (f"; expected a signature by {self.key}"
                                           if self.key else ""))
        by = ", ".join(shown(s, 80) for s in self.signed_by)
        if self.key is None:
            return f"signature: by {by}; NOT CHECKED (give --key PUBKEY to check it)"
        if self.signature_problem is None:
            return f"signature: valid, by {self.key}"
        return f"signature: INVALID for {self.key}: {shown(self.signature_problem, 500)}"


def _failure_lines(failures: Any) -> list[str]:
    """What the run recorded as failed once its checks had run (its evidence sealed all
    the same): a few lines, each cut."""
    if not isinstance(failures, list) or not failures:
        return []
    out = [f"run: EVIDENCE INCOMPLETE: {shown(str(why), 500)}" for why in failures[:_SHOWN]]
    if len(failures) > _SHOWN:
        out.append(f"run: ... and {len(failures) - _SHOWN} more failures")
    return out


def _field(record: dict[str, Any], key: str) -> str:
    value = record.get(key)
    return "?" if value is None else shown(str(value), 80)


def verify(run_dir: Path, key: PublicKey | None = None) -> Verification:
    """`run_dir` checked against its manifest (and, with `key`, its signature); BundleError
    when the directory or its manifest cannot be read as one."""
    try:
        with Tree.open(run_dir) as tree:
            manifest = Manifest.read(tree)
            soak = _soak_of(run_dir, tree, manifest.subjects)
            try:
                return _check(tree, soak, manifest, key)
            finally:
                if soak is not None:
                    soak.close()
    except OSError as exc:  # what the tree does not map itself (out of descriptors, ...)
        raise BundleError(f"{shown(str(run_dir), 500)}: cannot be read: "
                          f"{exc.strerror or exc}") from None


def _check(tree: Tree, soak: Tree | None, manifest: Manifest,
           key: PublicKey | None) -> Verification:
    changed: list[Changed] = []
    missing: list[str] = []
    odd: dict[str, Odd] = {}
    own: set[str] = set()
    for subject in manifest.subjects:
        kept = soak is not None and subject.name.split("/", 1)[0] in SOAK_KEPT
        if not kept:
            own.add(subject.name)
        found = (soak if soak is not None and kept else tree).hash(subject.name)
        if found is None:
            missing.append(subject.name)
        elif isinstance(found, Odd):  # no file there without following a link
            missing.append(subject.name)
            odd.setdefault(found.name, found)
        elif found.sha256 != subject.sha256 or found.size != subject.size:
            changed.append(_changed(subject, found))  # a size listed wrong is a lie too
    files, entries = tree.walk()
    for entry in entries:
        odd.setdefault(entry.name, entry)
    added = [name for name in files if name != MANIFEST and name not in own]
    envelope = manifest.envelope
    return Verification(tree.path, manifest.sha256, len(manifest.subjects), tuple(changed),
                   tuple(missing), tuple(added), tuple(sorted(odd.values(),
                                                              key=lambda o: o.name)),
                   tuple(s.keyid for s in envelope.signatures),
                   key.fingerprint if key is not None else None,
                   _signature_problem(envelope, key) if key is not None else None,
                   manifest.predicate, soak.path if soak is not None else None)


def _changed(subject: Subject, found: Hashed) -> Changed:
    return Changed(subject.name, subject.sha256, found.sha256, subject.size, found.size)


def _soak_of(run_dir: Path, tree: Tree, subjects: tuple[Subject, ...]) -> Tree | None:
    """The soak `run_dir` is a stopped session of (SOAK/stops/stop-NN whose manifest lists
    the soak's rounds, which stayed in SOAK), opened; None when it is not one."""
    real = Path(os.path.realpath(run_dir))
    kept = {s.name.split("/", 1)[0] for s in subjects} & set(SOAK_KEPT)
    if real.parent.name != "stops" or not _STOP.fullmatch(real.name) or not kept or \
            any(tree.lstat(name) is not None for name in kept):
        return None
    try:
        soak = Tree.open(real.parent.parent)
    except BundleError:
        return None
    info = soak.lstat(SOAK_FILE)
    if info is not None and stat.S_ISREG(info.st_mode) and _same_dir(soak, real.name, tree):
        return soak
    soak.close()
    return None


def _same_dir(soak: Tree, name: str, tree: Tree) -> bool:
    """Whether SOAK/stops/`name`, reached without following links, is `tree`."""
    try:
        stops = os.open("stops", os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=soak.fd)
    except OSError:
        return False
    try:
        info = os.stat(name, dir_fd=stops, follow_symlinks=False)
    except OSError:
        return False
    finally:
        os.close(stops)
    return (info.st_dev, info.st_ino) == tree.identity()


def _signature_problem(envelope: Envelope, key: PublicKey) -> str | None:
    """None if a signature of the envelope is `key`'s and valid; else why not."""
    if not envelope.signatures:
        return "the manifest is unsigned"
    mine = [s for s in envelope.signatures if key.matches(s.keyid)]
    if not mine:
        return (f"not signed by this key (signed by: "
                f"{', '.join(shown(s.keyid, 80) for s in envelope.signatures)})")
    problems = [key.check(s.keyid, s.sig, envelope.signed_bytes()) for s in mine]
    return None if None in problems else "; ".join(p for p in problems if p)
