"""The fake torch (tests/probes/fakes/torch) loaded in this process for the gpu_perf
probe's functions, which take torch as an argument: a fresh copy each time (its memory
counted from zero) under a private name, so that no real torch is shadowed."""

from __future__ import annotations

import importlib.util
import itertools
import types
from collections.abc import Iterable
from pathlib import Path
from typing import Any

FAKE_TORCH = Path(__file__).resolve().parent.parent / "fakes" / "torch" / "__init__.py"
_loaded = itertools.count()


def fake_torch() -> Any:
    spec = importlib.util.spec_from_file_location(f"fake_torch_{next(_loaded)}", FAKE_TORCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def timed(milliseconds: Iterable[float]) -> Any:
    """A fake torch whose CUDA events measure `milliseconds`, one after the other (again
    from the first when they run out)."""
    torch = fake_torch()
    times = itertools.cycle(list(milliseconds))

    class Event:
        def __init__(self, enable_timing: bool = False) -> None:
            assert enable_timing

        def record(self) -> None:
            pass

        def elapsed_time(self, end: Event) -> float:
            return next(times)

    torch.cuda = types.SimpleNamespace(**{**vars(torch.cuda), "Event": Event})
    return torch
