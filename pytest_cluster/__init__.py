"""pytest-cluster: acceptance tests for the promises in a GPU-cluster contract."""

__version__ = "0.1.0"
