"""launchers/result.py: a probe's result as JSON and back, how a probe's output becomes its
payload (parse_probe_output refuses what strict JSON refuses, and what nests or counts
beyond reason), and the payload typed by its reader (payload_as)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TypedDict

import pytest

from pytest_cluster.errors import ProbeFailed
from pytest_cluster.launchers import ErrorKind, ProbeResult
from pytest_cluster.launchers.result import CONTROLLER_SIDE, parse_probe_output


def test_result_json_round_trip() -> None:
    result = ProbeResult(node="n1", probe="host", data=None, error=ErrorKind.TIMEOUT,
                         message="m", exit_code=None, stderr_tail="e", duration_s=1.0)
    assert ProbeResult.from_json(result.to_json()) == result


def test_a_result_read_back_from_its_json_text_is_the_same_result() -> None:
    """What another process reads (the cache's file) is the result, its payload and its
    error kind included; an ok result and each error kind come back as they were."""
    results = [ProbeResult("n1", "gpu", {"gpus": [{"index": 0}], "t": 1.5}, simulated=True,
                           exit_code=0, started_at=2.0)]
    results += [ProbeResult("n1", "host", None, kind, "said", 3, "tail") for kind in ErrorKind]
    for result in results:
        text = json.dumps(result.to_json(), allow_nan=False)
        assert ProbeResult.from_json(json.loads(text)) == result


def test_only_the_controllers_faults_are_controller_side() -> None:
    for kind in ErrorKind:
        failed = ProbeResult("n1", "host", None, kind)
        assert failed.controller_side is kind.controller_side is (kind in CONTROLLER_SIDE)
    assert not ProbeResult("n1", "host", {}).controller_side


def test_output_parsing() -> None:
    assert parse_probe_output('noise\n{"probe": "host", "data": {"a": 1}}\n', "host") == {"a": 1}
    for bad, message in [("", "the probe printed nothing"),
                         ("{oops", "the probe's last line is not JSON"),
                         ('{"probe": "host"}', "the probe's JSON has no 'data' object"),
                         (json.dumps({"probe": "storage", "data": {}}),
                          "expected output of probe 'host', got 'storage'")]:
        with pytest.raises(ValueError, match=message):
            parse_probe_output(bad, "host")


def _output(data: str) -> str:
    return f'{{"probe": "host", "data": {data}}}'


@pytest.mark.parametrize(("printed", "message"), [
    (_output('{"a": NaN}'), "the probe's JSON has NaN: not a finite number"),
    (_output('{"a": -Infinity}'), "the probe's JSON has -Infinity: not a finite number"),
    (_output('{"a": 1e999}'), "the probe's JSON has 1e999: not a finite number"),
    ('["probe", "host"]', "the probe's JSON has no 'data' object"),
    (_output('[1, 2]'), "the probe's JSON has no 'data' object"),
    (_output('"data"'), "the probe's JSON has no 'data' object"),
    ("[" * 100_000 + "]" * 100_000, "the probe's JSON is nested too deeply"),
    (_output("[" * 100_000 + "]" * 100_000), "the probe's JSON is nested too deeply"),
    (_output('{"a": ' + "9" * 5000 + "}"), "Exceeds the limit .* for integer string"),
])
def test_hostile_output_is_refused_saying_what_is_wrong(printed: str, message: str) -> None:
    """A node's output is the other party's: a number that is not finite, a document that
    is no object, nesting beyond the interpreter's stack, an integer of more digits than
    Python converts: each a ValueError (the node's bad output), never a payload."""
    with pytest.raises(ValueError, match=message):
        parse_probe_output(f"noise\n{printed}\n", "host")


def test_only_the_last_line_is_the_probes_answer() -> None:
    """What a node printed before its last line (a library's warning) is not read, even
    when it is JSON of the same probe."""
    said = _output('{"a": 1}') + "\n" + _output('{"a": 2}')
    assert parse_probe_output(said, "host") == {"a": 2}
    with pytest.raises(ValueError, match="not JSON"):
        parse_probe_output(_output('{"a": 1}') + "\ntrailing words\n", "host")


class Cores(TypedDict):
    cores: int


def _cores(payload: Mapping[str, object]) -> Cores:
    """A reader: the payload's cores, refused unless a positive integer."""
    cores = payload.get("cores")
    if not isinstance(cores, int) or isinstance(cores, bool) or cores < 1:
        raise ValueError(f"cores = {cores!r}: not a positive integer")
    return {"cores": cores}


def test_a_payload_is_what_its_reader_makes_of_it_and_its_refusal_is_raised() -> None:
    """payload_as returns the reader's record (only what it checked), raises the reader's
    ValueError as it is, and ProbeFailed (the result's own line) when there is no payload:
    an error beside data is no payload either."""
    assert ProbeResult("n1", "host", {"cores": 8, "x": 1}).payload_as(_cores) == {"cores": 8}
    for said in ("8", True, 0, None):
        with pytest.raises(ValueError, match=f"cores = {said!r}: not a positive integer"):
            ProbeResult("n1", "host", {"cores": said}).payload_as(_cores)
    for failed in (ProbeResult("n1", "host", None, ErrorKind.TIMEOUT, "after 60 s"),
                   ProbeResult("n1", "host", {"cores": 8}, ErrorKind.CRASHED, exit_code=3)):
        with pytest.raises(ProbeFailed) as info:
            failed.payload_as(_cores)
        assert str(info.value) == failed.describe()
