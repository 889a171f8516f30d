"""report/splice.py: marks in a file replaced by pieces, the file replaced at once."""

from __future__ import annotations

from pathlib import Path


def test_a_splice_puts_the_pieces_where_the_mark_is_and_nothing_else(tmp_path: Path) -> None:
    import re

    from pytest_cluster.report.splice import splice

    here = re.compile(rb"<!--here(\d?)-->")
    report = tmp_path / "report.html"
    report.write_text("<p>héad</p><!--here--><p>tail <!--here--></p>", encoding="utf-8")
    report.chmod(0o640)
    assert splice(report, here, lambda _: iter(["<b>ä</b>".encode(), b"", b"<i>2</i>"]),
                  count=1)
    assert report.read_text(encoding="utf-8") == \
        "<p>héad</p><b>ä</b><i>2</i><p>tail <!--here--></p>"  # the first mark only
    assert report.stat().st_mode & 0o777 == 0o640
    before = report.read_bytes()
    assert not splice(report, re.compile(b"<!--absent-->"), lambda _: [b"x"])
    assert report.read_bytes() == before
    assert not splice(tmp_path / "missing.html", here, lambda _: [b"x"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html"]  # no leftovers
    # every mark, each with its own pieces (JUnit's placeholders)
    report.write_text("a<!--here1-->b<!--here2-->c", encoding="utf-8")
    assert splice(report, here, lambda found: [found.group(1) * 3])
    assert report.read_text(encoding="utf-8") == "a111b222c"


def test_hostile_bytes_in_the_file_and_the_pieces_are_written_as_they_are(
        tmp_path: Path) -> None:
    """A mark's pieces are bytes put in as given (the writer escaped them); the file's
    other bytes, invalid UTF-8 and a mark-like text inside a piece included, are kept and
    never searched again."""
    import re

    from pytest_cluster.report.splice import splice

    here = re.compile(rb"<!--here-->")
    report = tmp_path / "junit.xml"
    report.write_bytes(b"\xff\xfe<a>]]>\x00<!--here--></a>")
    assert splice(report, here, lambda _: [b"<!--here-->", b"\xc3\x28&lt;"])
    assert report.read_bytes() == b"\xff\xfe<a>]]>\x00<!--here-->\xc3\x28&lt;</a>"
