"""The docs' tables of the registries are generated (`make docs`, docs/generate.py) and
current: each region between `<!-- generated: NAME -->` and `<!-- end generated -->` is what
the registries give now. And no table cell of the docs is long: prose belongs outside a
table, where it can be read."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest


def _root() -> Path:
    here = Path(__file__).resolve().parent
    return next(p for p in (here, *here.parents) if (p / "pyproject.toml").exists())


ROOT = _root()
GENERATOR = ROOT / "docs" / "generate.py"


def generator() -> ModuleType:
    found = importlib.util.spec_from_file_location("docs_generate", GENERATOR)
    assert found is not None and found.loader is not None
    module = importlib.util.module_from_spec(found)
    found.loader.exec_module(module)
    return module


def test_every_generated_region_is_current() -> None:
    """docs/generate.py --check, in a process of its own (the registries as they are
    without extensions loaded by other tests): every region current, every key of the
    spec described in its section of docs/spec.md."""
    done = subprocess.run([sys.executable, str(GENERATOR), "--check"], cwd=ROOT,
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"run make docs:\n{done.stdout}{done.stderr}"


def test_every_region_is_in_the_docs() -> None:
    """Each generator has its region in a document, and each region its generator."""
    gen = generator()
    used = [match[2] for path in gen.documents()
            for match in gen.REGION.finditer(path.read_text(encoding="utf-8"))]
    assert sorted(set(used)) == sorted(gen.REGIONS), "a region without its generator, or not used"


def test_a_stale_region_is_rewritten_and_an_unknown_one_refused() -> None:
    gen = generator()
    name = next(iter(gen.REGIONS))
    stale = f"before\n<!-- generated: {name} -->\n| old |\n<!-- end generated -->\nafter\n"
    fresh = gen.regenerate(stale)
    assert fresh == (f"before\n<!-- generated: {name} -->\n{gen.REGIONS[name]()}"
                     "<!-- end generated -->\nafter\n")
    assert gen.regenerate(fresh) == fresh
    with pytest.raises(ValueError, match="no_such_region"):
        gen.regenerate("<!-- generated: no_such_region -->\n<!-- end generated -->\n")


def test_the_check_names_a_stale_region(tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    gen = generator()
    name = next(iter(gen.REGIONS))
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text(f"<!-- generated: {name} -->\nold\n"
                                        "<!-- end generated -->\n", encoding="utf-8")
    monkeypatch.setattr(gen, "ROOT", tmp_path)
    assert gen.stale() == [f"README.md: {name}"]
    assert gen.main([]) == 0 and gen.stale() == []


def test_a_key_without_its_row_is_named() -> None:
    from pytest_cluster.contract.extensions import added_clauses

    gen = generator()
    text = (ROOT / "docs" / "spec.md").read_text(encoding="utf-8")
    # the keys of installed extensions loaded in this process (their own docs describe them)
    theirs = [d.id for d in added_clauses() if d.written]
    assert gen.undescribed(text) == theirs
    without = text.replace("| `cpu_threads` |", "| threads |")
    assert gen.undescribed(without) == ["host.cpu_threads", *theirs]


_CELL = re.compile(r"(?<!\\)\|")


def long_cells(text: str, most: int) -> list[tuple[int, int]]:
    """(line, length) of each table cell of `text` longer than `most` characters."""
    return [(number, len(cell.strip())) for number, line in enumerate(text.splitlines(), 1)
            if line.startswith("|") for cell in _CELL.split(line.strip())[1:-1]
            if len(cell.strip()) > most]


def test_no_table_cell_of_the_docs_is_long() -> None:
    gen = generator()
    found = [f"{path.relative_to(ROOT)}:{line}: a cell of {length} characters"
             for path in gen.documents()
             for line, length in long_cells(path.read_text(encoding="utf-8"), gen.MOST_CELL)]
    assert not found, "move the prose out of the table:\n" + "\n".join(found)


def test_a_long_cell_is_found() -> None:
    assert long_cells(f"| a | {'x' * 301} |\n| b \\| c | d |\n", 300) == [(1, 301)]
