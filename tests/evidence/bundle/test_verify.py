"""`pytest-cluster verify` on evidence the other side made to fool or crash it: links in
any component (the hash oracle), files replaced by directories and fifos, huge and deep
manifests, odd subject names, control characters; fuzzed with hypothesis. Whatever the
input: exit 0, 1 or 2, a bounded output, never a traceback, never VERIFIED unless the
files match and the key given signed them."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_cluster.cli import main
from pytest_cluster.evidence.bundle import verify as verify_module
from pytest_cluster.evidence.bundle.bounds import MAX_DEPTH
from pytest_cluster.evidence.bundle.keys import Ed25519FileSigner, PublicKey
from pytest_cluster.evidence.bundle.manifest import MANIFEST, PREDICATE_TYPE, seal
from pytest_cluster.evidence.bundle.verify import verify
from pytest_cluster.soak import rounds as soak
from tests.evidence.bundle.test_bundle import PREDICATE, ed25519_key

#: What a verify may print at most, whatever it is given.
MAX_LINES, MAX_BYTES = 220, 100_000
FUZZ = settings(max_examples=150, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])


def make_run(root: Path) -> Path:
    run = root / "run"
    (run / "probes").mkdir(parents=True)
    (run / "junit.xml").write_text("<testsuites><testsuite/></testsuites>\n")
    (run / "results.jsonl").write_text('{"type": "run"}\n{"type": "end"}\n')
    (run / "probes" / "gpu-1.json").write_text("{}\n")
    return run


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    return make_run(tmp_path)


def rewrite(run: Path, change: Callable[[dict[str, Any]], None]) -> None:
    """The manifest's statement changed by `change`, re-encoded (its signatures kept)."""
    envelope = json.loads((run / MANIFEST).read_text())
    statement = json.loads(base64.b64decode(envelope["payload"]))
    change(statement)
    envelope["payload"] = base64.b64encode(json.dumps(statement).encode()).decode()
    (run / MANIFEST).write_text(json.dumps(envelope))


def run_cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["verify", *args])
    out, err = capsys.readouterr()
    return code, out, err


def assert_bounded(code: int, out: str, err: str) -> None:
    """The documented exits; a bounded, printable output; a usage error in one line."""
    assert code in (0, 1, 2)
    assert "Traceback" not in out + err
    assert len(out) + len(err) <= MAX_BYTES
    assert len(out.splitlines()) <= MAX_LINES
    assert all(" " <= ch <= "~" for ch in out.replace("\n", ""))
    if code == 2:
        assert out == "" and err.count("\n") == 1 and err.startswith("pytest-cluster verify: ")
    else:
        assert err == "" and out.splitlines()[-1].split(", ")[0].removeprefix("VERIFIED: ") \
            in ("FILES MATCH", "FILES CHANGED")


# -- the last line --------------------------------------------------------------------------

@pytest.mark.parametrize(("signed", "keyed", "edit", "last", "code"), [
    (True, "signer", False, "VERIFIED: FILES MATCH, SIGNED BY {key}", 0),
    (True, "signer", True, "FILES CHANGED, SIGNED BY {key}", 1),
    (True, None, False, "FILES MATCH, SIGNATURE NOT CHECKED", 0),
    (True, None, True, "FILES CHANGED, SIGNATURE NOT CHECKED", 1),
    (False, None, False, "FILES MATCH, UNSIGNED", 0),
    (False, None, True, "FILES CHANGED, UNSIGNED", 1),
    (False, "signer", False, "FILES MATCH, UNSIGNED", 1),  # a signature was asked for
    (True, "other", False, "FILES MATCH, SIGNATURE INVALID", 1),
    (True, "other", True, "FILES CHANGED, SIGNATURE INVALID", 1),
])
def test_the_last_line_states_the_files_and_the_signature_apart(
        run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], signed: bool,
        keyed: str | None, edit: bool, last: str, code: int) -> None:
    private, public, _ = ed25519_key(tmp_path, "signer")
    _, other, _ = ed25519_key(tmp_path, "other")
    seal(run_dir, PREDICATE, [Ed25519FileSigner.load(private)] if signed else [])
    if edit:
        (run_dir / "results.jsonl").write_text("{}\n")
    key = {"signer": public, "other": other}.get(keyed or "")
    got, out, err = run_cli([str(run_dir)] + (["--key", str(key)] if key else []), capsys)
    fingerprint = PublicKey.load(key).fingerprint if key else ""
    assert (got, out.splitlines()[-1]) == (code, last.format(key=fingerprint))
    assert_bounded(got, out, err)


def test_files_edited_and_rehashed_under_the_old_signature_are_never_verified(
        run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    private, public, _ = ed25519_key(tmp_path, "k")
    seal(run_dir, PREDICATE, [Ed25519FileSigner.load(private)])
    signatures = json.loads((run_dir / MANIFEST).read_text())["signatures"]
    (run_dir / "junit.xml").write_text("<testsuites/>\n")
    seal(run_dir, PREDICATE, [])
    forged = json.loads((run_dir / MANIFEST).read_text())
    (run_dir / MANIFEST).write_text(json.dumps(dict(forged, signatures=signatures)))
    assert run_cli([str(run_dir)], capsys)[:2] == (
        0, f"{verify(run_dir).lines()[0]}\nrun: c1, 2026-11-23T10:00:00Z to "
           f"2026-11-23T10:05:00Z on login1, spec {'ab' * 32}\nfiles: 3 of 3 as listed\n"
           f"signature: by ed25519 {PublicKey.load(public).fingerprint}; NOT CHECKED (give "
           f"--key PUBKEY to check it)\nFILES MATCH, SIGNATURE NOT CHECKED\n")
    assert run_cli([str(run_dir), "--key", str(public)], capsys)[0] == 1


def test_changed_lines_say_the_listed_and_the_found_hash_and_sizes(
        run_dir: Path) -> None:
    seal(run_dir, PREDICATE, [])
    listed = hashlib.sha256((run_dir / "junit.xml").read_bytes()).hexdigest()
    (run_dir / "junit.xml").write_text("<testsuites/>\n")
    found = hashlib.sha256(b"<testsuites/>\n").hexdigest()
    assert f"CHANGED: junit.xml: listed sha256 {listed} found {found}; listed 38 bytes, " \
        f"found 14 bytes" in verify(run_dir).lines()


def test_a_size_listed_wrong_is_a_change_though_the_hash_matches(
        run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    seal(run_dir, PREDICATE, [])
    listed = hashlib.sha256((run_dir / "junit.xml").read_bytes()).hexdigest()

    def lie(statement: dict[str, Any]) -> None:
        for each in statement["subject"]:
            if each["name"] == "junit.xml":
                each["annotations"]["size"] = 5
    rewrite(run_dir, lie)
    code, out, _ = run_cli([str(run_dir)], capsys)
    assert code == 1
    assert f"CHANGED: junit.xml: listed sha256 {listed} found {listed}; listed 5 bytes, " \
        "found 38 bytes" in out.splitlines()
    assert out.splitlines()[-1] == "FILES CHANGED, UNSIGNED"


@pytest.mark.parametrize(("payload", "said"), [
    (b'{"_type": NaN}', "payload: NaN is not JSON (expected numbers that are finite)"),
    (b'{"a": [Infinity]}', "payload: Infinity is not JSON (expected numbers that are finite)"),
    (b'{"subject": [], "subject": []}', "payload: key 'subject' is given twice in one object"),
])
def test_json_that_two_readers_could_read_two_ways_is_refused(
        run_dir: Path, capsys: pytest.CaptureFixture[str], payload: bytes, said: str) -> None:
    seal(run_dir, PREDICATE, [])
    envelope = json.loads((run_dir / MANIFEST).read_text())
    envelope["payload"] = base64.b64encode(payload).decode()
    (run_dir / MANIFEST).write_text(json.dumps(envelope))
    assert run_cli([str(run_dir)], capsys) == (
        2, "", f"pytest-cluster verify: {run_dir / MANIFEST}: {said}\n")


# -- links and odd entries --------------------------------------------------------------------

def test_a_linked_directory_is_no_hash_oracle(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    """`probes` a link to a directory outside, a subject `probes/shadow` listing the hash
    of a file there: reported as a link, never opened, and the output is the same whether
    the hash listed is the file's or not (nothing learnt)."""
    run = make_run(tmp_path)
    secret = tmp_path / "outside"
    secret.mkdir()
    (secret / "shadow").write_text("root:$6$secret:19000:0:99999:7:::\n")
    right = hashlib.sha256((secret / "shadow").read_bytes()).hexdigest()
    seal(run, PREDICATE, [])
    for name in os.listdir(run / "probes"):
        (run / "probes" / name).unlink()
    (run / "probes").rmdir()
    (run / "probes").symlink_to(secret)
    said = []
    for guess in (right, "0" * 64):
        def oracle(statement: dict[str, Any], guess: str = guess) -> None:
            statement["subject"] = [
                *(e for e in statement["subject"] if not e["name"].startswith("probes/")),
                {"name": "probes/shadow", "digest": {"sha256": guess},
                 "annotations": {"size": 35}}]
        rewrite(run, oracle)
        code, out, err = run_cli([str(run)], capsys)
        assert code == 1
        assert_bounded(code, out, err)
        said.append(out.splitlines()[1:])  # all but the manifest's own hash
    assert said[0] == said[1]
    assert said[0][-5:] == [
        "MISSING: probes/shadow", f"SYMLINK: probes -> {secret} (not followed)",
        "files: 2 of 3 as listed; 0 changed, 1 missing, 0 added, 1 links or other entries",
        "signature: UNSIGNED - anyone could have rewritten the files and the manifest "
        "together", "FILES CHANGED, UNSIGNED"]


def test_a_linked_file_with_the_listed_content_is_still_a_link(run_dir: Path,
                                                               tmp_path: Path) -> None:
    seal(run_dir, PREDICATE, [])
    copy = tmp_path / "copy.xml"
    copy.write_bytes((run_dir / "junit.xml").read_bytes())
    (run_dir / "junit.xml").unlink()
    (run_dir / "junit.xml").symlink_to(copy)
    (run_dir / "extra").symlink_to("/nonexistent")  # dangling, not listed: still named
    verdict = verify(run_dir)
    assert [line for line in verdict.lines() if line.startswith("SYMLINK")] == [
        "SYMLINK: extra -> /nonexistent (not followed)",
        f"SYMLINK: junit.xml -> {copy} (not followed)"]
    assert verdict.final_line() == "FILES CHANGED, UNSIGNED"


def test_the_run_directory_may_be_reached_through_a_link(run_dir: Path,
                                                         tmp_path: Path) -> None:
    seal(run_dir, PREDICATE, [])
    (tmp_path / "latest").symlink_to(run_dir.name)  # as reports/latest is
    assert verify(tmp_path / "latest").final_line() == "FILES MATCH, UNSIGNED"


def test_a_linked_manifest_is_not_read(run_dir: Path, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    seal(run_dir, PREDICATE, [])
    (run_dir / MANIFEST).rename(tmp_path / "elsewhere.json")
    (run_dir / MANIFEST).symlink_to(tmp_path / "elsewhere.json")
    assert run_cli([str(run_dir)], capsys) == (
        2, "", f"pytest-cluster verify: {run_dir / MANIFEST}: a symlink, not a file (-> "
               f"{tmp_path / 'elsewhere.json'}, not followed)\n")


def test_files_replaced_by_a_directory_or_a_fifo_are_named(run_dir: Path) -> None:
    seal(run_dir, PREDICATE, [])
    (run_dir / "junit.xml").unlink()
    (run_dir / "junit.xml").mkdir()
    (run_dir / "junit.xml" / "inside").write_text("x")
    (run_dir / "results.jsonl").unlink()
    os.mkfifo(run_dir / "results.jsonl")  # never opened: a writer-less fifo would block
    verdict = verify(run_dir)
    assert verdict.lines()[-8:] == [
        "MISSING: junit.xml", "MISSING: results.jsonl", "ADDED: junit.xml/inside",
        "NOT A FILE: junit.xml (a directory)", "NOT A FILE: results.jsonl (a fifo)",
        "files: 1 of 3 as listed; 0 changed, 2 missing, 1 added, 2 links or other entries",
        "signature: UNSIGNED - anyone could have rewritten the files and the manifest "
        "together", "FILES CHANGED, UNSIGNED"]


def test_directories_nested_too_deep_are_named_not_walked(
        run_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seal(run_dir, PREDICATE, [])
    (run_dir / "a" / "b" / "c").mkdir(parents=True)
    monkeypatch.setattr("pytest_cluster.evidence.bundle.tree.MAX_LEVELS", 2)
    assert "TOO DEEP: a/b/c (more than 2 levels of directories; not walked)" in \
        verify(run_dir).lines()


# -- malformed manifests ----------------------------------------------------------------------

def test_a_manifest_too_large_is_refused_unread(run_dir: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    seal(run_dir, PREDICATE, [])
    monkeypatch.setattr(verify_module, "MAX_MANIFEST_BYTES", 100 << 20 >> 10)
    (run_dir / MANIFEST).write_bytes(b'{"payload": "' + b"A" * (200 << 10) + b'"}')
    assert run_cli([str(run_dir)], capsys) == (
        2, "", f"pytest-cluster verify: {run_dir / MANIFEST}: 204,815 bytes; "
               "expected a manifest as pytest-cluster writes it, at most 102,400 bytes "
               "(about 250 bytes a file)\n")


DEEP_PAYLOAD = json.dumps({"payloadType": "application/vnd.in-toto+json",
                           "payload": base64.b64encode(b"[" * 100_000).decode()})


@pytest.mark.parametrize(("where", "text", "levels"), [
    ("", "[" * 200_000, 200_000),
    ("", '{"a": ' * 65 + "1" + "}" * 65, 65),
    (": payload", DEEP_PAYLOAD, 100_000),
])
def test_deep_nesting_is_refused_before_parsing(run_dir: Path, where: str, text: str,
                                                levels: int,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    (run_dir / MANIFEST).write_text(text)
    assert run_cli([str(run_dir)], capsys) == (
        2, "", f"pytest-cluster verify: {run_dir / MANIFEST}{where}: JSON nested {levels} "
               f"levels deep; expected at most {MAX_DEPTH}\n")


SIZE = ("subject[0]: annotations.size: expected a whole number of bytes from 0 to "
        "9223372036854775807 (every file is listed with its size)")


@pytest.mark.parametrize(("change", "said"), [
    (lambda s: s["subject"].append(dict(s["subject"][0])),
     "subject[3]: 'junit.xml' is listed twice"),
    (lambda s: s["subject"][0]["digest"].update(sha256="0" * 63 + "\x1b"),
     "subject[0]: sha256 '000000000000000000000000000000000000000000000000000000000000000"
     "\\x1b': expected 64 lowercase hex digits"),
    (lambda s: s["subject"][0].update(annotations={"size": -1}), SIZE),
    (lambda s: s["subject"][0].update(annotations={"size": False}), SIZE),
    (lambda s: s["subject"][0].update(annotations={"size": 10**400}), SIZE),
    (lambda s: s["subject"][0].update(annotations={"size": 5.0}), SIZE),
    (lambda s: s["subject"][0].pop("annotations"), SIZE),
    (lambda s: s.update(subject={"a": 1}), "subject: expected a list of files"),
])
def test_malformed_subjects_are_named(run_dir: Path, capsys: pytest.CaptureFixture[str],
                                      change: Callable[[dict[str, Any]], None],
                                      said: str) -> None:
    seal(run_dir, PREDICATE, [])
    rewrite(run_dir, change)
    assert run_cli([str(run_dir)], capsys) == (
        2, "", f"pytest-cluster verify: {run_dir / MANIFEST}: {said}\n")


@pytest.mark.parametrize(("name", "shown_as"), [
    ("/etc/passwd", "/etc/passwd"), ("../x", "../x"), ("a/../junit.xml", "a/../junit.xml"),
    ("probes\\gpu-1.json", "probes\\\\gpu-1.json"), ("a\x00b", "a\\x00b"), ("", ""),
    ("./junit.xml", "./junit.xml"), ("probes//gpu-1.json", "probes//gpu-1.json"),
    ("probes/", "probes/"), ("x" * 5000, "x" * 197 + "..."), ("\ud800", "\\ud800"),
    ("/".join("d" * 70), "/".join("d" * 70)),
])
def test_subject_names_that_are_no_path_inside_are_refused(
        run_dir: Path, capsys: pytest.CaptureFixture[str], name: str, shown_as: str) -> None:
    seal(run_dir, PREDICATE, [])
    rewrite(run_dir, lambda s: s["subject"].append({"name": name,
                                                    "digest": {"sha256": "0" * 64}}))
    code, out, err = run_cli([str(run_dir)], capsys)
    assert (code, out, err) == (
        2, "", f"pytest-cluster verify: {run_dir / MANIFEST}: subject[3]: '{shown_as}' is not "
               f"a path inside the run directory (expected a relative POSIX path without '.', "
               f"'..', '\\\\' or NUL, at most 4096 characters)\n")


def test_too_many_subjects_and_signatures_are_refused(
        run_dir: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    seal(run_dir, PREDICATE, [])
    monkeypatch.setattr(verify_module, "MAX_SUBJECTS", 2)
    assert run_cli([str(run_dir)], capsys)[2] == (
        f"pytest-cluster verify: {run_dir / MANIFEST}: subject: 3 files; expected at most 2\n")
    envelope = json.loads((run_dir / MANIFEST).read_text())
    envelope["signatures"] = [{"keyid": "x", "sig": ""}] * 17
    (run_dir / MANIFEST).write_text(json.dumps(envelope))
    assert run_cli([str(run_dir)], capsys)[2] == (
        f"pytest-cluster verify: {run_dir / MANIFEST}: 17 signatures; expected at most 16\n")


def test_huge_and_hostile_fields_are_echoed_cut_and_printable(
        run_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    seal(run_dir, {**PREDICATE, "cluster": "\x1b[2J" + "c" * 1_000_000}, [])
    envelope = json.loads((run_dir / MANIFEST).read_text())
    envelope["signatures"] = [{"keyid": "k\x07\u202e" + "k" * 10_000,
                               "sig": base64.b64encode(b"s").decode()}]
    (run_dir / MANIFEST).write_text(json.dumps(envelope))
    (run_dir / "new\nline\x1b").write_text("x")
    code, out, err = run_cli([str(run_dir)], capsys)
    assert_bounded(code, out, err)
    lines = out.splitlines()
    assert lines[1] == "run: \\x1b[2J" + "c" * 70 + "..., 2026-11-23T10:00:00Z to " \
        f"2026-11-23T10:05:00Z on login1, spec {'ab' * 32}"
    assert "ADDED: new\\nline\\x1b" in lines
    assert lines[-2] == "signature: by k\\x07\\u202e" + "k" * 66 + "...; NOT CHECKED (give " \
        "--key PUBKEY to check it)"


def test_the_soaks_kept_names_are_the_soaks() -> None:
    assert verify_module.SOAK_KEPT == soak.KEPT
    assert verify_module.SOAK_FILE == soak.SOAK_FILE and soak.STOPS_DIR == "stops"


# -- fuzz -------------------------------------------------------------------------------------

JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
                    | st.text(max_size=20),
                    lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=20)
NAMES = st.one_of(
    st.sampled_from(["junit.xml", "results.jsonl", "probes/gpu-1.json", "probes", "/etc/x",
                     "..", "a/../b", "a\\b", "a\x00b", "", ".", "probes//gpu-1.json",
                     MANIFEST, "x" * 300, "d/" * 80 + "f", "\ud800", "\x1b[31m"]),
    st.text(max_size=30))
SUBJECT = st.fixed_dictionaries(
    {"name": NAMES, "digest": st.fixed_dictionaries(
        {"sha256": st.sampled_from(["0" * 64, "A" * 64, "", "zz"]) | st.text(max_size=70)})},
    optional={"annotations": st.dictionaries(st.just("size"), JSON, max_size=1)})


@st.composite
def manifests(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from(["bytes", "json", "deep", "statement"]))
    if kind == "bytes":
        return draw(st.binary(max_size=200))
    if kind == "json":
        return json.dumps(draw(JSON)).encode()
    if kind == "deep":
        n = draw(st.integers(1, 300_000))
        return draw(st.sampled_from([b"[" * n, b"[" * n + b"]" * n, b'{"a":' * n,
                                     b'"' + b"[" * n + b'"']))
    statement = {"_type": "https://in-toto.io/Statement/v1",
                 "predicateType": PREDICATE_TYPE,
                 "subject": draw(st.lists(SUBJECT, max_size=6) | JSON),
                 "predicate": draw(JSON | st.just({"cluster": "\x1b" * 5000}))}
    payload = base64.b64encode(json.dumps(statement).encode()).decode()
    sigs = draw(st.lists(st.fixed_dictionaries({"keyid": st.text(max_size=300),
                                                "sig": st.just("c2ln")}), max_size=3))
    return json.dumps({"payloadType": draw(st.sampled_from(
        ["application/vnd.in-toto+json", "x"])), "payload": payload,
        "signatures": sigs}).encode()


@FUZZ
@given(data=manifests())
def test_fuzzed_manifests(data: bytes, capsys: pytest.CaptureFixture[str]) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        run = make_run(Path(scratch))
        (run / MANIFEST).write_bytes(data)
        code, out, err = run_cli([str(run)], capsys)
    assert_bounded(code, out, err)
    assert "VERIFIED" not in out  # no key was given


#: What the other side may do to a sealed run: (operation, path) pairs.
OPERATIONS = st.lists(st.tuples(
    st.sampled_from(["link-out", "link-in", "link-dangling", "link-self", "dir", "fifo",
                     "edit", "remove", "add"]),
    st.sampled_from(["junit.xml", "results.jsonl", "probes", "probes/gpu-1.json",
                     "probes/new", "new"])), max_size=3)


def tamper(run: Path, outside: Path, operation: str, name: str) -> bool:
    """One change to the run directory; False when it did not apply."""
    path = run / name
    if not path.parent.is_dir() or path.parent.is_symlink():
        return False
    if operation == "add":
        if path.exists() or path.is_symlink():
            return False
        path.write_text("added")
        return True
    if (not path.exists() and not path.is_symlink()) or \
            (operation in ("remove", "dir") and name.endswith("new")):
        # either would undo an add (an empty directory holds no file): the tree's files
        # would be the manifest's again, which verify rightly calls a match
        return False
    if operation == "edit":
        if not path.is_file() or path.is_symlink():
            return False
        path.write_text("edited")
        return True
    if path.is_dir() and not path.is_symlink():
        for each in sorted(path.rglob("*"), reverse=True):
            each.rmdir() if each.is_dir() and not each.is_symlink() else each.unlink()
        path.rmdir()
    else:
        path.unlink()
    if operation.startswith("link"):
        path.symlink_to({"link-out": str(outside), "link-in": "junit.xml",
                         "link-dangling": "nowhere", "link-self": name}[operation])
    elif operation == "dir":
        path.mkdir()
    elif operation == "fifo":
        os.mkfifo(path)
    return True


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    return ed25519_key(tmp_path_factory.mktemp("keys"), "fuzz")


@FUZZ
@given(operations=OPERATIONS, signed=st.booleans(), keyed=st.booleans())
def test_fuzzed_trees(operations: list[tuple[str, str]], signed: bool, keyed: bool,
                      keys: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        outside = root / "outside"
        outside.mkdir()
        (outside / "gpu-1.json").write_text("outside: never to be read\n")
        secret = hashlib.sha256((outside / "gpu-1.json").read_bytes()).hexdigest()
        run = make_run(root)
        private, public, _ = keys
        seal(run, PREDICATE, [Ed25519FileSigner.load(private)] if signed else [])
        applied = [tamper(run, outside / "gpu-1.json" if name != "probes" else outside,
                          operation, name) for operation, name in operations]
        code, out, err = run_cli([str(run)] + (["--key", str(public)] if keyed else []),
                                 capsys)
    assert_bounded(code, out, err)
    assert code != 2  # the manifest is ours: whatever the tree, a verdict
    assert secret not in out  # nothing outside was read
    last = out.splitlines()[-1]
    assert last.startswith("VERIFIED") == (not any(applied) and signed and keyed)
    assert (code == 0) == (not any(applied) and (signed or not keyed))

