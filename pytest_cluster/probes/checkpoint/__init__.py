"""A checkpoint burst on a shared filesystem, one rank of a distributed job (job_node
starts `--ranks-per-node` ranks on every node: one writer per GPU, as a training job's
ranks each write their shard). Standard library only; no torch. Shipped as one program
(probes/_shipping.py) of these modules: blocks (the data and its digest), files (the
burst's files), burst (a rank's write and read), payload (its types); __main__ runs it.

`--phase write`: every rank waits for `--start-at` (the controller's UNIX time, so that
ranks launched over many connections start together), then writes `--size` bytes to
PATH/.pytest-cluster-ckpt-<token>-<rank> in blocks of `--block` bytes and fsyncs it. Each
block is random data that differs from every other block at every offset (one random
block per writer, turned by an offset of its own per block) with a 16-byte stamp (magic,
writer rank, block, page) at the start of every 4 KiB page: no dedup, compression or
stale copy can pass for it.

`--phase read`: every rank reads the file of the rank `--ranks-per-node` after it (the
same GPU of the next node: a file another node wrote, so this node's page cache never
held it; on a one-node job its own, its cached pages dropped first), checks every block
against what its writer wrote (`--size` bytes: a short file's missing blocks are bad
ones), then removes it. `--write-nodes 0,1,3`: the write job's node of each node of this
job, when some node's writers failed (its files are not read; the next node is the next
that wrote).

`--phase remove`: removes every file of the token (the controller's, however the burst
ended).

The data is made (written) or checked (read) in a thread beside the one that writes or
reads, a block or two apart, so that neither waits for the other while the filesystem is
the slower. `seconds` is the I/O's whole span: from the first write() to the end of the
fsync(), or from the first read to the last; never only the calls themselves, as the
kernel goes on reading ahead or writing back between them. `wait_s` is how long of it the
I/O waited for the data to be made or checked (the CPU, not the filesystem, was then the
limit: the rate is a lower bound). Each rank prints one JSON line: bytes, seconds,
started_at and ended_at (UNIX time of the span's start and end), late_s (how late after
--start-at it started), wait_s, cpu_s (this process's CPU time, user + system), and for a
read the blocks that were not as written.

Nothing is left behind: the token is `<expires>-<12 hex digits>`, the time after which no
phase of this burst can still run. A write stopped by SIGTERM, SIGINT or SIGHUP removes
its partial file (job_node gives a rank SIGTERM before SIGKILL); the reader removes what
it read; the controller removes the rest; what a SIGKILL leaves is removed by a later
burst's write after its expiry, and said before it (`leftovers`: path, bytes, removed,
why).
"""

from __future__ import annotations

from .blocks import base_block, block, expected_digest, sample_digest, samples
from .files import PREFIX, file_of, writer_of
from .payload import RankData

__all__ = ["PREFIX", "RankData", "base_block", "block", "expected_digest", "file_of",
           "sample_digest", "samples", "writer_of"]
