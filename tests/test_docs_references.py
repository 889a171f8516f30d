"""Every reference the docs make to this repository's files and code holds: each path, module
and symbol named in README.md, docs/*.md and the docstrings and comments of pytest_cluster/
exists, found by scanning them (which files are checked and what they name is derived,
never listed by hand).

The conventions, one each:
- a file of this repository is named by its path, whole (`pytest_cluster/contract/sections/sim.py`,
  `examples/sim.yaml`) or from a folder of the package (`contract/sections/sim.py`,
  `run/html_hooks.py`),
  or by its bare name beside the file that names it (`clauses.py` in pytest_cluster/contract/);
- a place in a file is named by a symbol, never a line number (lines move):
  `hookspecs.py:pytest_cluster_result_line`, `measure/plausible.py:FACTS` (a constant
  may follow its file in words, `contract/sections/__init__.py's SECTIONS`),
  `launchers/result.py:ErrorKind.controller_side`; a module as imported,
  `pytest_cluster.launchers.local:LocalLauncher` or `pytest_cluster.measure.plausible.FACTS`;
- a file of another project is written with its project or as a URL (`torch/version.py`,
  `pytest_html/hooks.py`, `github.com/in-toto/attestation/.../statement.md`): a path whose
  first folder is none of this repository's is not checked, and neither is a file the run
  writes (`verdict.json`, `reports/latest/report.html`), which is no `.py` or `.md` file and
  under no folder of the repository.
"""

from __future__ import annotations

import ast
import importlib.util
import io
import re
import subprocess
import sys
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path, PurePosixPath

import pytest


def _root() -> Path:
    here = Path(__file__).resolve().parent
    return next(p for p in (here, *here.parents) if (p / "pyproject.toml").exists())


ROOT = _root()
PACKAGE = "pytest_cluster"

#: A path: folders and a file name with an extension, after no character that makes it part
#: of a URL, an absolute path, `~/...` or a placeholder; then `:symbol` or `:line`, if any.
_PATH = re.compile(
    r"(?<![\w/.~:$<>@%*-])((?:[\w.-]+/)*[\w-]+\.(?:py|md|yaml|yml|json|toml|j2|html|txt|cfg|ini))"
    r"(?::([A-Za-z_]\w*(?:\.\w+)*|\d+))?(?![\w/])")
#: A module as imported, with an attribute after `:` or `.`, if any.
_MODULE = re.compile(rf"(?<![\w/.])({PACKAGE}(?:\.\w+)+)(?::(\w+(?:\.\w+)*))?")
_CHECKED_ALWAYS = (".py", ".md")
#: A module's constant named after its path, `contract/sections/__init__.py's SECTIONS` or
#: `contract/clauses.py CLAUSES`: checked as `contract/sections/__init__.py:SECTIONS` is.
_CONSTANT = re.compile(r"`?(?:'s|\u2019s)? `?([A-Z][A-Z0-9]*_[A-Z0-9_]+|[A-Z]{3,}[A-Z0-9]*)\b")


@cache
def files() -> frozenset[str]:
    """The repository's files (tracked, and new ones not ignored), relative to its root."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
        capture_output=True, text=True, check=True).stdout.split("\n")
    return frozenset(name for name in listed if name and (ROOT / name).exists())


def documents() -> list[str]:
    """What is scanned: README.md, docs/*.md, and every module of the package."""
    return sorted(name for name in files()
                  if name == "README.md"
                  or (name.startswith("docs/") and name.endswith(".md") and name.count("/") == 1)
                  or (name.startswith(f"{PACKAGE}/") and name.endswith(".py")))


def prose(name: str) -> Iterator[tuple[int, str]]:
    """(line, text) of what a reader reads in a document: all of a .md file; the comments
    and docstrings of a module."""
    source = (ROOT / name).read_text(encoding="utf-8")
    if not name.endswith(".py"):
        yield from enumerate(source.splitlines(), 1)
        return
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) \
                and node.body and isinstance(node.body[0], ast.Expr) \
                and isinstance(node.body[0].value, ast.Constant) \
                and isinstance(node.body[0].value.value, str):
            start = node.body[0].lineno
            yield from ((start + n, line) for n, line
                        in enumerate(node.body[0].value.value.splitlines()))


@dataclass(frozen=True)
class Reference:
    where: str  # 'docs/spec.md:12'
    name: str  # as written
    files: tuple[str, ...]  # the repository files it may name, () when there is none
    symbol: str = ""  # after the ':' (or the module's '.'), if any


def _resolve(path: str, document: str) -> tuple[str, ...]:
    """The repository files (or folder) `path` may name from `document`, best first: the
    path from the root, from the document's folder or the package's, else every path of
    the repository it ends (`pcx_bmc/launcher.py`, a bare `soak.py`); () for none."""
    beside = str(PurePosixPath(document).parent / path)
    for candidate in (path, beside, f"{PACKAGE}/{path}"):
        if candidate in files() or any(f.startswith(f"{candidate}/") for f in files()):
            return (candidate,)
    return tuple(f for f in sorted(files()) if f.endswith(f"/{path}"))


def _checked(path: str) -> bool:
    """Whether `path` names a file this repository should have (see the module's doc):
    a bare `.py` or `.md` name, or a path under a folder of the repository's top or of
    the package (now, or once: a reference to `spec/sim.py` after spec/ moved is stale,
    not another project's)."""
    parts = PurePosixPath(path).parts
    if len(parts) == 1:
        return path.endswith(_CHECKED_ALWAYS)
    return parts[0] in _ours() or (path.endswith(_CHECKED_ALWAYS) and parts[0] in _ours_once())


@cache
def _ours() -> frozenset[str]:
    """The folders at the repository's top and in the package."""
    return frozenset(
        {PurePosixPath(name).parts[0] for name in files() if "/" in name}
        | {part for name in files() if name.startswith(f"{PACKAGE}/")
           for part in PurePosixPath(name).parts[1:-1]})


@cache
def _ours_once() -> frozenset[str]:
    """The package's folders in its history."""
    log = subprocess.run(["git", "log", "--format=", "--name-only", "--", f"{PACKAGE}/"],
                         cwd=ROOT, capture_output=True, text=True, check=False).stdout
    return frozenset(part for name in log.split() for part in PurePosixPath(name).parts[1:-1])


@cache
def entry_point_groups() -> frozenset[str]:
    """The entry point groups the docs declare (`entry-points."pytest_cluster.extensions"`):
    dotted names, not modules."""
    return frozenset(group for name in documents() for _, text in prose(name)
                     for group in re.findall(r'entry-points\."([\w.]+)"', text))


def _module_file(dotted: str) -> str | None:
    """The file of module `dotted` (a package's __init__.py), as installed
    (`pytest_cluster.acceptance` is acceptance/), relative to the root; None if none."""
    try:
        found = importlib.util.find_spec(dotted)
    except (ImportError, ValueError):
        return None
    if found is None or found.origin is None:
        return None
    origin = Path(found.origin).resolve()
    return str(origin.relative_to(ROOT)) if origin.is_relative_to(ROOT) else None


def references(document: str) -> Iterator[Reference]:
    """Every reference to this repository `document` makes."""
    for line, text in prose(document):
        where = f"{document}:{line}"
        for match in _PATH.finditer(text):
            path, symbol = match[1], match[2] or ""
            named = _CONSTANT.match(text, match.end())
            if not symbol and named and path.endswith(".py"):
                # 'contract/sections/__init__.py's SECTIONS': a constant of the file
                symbol = named[1]
            if _checked(path):
                yield Reference(where, match[0], _resolve(path, document), symbol)
        for match in _MODULE.finditer(text):
            if match[1] in entry_point_groups():
                continue
            parts = match[1].split(".")
            # the longest prefix that is a module; the rest, and what follows ':', a symbol
            module, length = next(((file, n) for n in range(len(parts), 0, -1)
                                   if (file := _module_file(".".join(parts[:n])))), ("", 0))
            symbol = ".".join([*parts[length:], *([match[2]] if match[2] else [])])
            yield Reference(where, match[0], (module,) if module else (), symbol)


@cache
def defined(file: str) -> dict[str, frozenset[str]]:
    """The names a module defines: '' for its top level, a class's name for its body."""
    tree = ast.parse((ROOT / file).read_text(encoding="utf-8"))

    def names(body: list[ast.stmt]) -> frozenset[str]:
        found: set[str] = set()
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                found.add(node.name)
            elif isinstance(node, ast.Assign):
                found |= {t.id for t in node.targets if isinstance(t, ast.Name)}
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                found.add(node.target.id)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                found |= {(a.asname or a.name).split(".")[0] for a in node.names}
            elif isinstance(node, (ast.If, ast.Try)):
                found |= names(node.body)
        return frozenset(found)

    exported = {item.value for node in tree.body if isinstance(node, ast.Assign)
                and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
                and isinstance(node.value, (ast.List, ast.Tuple))
                for item in node.value.elts if isinstance(item, ast.Constant)}
    scopes = {"": names(tree.body) | {str(name) for name in exported}}
    scopes |= {node.name: names(node.body) for node in ast.walk(tree)
               if isinstance(node, ast.ClassDef)}
    return scopes


def problem(reference: Reference) -> str | None:
    """What is wrong with a reference, in one line, or None."""
    said = f"{reference.where}: {reference.name}"
    if not reference.files:
        return f"{said}: no such file in the repository"
    if not reference.symbol:
        return None
    if reference.symbol.isdigit():
        return f"{said}: a line number; name the symbol instead (file.py:name)"
    wrong = [_undefined(file, reference.symbol) for file in reference.files]
    return None if None in wrong else f"{said}: {wrong[0]}"


def _undefined(file: str, symbol: str) -> str | None:
    """Why module `file` does not define `symbol` ('Class.attr' too), or None."""
    if not file.endswith(".py"):
        return f"{file} is not a module"
    scopes = defined(file)
    head, *rest = symbol.split(".")
    if head not in scopes[""]:
        return f"{file} defines no {head}"
    if rest and head in scopes and rest[0] not in scopes[head]:
        return f"{head} in {file} has no {rest[0]}"
    return None


def test_every_reference_names_what_exists() -> None:
    found = [reference for document in documents() for reference in references(document)]
    read = {reference.where.split(":")[0] for reference in found}
    assert {name for name in documents() if name.endswith(".md")} <= read  # it reads them
    wrong = [said for said in map(problem, found) if said is not None]
    assert not wrong, "stale references:\n" + "\n".join(wrong)


def _read_as(document: str, text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """`prose` reads `document` as the one line `text`, and every other document as it is. The
    real `prose` is held here: a lambda looking it up by name would find itself (a recursion
    whenever a check reads another document before its cache is filled, as in a fresh worker)."""
    real = prose
    monkeypatch.setattr(sys.modules[__name__], "prose",
                        lambda name: iter([(1, text)]) if name == document else real(name))


@pytest.mark.parametrize(("text", "wrong"), [
    ("see `contract/nosuch.py`", "no such file"),
    ("see `spec/sim.py`, a folder that moved", "no such file"),
    ("see `hookspecs.py:41`", "a line number"),
    ("see `hookspecs.py:pytest_cluster_no_such_hook`", "defines no"),
    ("see pytest_cluster.measure.plausible.NO_SUCH", "defines no"),
    ("see pytest_cluster.nosuch", "defines no nosuch"),
    ("see `launchers/result.py:ErrorKind.no_such`", "has no no_such"),
    ("see docs/nosuch.md", "no such file"),
    ("see contract/sections/__init__.py's NO_SUCH_TABLE", "defines no NO_SUCH_TABLE"),
])
def test_a_stale_reference_is_named(text: str, wrong: str,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Each kind of stale reference, in a document of the package, is found and said."""
    document = f"{PACKAGE}/stale_reference_example.py"
    _read_as(document, text, monkeypatch)
    said = [p for p in map(problem, references(document)) if p is not None]
    assert len(said) == 1 and wrong in said[0], said


@pytest.mark.parametrize("text", [
    "see `hookspecs.py:pytest_cluster_result_line`",
    "see `launchers/result.py:ErrorKind.controller_side`",
    "see pytest_cluster.launchers.local:LocalLauncher and contract/sections/sim.py",
    "`contract/sections/__init__.py`'s `SECTIONS` and contract/clauses.py CLAUSES",
    "`torch/version.py`, `reports/latest/verdict.json`, https://x.org/a/b.md, ~/x/y.md",
])
def test_a_good_reference_passes(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    document = f"{PACKAGE}/good_reference_example.py"
    _read_as(document, text, monkeypatch)
    assert [p for p in map(problem, references(document)) if p is not None] == []
