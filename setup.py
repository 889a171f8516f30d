"""Package discovery; every other setting is in pyproject.toml.

Every folder under pytest_cluster/ is a package (pytest_cluster/sim/nvml holds the simulated
`pynvml` module, which is put first on a simulated node's PYTHONPATH, so it has no
__init__.py), and the contract suites in the top-level acceptance/ folder are installed as
pytest_cluster.acceptance, so `pytest --cluster=...` finds them from any directory.
"""

from setuptools import find_namespace_packages, setup

setup(
    packages=[*find_namespace_packages(include=["pytest_cluster", "pytest_cluster.*"],
                                       exclude=["*.__pycache__"]),
              "pytest_cluster.acceptance"],
    package_dir={"pytest_cluster.acceptance": "acceptance"},
)
