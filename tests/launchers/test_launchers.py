from __future__ import annotations

import contextlib
import dataclasses
import gc
import math
import os
import resource
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from pytest_cluster.contract import load_spec, parse_spec
from pytest_cluster.contract.launchers import KINDS
from pytest_cluster.contract.model import ClusterSpec, Spec
from pytest_cluster.errors import LaunchError, ProbeFailed
from pytest_cluster.evidence.tally import is_simulated
from pytest_cluster.launchers import (
    ErrorKind,
    ProbeResult,
    get_launcher,
    launcher_class,
)
from pytest_cluster.launchers.fanout import fan_out
from pytest_cluster.launchers.local import LocalLauncher, probe_command
from pytest_cluster.launchers.process import run_process
from pytest_cluster.measure.cache import ProbeCache, write_by_node
from pytest_cluster.probes import ProbeCall

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def cluster(python: str = sys.executable, launcher: str = "local") -> Spec:
    return Spec("t.yaml", "0" * 64, ClusterSpec("t", ("n1", "n2"), launcher, python, 60.0, 8))


def assert_gone(pid: int, seconds: float = 5.0) -> None:
    """The process `pid` has exited (is not alive, nor a zombie of ours) within `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.1)
    pytest.fail(f"process {pid} is still alive")


def test_probe_command_is_an_argument_list() -> None:
    call = ProbeCall("storage", ("--path", "/data; rm -rf /"))
    assert probe_command("/shared/venv/bin/python", call) == [
        "/shared/venv/bin/python", "-", "--path", "/data; rm -rf /"]


def test_registry() -> None:
    assert isinstance(get_launcher(cluster()), LocalLauncher)
    with pytest.raises(LaunchError, match=rf"unknown launcher 'pbs'; known: {', '.join(KINDS)}"):
        get_launcher(cluster(launcher="pbs"))


def test_launchers_say_what_they_can_do() -> None:
    """(simulated, one_host) per launcher: what the rest of the code asks, never a name."""
    found = {name: (launcher_class(name).simulated, launcher_class(name).one_host)
             for name in KINDS}
    assert found == {name: (kind.simulated, kind.one_host) for name, kind in KINDS.items()}
    assert {name: found[name] for name in ("local", "sim", "ssh", "slurm")} == {
        "local": (False, True), "sim": (True, False), "ssh": (False, False),
        "slurm": (False, False)}


def test_a_run_is_simulated_when_its_launcher_is(monkeypatch: pytest.MonkeyPatch) -> None:
    assert is_simulated(load_spec(EXAMPLES / "sim-h100.yaml")) is True
    assert is_simulated(cluster()) is False
    # asked of the launcher's declaration, not inferred from a name
    monkeypatch.setitem(KINDS, "local", dataclasses.replace(KINDS["local"], simulated=True))
    assert is_simulated(cluster()) is True


def test_local_launcher_runs_every_node() -> None:
    results = get_launcher(cluster()).run(ProbeCall("host"), ["n1", "n2", "n3"], 60)
    assert list(results) == ["n1", "n2", "n3"]
    for name, result in results.items():
        assert result.ok, result.describe()
        assert result.node == name
        assert result.payload()["cpu"]["threads"] == os.cpu_count()
        assert result.simulated is False


def test_missing_interpreter_is_its_own_kind() -> None:
    result = get_launcher(cluster("/no/such/python")).run(ProbeCall("host"), ["n1"], 60)["n1"]
    assert result.error is ErrorKind.INTERPRETER_MISSING
    assert result.describe() == ("n1: host probe interpreter_missing: '/no/such/python' not "
                                 "found (check cluster.python in the spec)")
    with pytest.raises(ProbeFailed):
        result.payload()


def test_default_interpreter_is_the_launchers() -> None:
    """Local nodes are this machine: pytest's own interpreter (and its torch); elsewhere
    python3 on the nodes' PATH."""
    assert KINDS["local"].default_python() == sys.executable
    assert KINDS["ssh"].default_python() == KINDS["slurm"].default_python() == "python3"


@pytest.mark.parametrize(("section", "python"), [
    ("launcher: local", sys.executable),
    ("launcher: ssh", "python3"),
    ("python: python3", "python3"),  # named in the spec: kept as written
])
def test_spec_takes_the_launchers_default_interpreter(section: str, python: str) -> None:
    spec = parse_spec(f"cluster: {{name: x, nodes: a, {section}}}\n"
                      "storage: [{path: /tmp, free: '>= 1 B'}]\n", "t.yaml")
    assert spec.cluster.python == python
    assert spec.storage[0].python == python


def test_local_example_runs_without_the_venv_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """`.venv/bin/pytest --cluster=examples/localhost.yaml` with no venv activated runs the
    probes with pytest's interpreter, not the system python3 (which has no torch)."""
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    spec = load_spec(EXAMPLES / "localhost.yaml")
    result = get_launcher(spec).run(ProbeCall("host"), ["localhost"], 60)["localhost"]
    assert result.payload()["python_executable"] == sys.executable


def test_crashed_probe_names_the_interpreter_path(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "python-x"
    fake.write_text("#!/bin/sh\necho boom >&2\nexit 3\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    result = get_launcher(cluster("python-x")).run(ProbeCall("host"), ["n1"], 60)["n1"]
    assert result.describe() == (f"n1: host probe crashed: {fake} exited with an error "
                                 "(exit code 3) | stderr: boom")


@pytest.mark.slow
def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    marker = tmp_path / "child.pid"
    script = ("import os, subprocess, sys, time\n"
              "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
              f"open({str(marker)!r}, 'w').write(str(child.pid))\n"
              "time.sleep(60)\n")
    result = run_process("n1", "host", [sys.executable, "-"], script, timeout_s=1.5)
    assert result.error is ErrorKind.TIMEOUT
    assert result.message == "no answer within 1.5 s; killed"
    assert_gone(int(marker.read_text()))


def test_crash_keeps_exit_code_and_stderr() -> None:
    result = run_process("n1", "host", [sys.executable, "-"],
                         "import sys\nprint('boom', file=sys.stderr)\nsys.exit(3)\n", 30)
    assert result.error is ErrorKind.CRASHED
    assert result.exit_code == 3
    assert result.describe() == ("n1: host probe crashed: the probe exited with an error "
                                 "(exit code 3) | stderr: boom")


def test_a_launch_leaves_no_pipe_open() -> None:
    """Each pipe to a probe is closed once read: one left open is a ResourceWarning, which
    a run under -W error (a project's filterwarnings) makes an error."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        for _ in range(3):
            run_process("n1", "host", [sys.executable, "-c", "print('{}')"], "", 30)
        gc.collect()
    assert [str(w.message) for w in caught if w.category is ResourceWarning] == []


@pytest.mark.parametrize("stream", ["stdout", "stderr"])
def test_a_node_that_prints_without_end_fails_its_probe_not_the_controller(
        stream: str) -> None:
    """A node printing 400 MB (on either stream) costs its probe, named with the stream
    and what was seen, within the limit's memory: it is stopped at the first byte past
    the limit, not at its timeout, and what it printed is not kept."""
    limit = 2**20
    script = (f"import sys\nout = sys.{stream}.buffer\nfor _ in range(400):\n"
              "    out.write(b'x' * 2**20)\n")
    started = time.monotonic()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result = run_process("n1", "host", [sys.executable, "-"], script, 60, limit=limit)
    assert time.monotonic() - started < 30  # stopped, not waited out to its timeout
    assert result.error is ErrorKind.BAD_OUTPUT and result.data is None
    assert result.message.startswith("the probe printed too much, so it was stopped: "
                                     f"{stream}: more than 1 MiB (")
    assert "(cluster.probe_output)" in result.message
    assert len(result.stderr_tail) <= 2000
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown < 64 * 2**10  # KiB: the limit's worth, never the 400 MB


def test_output_within_the_limit_is_read_whole() -> None:
    """A probe's answer just under the limit (its JSON on its last line) is read whole,
    and stdin larger than a pipe's buffer reaches it whole."""
    script = ("import json, sys\n"
              f"print('y' * {2**20 - 200})\n"
              "print(json.dumps({'probe': 'host', 'data': {'got': len(sys.stdin.read())}}))\n")
    source = script + "#" + "z" * 300_000 + "\n"
    result = run_process("n1", "host", [sys.executable, "-c", script], source, 60,
                         limit=2**20)
    assert result.ok, result.describe()
    assert result.payload() == {"got": len(source)}


def test_bad_output() -> None:
    result = run_process("n1", "host", [sys.executable, "-"], "print('hello')\n", 30)
    assert result.error is ErrorKind.BAD_OUTPUT
    assert result.message.startswith("the probe's last line is not JSON")


def test_fan_out_is_parallel_and_ordered() -> None:
    seen: list[str] = []

    def one(node: str) -> ProbeResult:
        seen.append(node)
        return ProbeResult(node=node, probe="host", data={"n": node})

    results = fan_out([f"n{i}" for i in range(20)], one, parallel=4)
    assert list(results) == [f"n{i}" for i in range(20)]
    assert sorted(seen) == sorted(results)


def test_result_json_round_trip() -> None:
    result = ProbeResult(node="n1", probe="host", data=None, error=ErrorKind.TIMEOUT,
                         message="m", exit_code=None, stderr_tail="e", duration_s=1.0)
    assert ProbeResult.from_json(result.to_json()) == result


def _count_runs(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


def _cache_worker(directory: str, log: str) -> None:
    def run(call: ProbeCall, nodes: Sequence[str]) -> dict[str, ProbeResult]:
        with open(log, "a") as handle:
            handle.write(f"{os.getpid()}\n")
        time.sleep(0.3)
        return {n: ProbeResult(node=n, probe=call.name, data={"pid": os.getpid()}) for n in nodes}

    ProbeCache(Path(directory)).get(ProbeCall("host"), ["n1", "n2"], run)


def test_cache_runs_a_probe_once_across_processes(tmp_path: Path) -> None:
    import multiprocessing

    log = tmp_path / "runs.log"
    ctx = multiprocessing.get_context("spawn")
    workers = [ctx.Process(target=_cache_worker, args=(str(tmp_path / "c"), str(log)))
               for _ in range(3)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
        assert worker.exitcode == 0
    assert _count_runs(log) == 1


def test_cached_results_are_a_node_a_line_and_read_back_the_same(tmp_path: Path) -> None:
    results = {n: ProbeResult(node=n, probe="host", data={"name": n, "q": 'a"\nb'},
                              simulated=True, exit_code=0)
               for n in ("n1", "n2", 'odd"name')}
    target = tmp_path / "host.json"
    write_by_node(target, results)
    lines = target.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "{" and lines[-1] == "}" and len(lines) == 5
    assert lines[1].startswith('"n1": {') and lines[3].startswith('"odd\\"name": {')
    assert not list(tmp_path.glob("*.tmp"))
    cache = ProbeCache(tmp_path)
    assert cache._load(target) == results  # what another process reads

    def never(call: ProbeCall, nodes: Sequence[str]) -> dict[str, ProbeResult]:
        raise AssertionError("ran again")

    cache.directory = tmp_path / "c"
    cache.get(ProbeCall("host"), list(results), lambda c, n: results)
    assert ProbeCache(tmp_path / "c").get(ProbeCall("host"), list(results), never) == results


def test_interrupt_kills_probes_on_every_node(tmp_path: Path) -> None:
    """Ctrl-C while nodes are probed in parallel leaves no probe process behind."""
    import signal
    import subprocess as sp
    import textwrap

    pids = tmp_path / "pids"
    pids.mkdir()
    driver = textwrap.dedent(f"""
        import sys
        from pytest_cluster.launchers.fanout import fan_out
        from pytest_cluster.launchers.process import run_process
        script = ("import os, time\\n"
                  "open(os.path.join({str(pids)!r}, str(os.getpid())), 'w').close()\\n"
                  "time.sleep(120)\\n")
        fan_out(["a", "b", "c"], lambda n: run_process(n, "host", [sys.executable, "-"],
                script, 300), parallel=3)
    """)
    process = sp.Popen([sys.executable, "-c", driver])
    for _ in range(100):
        if len(list(pids.iterdir())) == 3:
            break
        time.sleep(0.1)
    process.send_signal(signal.SIGINT)
    assert process.wait(30) != 0
    for pid_file in pids.iterdir():
        assert_gone(int(pid_file.name))



def test_after_ctrl_c_no_probe_starts_anywhere(tmp_path: Path) -> None:
    """Ctrl-C while pool threads of the caller's own (like the interconnect's, one job
    per node group) each run probes one after the other: the running ones end at once,
    and none of those threads starts another; the main thread's cleanup still runs its
    probe (a shared check removing its file)."""
    import signal
    import subprocess as sp
    import textwrap

    first, second, cleanup = tmp_path / "first", tmp_path / "second", tmp_path / "cleanup"
    first.mkdir()
    second.mkdir()
    cleanup.mkdir()
    driver = textwrap.dedent(f"""
        import sys
        from concurrent.futures import ThreadPoolExecutor
        from pytest_cluster.launchers.fanout import fan_out
        from pytest_cluster.launchers.process import run_process
        from pytest_cluster.launchers.local import LocalLauncher
        from pytest_cluster.contract.model import ClusterSpec
        LocalLauncher(ClusterSpec("t", ("a",), "local", sys.executable, 60, 8))
        def script(where):
            return ("import os, time\\n"
                    f"open(os.path.join({{where!r}}, str(os.getpid())), 'w').close()\\n"
                    "time.sleep(120)\\n")
        def two(node):
            run_process(node, "host", [sys.executable, "-"], script({str(first)!r}), 300)
            return run_process(node, "host", [sys.executable, "-"], script({str(second)!r}),
                               300)
        try:
            with ThreadPoolExecutor(3) as pool:
                list(pool.map(two, ["a", "b", "c"]))
        finally:
            fan_out(["a"], lambda node: run_process(node, "host", [sys.executable, "-c",
                    f"open({{str({str(cleanup)!r})!r}} + '/done', 'w').close()"], "", 30),
                    1)
    """)
    process = sp.Popen([sys.executable, "-c", driver])
    try:
        for _ in range(100):
            if len(list(first.iterdir())) == 3:
                break
            time.sleep(0.1)
        process.send_signal(signal.SIGINT)
        assert process.wait(30) != 0  # minutes before: each thread ran both probes
        for pid_file in first.iterdir():
            assert_gone(int(pid_file.name))
        assert list(second.iterdir()) == []
        assert [p.name for p in cleanup.iterdir()] == ["done"]
    finally:  # what a failure left: ours, ended by their ids
        process.kill()
        for pid_file in [*first.iterdir(), *second.iterdir()]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(pid_file.name), signal.SIGKILL)


def test_a_document_with_numbers_that_are_not_finite_is_kept_as_strict_json(
        tmp_path: Path) -> None:
    """A search's busbw where no job ran is NaN: the run's file of it is strict JSON (no
    NaN token), and another process reads the same numbers back."""
    document: dict[str, Any] = {"busbw": math.nan, "rounds": [[["n1"], math.inf]], "ok": 1.5}
    made = ProbeCache(tmp_path).document("search-x", lambda: document)
    assert made is document
    (written,) = [p for p in tmp_path.rglob("*.json") if "search-x" in p.name]
    text = written.read_text()
    assert "NaN" not in text and "Infinity" not in text
    again = ProbeCache(tmp_path).document("search-x", lambda: {**document, "computed": 1})
    assert math.isnan(again["busbw"]) and again["rounds"] == [[["n1"], math.inf]]
    assert again["ok"] == 1.5


def test_each_launchers_capabilities_are_its_declarations() -> None:
    """`simulated` and `one_host` are said once, in KINDS; every class has them from there."""
    from pytest_cluster.contract.launchers import KINDS
    from pytest_cluster.launchers import launcher_class
    for name, kind in KINDS.items():
        cls = launcher_class(name)
        assert (cls.name, cls.simulated, cls.one_host) == (name, kind.simulated,
                                                          kind.one_host)
    assert [n for n, k in KINDS.items() if k.simulated] == ["sim"]


def _answer(data: dict[str, object] | None, error: ErrorKind | None = None) -> ProbeResult:
    return ProbeResult("n1", "job_node", data, error=error)


def test_a_payload_is_typed_once_its_reader_checked_it() -> None:
    """payload_as(read) is the reader's record of the node's answer: where_am_i keeps the
    addresses and host name it checked; an answer it refuses raises its ValueError; a
    probe that gave no answer raises ProbeFailed, as payload() does."""
    from pytest_cluster.launchers.base import where_am_i

    said = _answer({"addresses": ["10.0.0.1"], "hostname": "n1", "extra": 1})
    assert said.payload_as(where_am_i) == {"addresses": ["10.0.0.1"], "hostname": "n1"}
    assert _answer({}).payload_as(where_am_i) == {"addresses": [], "hostname": ""}
    wrongs: list[dict[str, object]] = [{"addresses": "10.0.0.1"}, {"addresses": [1]}]
    for wrong in wrongs:
        with pytest.raises(ValueError, match="not a list of texts"):
            _answer(wrong).payload_as(where_am_i)
    with pytest.raises(ProbeFailed, match="timeout"):
        _answer(None, ErrorKind.TIMEOUT).payload_as(where_am_i)


def test_a_node_whose_whereami_is_not_addresses_is_its_bad_output() -> None:
    """master_address reads job_node --whereami through its reader: an answer whose
    addresses are no list of texts is the node's bad output (JobFailed naming it), never
    an AttributeError of the controller's."""
    from pytest_cluster.errors import JobFailed
    from pytest_cluster.launchers.base import Launcher

    class Answering(Launcher):
        def run(self, call: ProbeCall, nodes: Sequence[str], timeout_s: float,
                ) -> dict[str, ProbeResult]:
            return {node: ProbeResult(node, call.name, {"addresses": [7]}) for node in nodes}

    launcher = Answering.__new__(Answering)
    with pytest.raises(JobFailed, match="n1: job_node probe bad_output: its addresses"):
        launcher.master_address("n1", 10)
