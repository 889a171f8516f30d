"""What a run recorded and how it is kept: the evidence each test records, results.jsonl,
the plan, the ledger and its tallies, the verdicts, the derived cases, the baseline (as
untrusted input), the run directory, the JUnit spool and the sealed bundle.

`from pytest_cluster.evidence import Evidence` (the import path of your own tests before
the folders) still works: the names of evidence/record/check.py are looked up when asked for,
so that importing another part of evidence/ (verify's bundle) does not load them.
"""

from __future__ import annotations

import importlib
from typing import Any

_CHECK = ("Evidence", "Place", "Promise")


def __getattr__(name: str) -> Any:
    if name in _CHECK:
        return getattr(importlib.import_module("pytest_cluster.evidence.record.check"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
