"""A checkpoint block: random data, other at every page and in every block, and the digest
of the pages a challenge picks, made on the controller as the reader makes it."""

from __future__ import annotations

from pytest_cluster.probes.jobs.checkpoint import blocks as probe


def test_blocks_differ_at_every_page_and_from_each_other() -> None:
    base = probe.base_block("1-abcdefabcdef", 3, 64 * 1024)
    first, second = probe.block(base, 3, 0), probe.block(base, 3, 1)
    pages = [bytes(first[at:at + 4096]) for at in range(0, len(first), 4096)]
    assert len(set(pages)) == len(pages)
    assert first[16:4096] != second[16:4096]  # turned, not only stamped
    assert probe.block(probe.base_block("1-abcdefabcdef", 4, 64 * 1024), 4, 0) != first


def test_the_read_back_digest_is_the_controllers_to_check() -> None:
    """A reader's digest covers pages a challenge picks, made on the controller from two
    pages of the writer's base: equal to what reading the whole file gives, and another
    challenge, writer or size gives another digest."""
    tag, size, block = "4000000000-0123456789ab", 3 * 2**20 + 5000, 2**20
    base = probe.base_block(tag, 5, block)
    whole = b"".join(bytes(probe.block(base, 5, i)) for i in range(4))[:size]
    picked = probe.samples("ab" * 16, 5, size, block)
    assert picked
    read = probe.sample_digest("ab" * 16, size, [
        (i, p, whole[i * block + p * 4096:i * block + (p + 1) * 4096]) for i, p in picked])
    assert read == probe.expected_digest(tag, "ab" * 16, 5, size, block)
    assert len({read, probe.expected_digest(tag, "cd" * 16, 5, size, block),
                probe.expected_digest(tag, "ab" * 16, 6, size, block),
                probe.expected_digest(tag, "ab" * 16, 5, size - 1, block)}) == 4

