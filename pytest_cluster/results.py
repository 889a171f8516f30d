"""results.jsonl's reader, where README's earlier versions named it: a re-export of
pytest_cluster.evidence.results (the evidence lives in evidence/)."""

from pytest_cluster.evidence.results import (
    COMPLETE,
    INTERNAL_ERROR,
    INTERRUPTED,
    PARTIAL,
    RunResults,
    read_results,
)

__all__ = ["COMPLETE", "INTERNAL_ERROR", "INTERRUPTED", "PARTIAL", "RunResults",
           "read_results"]
