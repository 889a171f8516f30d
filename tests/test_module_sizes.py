"""No module of the package is over MOST_LINES lines, probes included (a probe that needs
more is a package shipped as one program: pytest_cluster/probes/_shipping.py)."""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "pytest_cluster"
MOST_LINES = 450
#: Modules other hands are splitting now, by path under pytest_cluster/: a shrinking list,
#: each name taken off as its split is merged (the test fails while one is under the limit).
BEING_SPLIT: frozenset[str] = frozenset()


def sizes() -> dict[str, int]:
    """Every module's number of lines, by its path under pytest_cluster/."""
    return {path.relative_to(PACKAGE).as_posix(): len(path.read_text("utf-8").splitlines())
            for path in sorted(PACKAGE.rglob("*.py")) if "__pycache__" not in path.parts}


def test_no_module_is_over_the_limit() -> None:
    over = {path: lines for path, lines in sizes().items() if lines > MOST_LINES}
    assert {path: lines for path, lines in over.items() if path not in BEING_SPLIT} == {}
    assert sorted(BEING_SPLIT - set(over)) == [], "split now: take it off BEING_SPLIT"
