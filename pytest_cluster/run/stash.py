"""What a run keeps in `config.stash`: the keys, in a module of their own that every hook
module can import (it imports nothing of ours at run time)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pytest_cluster.contract.model import Spec

#: The validated spec, in `config.stash` (absent without --cluster).
SPEC_KEY: pytest.StashKey[Spec] = pytest.StashKey()
#: Where probe results are kept: the run's probes/ folder (a temporary one without
#: reports); pytest-xdist workers get the controller's.
CACHE_DIR_KEY = pytest.StashKey[Path]()
#: Why fewer pytest-xdist workers run than `-n` asked for (absent where none were cut).
WORKERS_CUT_KEY = pytest.StashKey[str]()
#: How long this run's verdict holds, in seconds (--cluster-valid-for, checked at configure
#: time; absent: age.DEFAULT_VALID_FOR_S).
VALID_FOR_KEY = pytest.StashKey[float]()
