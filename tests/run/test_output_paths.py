"""The files a run writes where the user said (--junitxml, --html): checked at configure
time, a usage error naming the option and why; a folder yet to be made is made."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_cluster.run.output_paths import nearest_folder, report_path, shown_path
from tests.run.test_configure import SPEC


@pytest.mark.parametrize(("option", "given", "says"), [
    ("--html", "{tmp}", "is a directory: expected a file in it (e.g. {tmp}/report.html)"),
    ("--junitxml", "{tmp}/trial.yaml/junit.xml", "cannot be made: {tmp}/trial.yaml is not a "
                                                 "directory"),
    ("--html", "{tmp}/trial.yaml/deeper/report.html", "cannot be made: {tmp}/trial.yaml is "
                                                      "not a directory"),
    ("--html", "{tmp}/fifo", "is not a regular file (expected a file to write the report "
                             "to)"),
    ("--junitxml", "/proc/junit.xml", "its directory /proc cannot be written: *"),
])
def test_a_report_path_that_cannot_be_written_is_a_usage_error(
        pytester: pytest.Pytester, option: str, given: str, says: str) -> None:
    """--junitxml and --html as given are checked at configure time, as --cluster-metrics
    is: before, pytest-html raised from its own configure, JUnit after every check ran."""
    import os
    (pytester.path / "trial.yaml").write_text(SPEC)
    os.mkfifo(pytester.path / "fifo")
    tmp = str(pytester.path)
    path = given.format(tmp=tmp)
    result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider",
                                f"{option}={path}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {option}={path} {says.format(tmp=tmp)}"])
    assert not (pytester.path / "reports").exists()
    assert "passed" not in result.stdout.str()


def test_a_report_path_in_a_folder_yet_to_be_made_is_written(pytester: pytest.Pytester) -> None:
    (pytester.path / "trial.yaml").write_text(SPEC)
    result = pytester.runpytest("--cluster=trial.yaml", "-p", "no:cacheprovider", "-m",
                                "sanity", "--junitxml=out/ci/junit.xml")
    assert result.ret == pytest.ExitCode.OK
    assert (pytester.path / "out" / "ci" / "junit.xml").is_file()


def test_a_report_path_is_checked_without_touching_what_is_there(tmp_path: Path) -> None:
    """A file that exists is opened to append, nothing written; a file yet to be made is
    not made; a folder is refused with an example file in it."""
    kept = tmp_path / "junit.xml"
    kept.write_text("earlier run", encoding="utf-8")
    assert report_path(str(kept)) == kept
    assert kept.read_text(encoding="utf-8") == "earlier run"
    later = tmp_path / "a" / "b" / "report.html"
    assert report_path(str(later)) == later
    assert not (tmp_path / "a").exists()
    assert sorted(tmp_path.iterdir()) == [kept]  # the folder's trial file is gone
    with pytest.raises(ValueError, match=r"is a directory: expected a file in it \(e\.g\. "
                                         rf"{tmp_path}/junit\.xml\)"):
        report_path(str(tmp_path), "junit.xml")


def test_the_nearest_folder_is_the_first_existing_one_above(tmp_path: Path) -> None:
    assert nearest_folder(tmp_path / "a" / "b" / "c.xml") == tmp_path
    (tmp_path / "a").mkdir()
    assert nearest_folder(tmp_path / "a" / "b" / "c.xml") == tmp_path / "a"
    assert nearest_folder(Path("c.xml")) == Path(".")


def test_a_path_is_echoed_whole_up_to_its_limit_then_cut() -> None:
    assert shown_path("x" * 200) == "x" * 200
    assert shown_path("x" * 201) == "x" * 200 + "... (201 characters)"
    assert shown_path("abcdef", limit=3) == "abc... (6 characters)"
