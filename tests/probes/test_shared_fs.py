"""The shared check's file (the shared_fs probe as it is shipped): written, swept, removed."""

from __future__ import annotations

import os
import time
from pathlib import Path

from tests.probes.test_storage import ours
from tests.shipped_probe import run_probe


def test_the_shared_write_sweeps_expired_files_and_leaves_running_checks_alone(
        scratch: Path) -> None:
    now = int(time.time())
    expired = scratch / f".pytest-cluster-shared-{now - 5}-0123456789ab"
    running = scratch / f".pytest-cluster-shared-{now + 3600}-0123456789ab"
    legacy = scratch / ".pytest-cluster-shared-abcdef012345"
    for path in (expired, running, legacy):
        path.write_bytes(b"z" * 1000)
    os.utime(legacy, (now - 600, now - 600))  # an age that reads the same during the test
    token = f"{now + 3600}-fedcba987654"
    data = run_probe("shared_fs", "--path", str(scratch), "--token", token, "write")
    stamp = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(now - 5))
    assert data["leftovers"] == [
        {"path": str(expired), "bytes": 1000, "removed": True,
         "why": f"its shared check ended by {stamp}; the run was cut off before removing it"},
        {"path": str(legacy), "bytes": 1000, "removed": False,
         "why": "written 10 min ago by a pytest-cluster older than the leftover sweep, which "
                "records no expiry: left in place; remove it by hand if no pytest-cluster run "
                "is checking this filesystem (the sweep removes it once it is 24 h old)"}]
    assert ours(scratch) == sorted([legacy.name, running.name,
                                    f".pytest-cluster-shared-{token}"])
    removed = run_probe("shared_fs", "--path", str(scratch), "--token", token, "remove")
    assert removed["removed"] is True
    again = run_probe("shared_fs", "--path", str(scratch), "--token", token, "remove")
    assert again["removed"] is False
    assert "error" not in again


def test_a_shared_token_that_is_not_ours_is_refused(scratch: Path) -> None:
    data = run_probe("shared_fs", "--path", str(scratch), "--token", "../../etc/x", "write")
    assert data["error"].startswith("token '../../etc/x' is not <expires>-<12 hex digits>")
    assert ours(scratch) == []

