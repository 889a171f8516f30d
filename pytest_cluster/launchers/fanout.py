"""Fan-out: the same work for many nodes (or jobs) in threads, at most so many at once,
results in order; an interrupt or an exception stops every launch under way."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, TypeVar

from pytest_cluster.launchers.process import stop_everything, working_for, working_on

if TYPE_CHECKING:
    from pytest_cluster.launchers.result import ProbeResult

Item = TypeVar("Item")
Result = TypeVar("Result")


def in_parallel(work: Callable[[Item], Result], items: Sequence[Item],
                at_once: int) -> list[Result]:
    """`work(item)` for every item in threads, at most `at_once` at a time, results in
    order. When this thread is interrupted (Ctrl-C lands in the main thread while the
    launches wait in the pool's threads) or a call raises, the calls not yet started are
    dropped and every running launch is stopped before the exception goes on: the pool's
    shutdown would otherwise wait for them to end by themselves."""
    if not items:
        return []
    epoch = working_on()

    def on_behalf(item: Item) -> Result:
        """In a pool thread, for the caller: may it start launches after an interrupt."""
        with working_for(epoch):
            return work(item)

    pool = ThreadPoolExecutor(max_workers=max(1, min(at_once, len(items))))
    try:
        return list(pool.map(on_behalf, items))
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        stop_everything()
        raise
    finally:
        pool.shutdown(wait=True)


def fan_out(nodes: Sequence[str], one: Callable[[str], ProbeResult],
            parallel: int) -> dict[str, ProbeResult]:
    """Run `one(node)` for every node, at most `parallel` at once, results in node order."""
    return {result.node: result for result in in_parallel(one, nodes, parallel)}
