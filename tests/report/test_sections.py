"""report/sections.py: the report's inventory, sealing and baseline sections."""

from __future__ import annotations

from html import escape
from typing import cast

from pytest_cluster.measure.inventory_file import InventoryDocument
from pytest_cluster.report.sections import baseline_html, inventory_html, sealing_html


def test_the_report_renders_any_inventory_and_escapes_it() -> None:
    why = {"unreadable": "<script>alert(1)</script> not probed"}
    document = {"complete": False, "nodes": {
        "n1": why,
        "n2": {"simulated": False, "dmi": why, "machine_id": "<b>m</b>", "cpu": {},
               "memory_bytes": why, "software": {"nccl": why}, "gpus": why,
               "interfaces": why, "infiniband": why, "filesystems": why},
        "n3": {"gpus": [{"index": 0, "name": "H100", "serial": "<i>s</i>"}],
               "filesystems": [{"path": "/d", "block_devices": why}]}}}
    html = inventory_html(cast("InventoryDocument", document))
    assert "<script>" not in html and "<b>m</b>" not in html and "<i>s</i>" not in html
    assert "&lt;i&gt;s&lt;/i&gt;" in html and "3 node(s)" in html
    assert "The run was interrupted" in html
    untaken = inventory_html(None, "OSError: disk full <b>")
    assert "<h2>Inventory</h2>" in untaken and "<table" not in untaken
    assert "<p>Not taken: OSError: disk full &lt;b&gt;</p>" in untaken
    assert inventory_html(None) == ""


def test_the_sealing_says_signed_or_unsigned_and_escapes_a_hostile_run_dir() -> None:
    hostile = "<img src=x onerror=alert(1)>"
    signed = sealing_html(["SHA256:abc"], hostile)
    assert "signed with SHA256:abc" in signed and "UNSIGNED" not in signed
    assert hostile not in signed
    assert f"pytest-cluster verify {escape(hostile)} --key PUBKEY" in signed
    unsigned = sealing_html([], "reports/latest")
    assert "UNSIGNED (no --cluster-sign-key or --cluster-ssh-sign-key given)" in unsigned
    assert "signed with" not in unsigned


def test_no_baseline_no_section() -> None:
    assert baseline_html(None, [], 0.05) == ""
