"""The tests mirror the package: a module of pytest_cluster/ with logic of its own (a function
or a class) has its tests in tests/<folder>/test_<module>.py (tests/test_<module>.py for the
package's top level; `test_<module>_<aspect>.py` beside it for more), and the tests that
start real components (network namespaces, SLURM) are in tests/real/ and nowhere else."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "pytest_cluster"
TESTS = ROOT / "tests"
#: The fixtures that start real components (tests/conftest.py).
REAL_FIXTURES = {"netns", "slurm"}


def _has_logic(path: Path) -> bool:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return any(isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
               for node in tree.body)


def modules_with_logic() -> dict[str, Path]:
    """Each module with logic, by its path under pytest_cluster/, and where its tests go."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if "__pycache__" in path.parts or not _has_logic(path):
            continue
        rel = path.relative_to(PACKAGE)
        if rel.name == "__init__.py":  # a package's own logic: tests/<parent>/test_<package>.py
            package = rel.parent.name or PACKAGE.name  # the top level's: test_pytest_cluster.py
            found[rel.as_posix()] = TESTS / rel.parent.parent / f"test_{package}.py"
        else:
            found[rel.as_posix()] = TESTS / rel.parent / f"test_{rel.stem}.py"
    return found


def test_every_module_with_logic_has_its_test_file() -> None:
    modules = modules_with_logic()
    missing = sorted(name for name, test in modules.items() if not test.exists())
    assert not missing, f"no tests/<folder>/test_<module>.py for: {', '.join(missing)}"


def _is_test_or_fixture(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return node.name.startswith("test_") or any(
        "fixture" in ast.unparse(decorator) for decorator in node.decorator_list)


def _uses_real_fixtures(path: Path) -> list[str]:
    """The tests and fixtures of a file that ask for a real cluster (a helper that is handed
    one is not one of them)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [node.name for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and _is_test_or_fixture(node)
            and {arg.arg for arg in node.args.args + node.args.kwonlyargs} & REAL_FIXTURES]


def test_the_tests_that_start_real_components_are_in_tests_real() -> None:
    outside = {path.relative_to(ROOT).as_posix(): names
               for path in sorted(TESTS.rglob("test_*.py"))
               if (TESTS / "real") not in path.parents
               for names in [_uses_real_fixtures(path)] if names}
    assert not outside, f"real-component tests outside tests/real/: {outside}"
    assert any(_uses_real_fixtures(path) for path in (TESTS / "real").glob("test_*.py"))


def test_a_test_folder_is_a_folder_of_the_package() -> None:
    """tests/<folder>/ mirrors pytest_cluster/<folder>/ (and tests/real/ is the real one)."""
    folders = {path.parent.relative_to(TESTS) for path in TESTS.rglob("test_*.py")}
    strays = sorted(str(folder) for folder in folders if folder != Path(".")
                    and folder.parts[0] != "real" and not (PACKAGE / folder).is_dir())
    assert not strays, f"test folders with no package folder of that name: {strays}"
