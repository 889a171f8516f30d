"""measure/calls.py: the probe calls the spec makes, against their exact arguments."""

from __future__ import annotations

from pytest_cluster.contract import parse_spec
from pytest_cluster.contract.extensions import added_clauses
from pytest_cluster.contract.model import GpuSpec
from pytest_cluster.measure.calls import (
    gpu_call,
    gpu_perf_call,
    gpu_stress_call,
    import_call,
    storage_call,
)
from pytest_cluster.probes.gpu_perf import PARTS
from tests.probes.test_gpu import gpus_of

SPEC = """\
cluster: {name: c, nodes: n1, launcher: local}
storage:
  - path: /d
    capacity: ">= 1 GiB"
    write: ">= 1 GB/s"
    read: ">= 1 GB/s"
"""


def test_the_storage_probe_measures_only_what_the_selection_checks() -> None:
    (fs,) = parse_spec(SPEC, "t.yaml").storage
    every = ("storage", ("--path", "/d", "--io-size", "1073741824", "--files", "2000",
                         "--skip", "metadata"))
    assert (storage_call(fs).name, storage_call(fs).args) == every
    sanity = storage_call(fs, frozenset({"storage[/d].capacity", "host.cpu_cores"}))
    assert sanity.args == ("--path", "/d", "--io-size", "1073741824", "--files", "2000",
                           "--skip", "write", "--skip", "read", "--skip", "metadata")
    one = storage_call(fs, frozenset({"storage[/d].read"}))
    assert one.args[-4:] == ("--skip", "write", "--skip", "metadata")
    # no case of this filesystem selected (your own tests ask for it): every part
    assert storage_call(fs, frozenset({"host.cpu_cores"})).args == every[1]


def test_probe_calls_are_exact_argument_lists() -> None:
    gpus = gpus_of("  count: 8\n  matmul: {bf16: '>= 700 TFLOPS', fp8: '>= 1 PFLOPS'}\n"
                   "  h2d: '>= 40 GB/s'\n  xid_window: 5 s\n  load_time: 30 s\n")
    assert gpu_call(gpus).args == ("--xid-window", "5")
    call = gpu_perf_call(gpus)
    assert call is not None
    # the parts no clause of the contract reads, less those an installed extension's
    # clause in it reads (a clause with a default is in every `gpus:` section)
    theirs = {d.reads.part for d in added_clauses() if d.section == "gpus" and d.reads
              and d.reads.probe == "gpu_perf" and gpus.item(d.key) is not None}
    skipped = [arg for part in ("usable_memory", "copy", "d2h", "p2p") if part not in theirs
               for arg in ("--skip", part)]
    assert call.args == ("--dtypes", "bf16,fp8", "--shape", "8192,8192,8192", "--load-time", "30",
                         *skipped)


def test_no_torch_probe_when_nothing_needs_load() -> None:
    gpus = gpus_of("  count: 8\n  throttle: false\n  pcie: false\n")
    assert gpus.temperature is not None  # the default ceiling, judged under load
    assert gpu_perf_call(gpus) is not None
    remap = gpus.rule("row_remap")
    assert remap is not None
    bare = GpuSpec(clauses=(gpus.count, remap))
    assert gpu_perf_call(bare) is None


def test_the_import_probe_call_is_its_filesystems_interpreter_and_repeats() -> None:
    fs, warm = parse_spec(
        "cluster: {name: t, nodes: [a], python: /usr/bin/python3}\n"
        "storage:\n  - {path: /d, import_torch: '<= 2 s', import_repeats: 5}\n"
        "  - {path: /w, import_torch: '<= 2 s', python: /opt/py/bin/python,"
        " cold_cache: false}\n", "t.yaml").storage
    assert import_call(fs).name == "import_latency"
    assert import_call(fs).args == ("--python", "/usr/bin/python3", "--repeats", "5",
                                    "--path", "/d", "--cold")
    assert import_call(warm).args == ("--python", "/opt/py/bin/python", "--repeats", "3",
                                      "--path", "/w")


def test_the_stress_call_loads_every_gpu_for_stress_time_and_measures_nothing_else() -> None:
    gpus = gpus_of("  count: 8\n  matmul: {bf16: '>= 700 TFLOPS'}\n"
                   "  matmul_size: 4096\n  stress_time: 90 s\n")
    call = gpu_stress_call(gpus)
    assert call.name == "gpu_perf"
    assert call.args == ("--dtypes", "", "--shape", "4096,4096,4096", "--load-time", "90",
                         "--sdc", *(arg for part in PARTS for arg in ("--skip", part)))
