"""The scorecard (report/scorecard.py): the clause table counts cases as every other view,
and the passed lists stream every row, a piece at a time."""

from __future__ import annotations

from pathlib import Path

from pytest_cluster.evidence.record.summary import clause_tallies
from tests.evidence.record.test_summary import rec


def test_the_clause_table_counts_cases_as_every_other_view() -> None:
    """Two payloads per node: 4 cases passed on 2 nodes, 2 failed on a third; the table
    says 4 and 2 (as the terminal and JUnit), the failing place by name, and its last row
    the cases of every clause. A skipped case is neither."""
    from pytest_cluster.report.scorecard import clause_table

    busbw = "interconnect.busbw[intra_node]"
    records = [rec(node, value, outcome, key=busbw) for node, value, outcome in (
        ("n1", 800.0, "passed"), ("n1", 790.0, "passed"), ("n2", 800.0, "passed"),
        ("n2", 795.0, "passed"), ("n3", 500.0, "failed"), ("n3", 510.0, "failed"),
        ("n4", None, "skipped"))] + [rec("n1", 8, key="gpus.count")]
    tallies = clause_tallies(records)
    t = next(t for t in tallies if t.key == busbw)
    assert (t.passed_cases, t.failed_cases) == (4, 2)
    assert (t.passed, t.failed) == ({"n1", "n2"}, {"n3"})
    table = clause_table(tallies)
    assert f"<td>{busbw}</td><td>&gt;= 700 TFLOPS</td><td>4</td><td>2</td><td>n3</td>" \
        in table
    assert "<th>Cases passed</th><th>Cases failed</th>" in table
    assert '<tr class="total"><th>Every clause</th><th></th><th>5</th><th>2</th>' in table



def test_the_passed_lists_stream_every_row_in_order_per_clause(tmp_path: Path) -> None:
    """2,500 rows in two clauses, interleaved as a run writes them: each clause's list
    holds its rows in order, in pieces of at most 1,000 rows."""
    import html
    import tempfile

    from pytest_cluster.evidence.record.gathered import PassedRow, PassedRows
    from pytest_cluster.report.scorecard import passed_lists

    with tempfile.TemporaryFile() as spool:
        rows = PassedRows(spool)
        added: dict[str, list[PassedRow]] = {"gpus.d2h": [], "host.memory": []}
        for i in range(2500):
            clause = "gpus.d2h" if i % 3 else "host.memory"
            row = PassedRow(f"test_d2h[n{i}-gpu<{i % 8}>]", f"{i} GB/s", ">= 40 GB/s",
                            "+2 %", "")
            rows.add(clause, row)
            added[clause].append(row)
        assert rows.counts == {"host.memory": 834, "gpus.d2h": 1666}
        assert rows.as_dict() == {"host.memory": added["host.memory"],
                                  "gpus.d2h": added["gpus.d2h"]}
        pieces = list(passed_lists(rows, {"gpus.d2h": "PCIe Gen5 x16"}))
    text = "".join(pieces)
    assert text.index("host.memory: 834 passed") < text.index("gpus.d2h: 1666 passed")
    assert text.count("<tr><td>test_d2h[") == 2500
    assert html.escape("test_d2h[n2-gpu<2>]") in text and "gpu<2>" not in text
    assert "Reference (informs, never decides): PCIe Gen5 x16" in text
    assert max(piece.count("<tr><td>") for piece in pieces) == 1000
    with tempfile.TemporaryFile() as empty:
        assert list(passed_lists(PassedRows(empty))) == []




def test_the_footer_names_the_level_that_ran() -> None:
    """-m sanity: its level and what it covers; no -m: acceptance, said so; before the
    run's end: nothing."""
    from typing import Any, cast

    from pytest_cluster.report.scorecard import level_text

    end: dict[str, Any] = {"selection": {"-m": "sanity"}, "level": "sanity",
                           "levels": ["sanity"]}
    assert level_text(cast("Any", end)) == "level sanity (-m sanity), covering sanity"
    end = {"selection": {}, "level": "acceptance", "levels": ["sanity", "acceptance"]}
    assert level_text(cast("Any", end)) == \
        "level acceptance (no -m), covering sanity, acceptance"
    assert level_text(None) == ""
