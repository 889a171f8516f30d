"""launchers/capture.py: a stream read within a bound, against what a node may send: more
than the bound (in one chunk or many), bytes that are no UTF-8, a character cut at the
bound, and a writer that goes on long after it (it must never block on a full pipe)."""

from __future__ import annotations

import io
import os
import threading

from pytest_cluster.launchers.capture import CHUNK, Capture


def read(data: bytes, limit: int) -> tuple[Capture, list[None], io.BytesIO]:
    """`data` read whole through a Capture of `limit`; the calls of its `over`."""
    calls: list[None] = []
    pipe = io.BytesIO(data)
    capture = Capture("stdout", pipe, limit, lambda: calls.append(None)).start()
    capture.join(30)  # a hang guard, not a timing
    return capture, calls, pipe


def size(n: float) -> str:
    return f"{int(n)} B"


def test_a_stream_within_the_limit_is_kept_whole_and_closed() -> None:
    data = b'{"probe": "host"}\n'
    capture, calls, pipe = read(data, len(data))  # exactly the limit: not over it
    assert (capture.text, capture.seen, capture.over, calls) == (data.decode(), len(data),
                                                                 False, [])
    assert capture.overflow(size) == ""
    assert pipe.closed


def test_past_the_limit_it_is_stopped_once_and_the_rest_counted_not_kept() -> None:
    limit = CHUNK + CHUNK // 2  # crossed in the second chunk of several
    data = bytes(range(48, 58)) * (4 * CHUNK // 10)
    capture, calls, pipe = read(data, limit)
    assert calls == [None]  # once, whatever came after
    assert capture.over and capture.seen == len(data)
    assert capture.text == data[:limit].decode()
    assert capture.overflow(size) == (f"stdout: more than {limit} B ({len(data)} B seen "
                                      "before it was stopped)")
    assert pipe.closed


def test_a_first_chunk_past_the_limit_is_cut_at_it() -> None:
    capture, calls, _ = read(b"x" * 100, 10)
    assert (capture.text, capture.seen, calls) == ("x" * 10, 100, [None])


def test_bytes_that_are_no_utf8_are_replaced_and_a_character_cut_at_the_limit_too() -> None:
    hostile = b"ok \xff\xfe\x00 \xc3"  # invalid bytes, a NUL, a character begun
    capture, _, _ = read(hostile, len(hostile))
    assert capture.text == "ok \ufffd\ufffd\x00 \ufffd"
    euro = "\u20ac".encode()  # three bytes; the limit falls after the first two
    capture, calls, _ = read(b"a" + euro, 3)
    assert (capture.text, calls) == ("a\ufffd", [None])


def test_a_writer_far_past_the_limit_is_never_blocked_on_a_full_pipe() -> None:
    """The reader goes on draining after the limit: a writer of many pipe buffers' worth
    finishes (a capture that stopped reading would leave it blocked in its write)."""
    read_end, write_end = os.pipe()
    total = 64 * CHUNK
    calls: list[None] = []

    def write() -> None:
        with os.fdopen(write_end, "wb") as out:
            out.write(b"y" * total)

    writer = threading.Thread(target=write, daemon=True)
    with os.fdopen(read_end, "rb") as pipe:
        capture = Capture("stderr", pipe, CHUNK, lambda: calls.append(None)).start()
        writer.start()
        writer.join(30)  # a hang guard, not a timing
        assert not writer.is_alive(), "the writer is blocked on a full pipe"
        capture.join(30)
    assert (capture.seen, len(capture.text), calls) == (total, CHUNK, [None])
    assert capture.overflow(size).startswith(f"stderr: more than {CHUNK} B ({total} B seen")
