"""Keys of what the plugin keeps in `config.stash`."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_cluster.spec.model import Spec

SPEC_KEY = pytest.StashKey[Spec]()
CACHE_DIR_KEY = pytest.StashKey[Path]()
