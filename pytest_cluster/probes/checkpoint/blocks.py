"""The data a writer writes, as its reader checks it: each block its writer's random base
turned by an offset of its own, stamped on every page; and the read-back's digest of the
pages the controller's challenge picks (the controller makes it from two pages alone)."""

from __future__ import annotations

import re
import struct

PAGE = 4096
MAGIC = b"PCKP"
#: How many pages of a file its reader's digest covers (samples).
SAMPLES = 16
CHALLENGE = re.compile(r"^[0-9a-f]{16,64}$")


def base_block(token: str, rank: int, size: int) -> bytes:
    """The writer's random block, the same on the node that checks it."""
    import hashlib  # noqa: PLC0415
    return hashlib.shake_256(f"{token}/{rank}".encode()).digest(size)


def _turn(index: int, size: int) -> int:
    """How far block `index`'s data is turned in its writer's base of `size` bytes."""
    return (index * 7919 * 64 + 4099) % size if size > 1 else 0


def block(base: bytes, rank: int, index: int) -> bytearray:
    """Block `index` of writer `rank`: the base turned by an offset of its own, stamped
    at the start of every page."""
    size = len(base)
    turn = _turn(index, size)
    data = bytearray(base[turn:] + base[:turn])
    for page in range(0, size // PAGE):
        struct.pack_into("<4sIII", data, page * PAGE, MAGIC, rank, index, page)
    return data


def samples(challenge: str, writer: int, size: int, block_size: int) -> list[tuple[int, int]]:
    """The (block, page) pairs of `writer`'s file the read-back's digest covers: up to
    SAMPLES blocks the controller's `challenge` picks (chosen after the write: no writer
    knows them), in each the page whose data starts in the first page of the writer's
    base (so that the controller makes it from the base's first two pages alone); only
    pages the file holds whole."""
    import hashlib  # noqa: PLC0415
    blocks, pages = (size + block_size - 1) // block_size, block_size // PAGE
    found = set()
    for k in range(SAMPLES if blocks else 0):
        pick = hashlib.blake2b(f"{challenge}/{writer}/{k}".encode(), digest_size=8).digest()
        index = int.from_bytes(pick, "little") % blocks
        page = -(-(block_size - _turn(index, block_size)) // PAGE) % pages
        if index * block_size + (page + 1) * PAGE <= size:
            found.add((index, page))
    return sorted(found)


def page_of(head: bytes, block_size: int, writer: int, index: int, page: int) -> bytes:
    """Page `page` of block `index` of `writer`'s file, as written, from the first
    min(block_size, 2 pages) bytes of its base (`head`): the pages `samples` picks."""
    offset = (_turn(index, block_size) + page * PAGE) % block_size
    data = bytearray((head * 2 if len(head) == block_size else head)[offset:offset + PAGE])
    struct.pack_into("<4sIII", data, 0, MAGIC, writer, index, page)
    return bytes(data)


def sample_digest(challenge: str, size: int,
                  pages: list[tuple[int, int, bytes]]) -> str:
    """The read-back's digest: the bytes read, then each sampled (block, page) and its
    bytes as read, keyed by the controller's challenge (BLAKE2b, 128 bits, hex)."""
    import hashlib  # noqa: PLC0415
    digest = hashlib.blake2b(key=challenge.encode()[:64], digest_size=16)
    digest.update(size.to_bytes(8, "little"))
    for index, page, data in pages:
        digest.update(struct.pack("<QI", index, page))
        digest.update(data)
    return digest.hexdigest()


def expected_digest(token: str, challenge: str, writer: int, size: int,
                    block_size: int) -> str:
    """The digest an honest reader of `writer`'s whole file reports (the controller's
    side: two pages of the writer's base made, not its file)."""
    head = base_block(token, writer, min(block_size, 2 * PAGE))  # SHAKE: a prefix
    return sample_digest(challenge, size, [
        (index, page, page_of(head, block_size, writer, index, page))
        for index, page in samples(challenge, writer, size, block_size)])
