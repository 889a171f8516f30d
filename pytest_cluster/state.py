"""Keys of what the plugin keeps in `config.stash`."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_cluster.plan import Case, Plan
from pytest_cluster.spec.model import Spec

SPEC_KEY = pytest.StashKey[Spec]()
CACHE_DIR_KEY = pytest.StashKey[Path]()
CASE_KEY = pytest.StashKey[Case]()  # on each contract item
PLANNED_KEY = pytest.StashKey[Plan]()  # contract cases collected, before the selection
