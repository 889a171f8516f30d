"""The key files README.md and docs/*.md name after the key options are one set: each public
key given to --key or --cluster-baseline-key is the public half of a private key given to
--cluster-sign-key or --cluster-ssh-sign-key, named as the documented commands write it
(openssl's `-pubout -out X.pub.pem` of X.pem, ssh-keygen's X.pub of X); a placeholder is
the option's own metavar. The tool has no default key file names: it writes no key."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_cluster.cli import main

ROOT = Path(__file__).parent.parent
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
PUBLIC = ("--key", "--cluster-baseline-key")
PRIVATE = ("--cluster-sign-key", "--cluster-ssh-sign-key")
_USED = re.compile(r"(--key|--cluster-baseline-key|--cluster-sign-key|--cluster-ssh-sign-key)"
                   r"(?:=| +)([^\s`'\")]+)")
_PLACEHOLDER = re.compile(r"[A-Z][A-Z_]*")
_PUBOUT = re.compile(r"openssl pkey -in (\S+) -pubout -out (\S+)")


def used(path: Path) -> list[tuple[str, str]]:
    """(option, value) of every key option written with a value in `path`."""
    return [(m[1], m[2]) for m in _USED.finditer(path.read_text(encoding="utf-8"))]


def public_half(private: str) -> str:
    """The public key file the documented commands make of a private key file."""
    return private.removesuffix(".pem") + ".pub.pem" if private.endswith(".pem") \
        else private + ".pub"


def metavars(pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> dict[str, str]:
    """Each key option's metavar, as `pytest --help` and `pytest-cluster verify --help`
    show it."""
    found = dict(re.findall(r"(--[a-z-]+-key)=([A-Z]+)", pytester.runpytest("--help").stdout.str()))
    capsys.readouterr()
    with pytest.raises(SystemExit):
        main(["verify", "--help"])
    found.update(re.findall(r"(--key) ([A-Z]+)", capsys.readouterr().out))
    return found


def test_every_documented_key_file_name_is_of_one_set(
        pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    every = [each for path in DOCUMENTS for each in used(path)]
    assert {option for option, _ in every} == {*PUBLIC, *PRIVATE}  # each is documented
    named = metavars(pytester, capsys)
    assert set(named) == {*PUBLIC, *PRIVATE}
    for option, value in every:
        if _PLACEHOLDER.fullmatch(value):
            assert value == named[option], f"{option} {value}: the option says {named[option]}"
    files = [(option, value) for option, value in every if not _PLACEHOLDER.fullmatch(value)]
    private = {value for option, value in files if option in PRIVATE}
    public = {value for option, value in files if option in PUBLIC}
    assert public == {public_half(value) for value in private}
    readme = {value for _, value in used(ROOT / "README.md")} - set(named.values())
    assert readme <= private | public and readme  # the README's are the docs' names
    docs = "\n".join(path.read_text(encoding="utf-8") for path in DOCUMENTS)
    made = _PUBOUT.findall(docs)
    assert made and all(public_half(key) == pub and key in private for key, pub in made)
